"""The two near-duplicate index kinds (docs/index.md, "Which index"), named
once for the SQLAlchemy helper, the Alembic operations and the CLI: the GIN
operator class simhash64_ops and the extension's access method simhash_mih;
which of them is made when none is named; their options as SQL (for the
Django indexes too).  Needs nothing but Python."""

from __future__ import annotations

OPCLASS = "simhash64_ops"
GIN = "gin"
MIH = "simhash_mih"
INDEX_METHODS = (GIN, MIH)

DEFAULT_METHOD = MIH
"""What simhash_index(), autogenerate and `pysimhash-sql ingest` make when no
method is named: fast at every radius and the smaller of the two; with scope
columns, simhash_mih (domain, fp), which reads only the scope's rows
(docs/index.md, "Scope columns")."""

MIGRATION_METHOD = GIN
"""What op.create_simhash_index makes when a migration names no method: GIN,
which every migration file written before simhash_mih became the default
meant (it wrote method= only for simhash_mih).  Autogenerate writes the method
in every new file, so this never changes."""


def choose_method(method: str | None, *, gin_options: bool = False, mih_options: bool = False,
                  migration: bool = False) -> str:
    """The index method to make: ``method`` if named; else the kind whose
    options were given (blocks, max_distance or fastupdate: GIN; runs:
    simhash_mih), so that code written when GIN was the default keeps its
    index; else MIGRATION_METHOD in a migration; else DEFAULT_METHOD (scope
    columns or not)."""
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
    return DEFAULT_METHOD


def index_params(**params: int | None) -> dict[str, int]:
    """The options given (not None), each checked to be a non-negative int."""
    for name, value in params.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ValueError(f"simhash index parameter {name} must be a non-negative int, not {value!r}")
    return {name: value for name, value in params.items() if value is not None}


def opclass_clause(params: dict[str, int]) -> str:
    """``simhash64_ops (blocks = 6, max_distance = 3)``, parameters being ints."""
    if not params:
        return OPCLASS
    return f"{OPCLASS} ({', '.join(f'{k} = {int(v)}' for k, v in params.items())})"
