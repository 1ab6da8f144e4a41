"""The two near-duplicate index kinds (docs/index.md, "Which index"), named
once for the SQLAlchemy helper, the Alembic operations and the CLI: the GIN
operator class simhash64_ops and the extension's access method simhash_mih;
and which of them is made when none is named.  Needs nothing but Python."""

from __future__ import annotations

OPCLASS = "simhash64_ops"
GIN = "gin"
MIH = "simhash_mih"
INDEX_METHODS = (GIN, MIH)

DEFAULT_METHOD = MIH
"""What simhash_index(), autogenerate and `pysimhash-sql ingest` make when no
method is named: fast at every radius and the smaller of the two."""

SCOPED_METHOD = GIN
"""What an index with scope columns is when no method is named (GIN takes
scope columns, and so does this kind): the two-column GIN index (btree_gin)
until simhash_mih takes scope columns; then this line becomes MIH."""

MIGRATION_METHOD = GIN
"""What op.create_simhash_index makes when a migration names no method: GIN,
which every migration file written before simhash_mih became the default
meant (it wrote method= only for simhash_mih).  Autogenerate writes the method
in every new file, so this never changes."""


def takes_scope(method: str) -> bool:
    """Whether an index of ``method`` can have scope columns before the fingerprint."""
    return method in (GIN, SCOPED_METHOD)


def choose_method(method: str | None, *, gin_options: bool = False, mih_options: bool = False,
                  scope: bool = False, migration: bool = False) -> str:
    """The index method to make: ``method`` if named; else the kind whose
    options were given (blocks, max_distance or fastupdate: GIN; runs:
    simhash_mih), so that code written when GIN was the default keeps its
    index; else MIGRATION_METHOD in a migration; else SCOPED_METHOD with scope
    columns, DEFAULT_METHOD without."""
    if method is not None:
        if method not in INDEX_METHODS:
            raise ValueError(f"simhash index method must be one of {', '.join(INDEX_METHODS)}, not {method!r}")
        return method
    if gin_options and mih_options:
        raise ValueError("blocks, max_distance and fastupdate are options of GIN indexes and runs of simhash_mih "
                         "ones: name the method (method='gin' or method='simhash_mih')")
    if gin_options:
        return GIN
    if mih_options:
        return MIH
    if migration:
        return MIGRATION_METHOD
    return SCOPED_METHOD if scope else DEFAULT_METHOD
