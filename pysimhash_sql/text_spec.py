"""Which text fingerprint spec version a value or a column holds
(docs/fingerprint-spec.md §7): versions are never comparable, so they are
never mixed silently.

- A fingerprint computed from text here (``hashing.simhash``, ``simhash_v2``, ``simhash_v3``,
  ``fingerprint``, ``html.simhash_html``) is a ``TextFingerprint``: an int
  that carries its ``text_spec``.  A plain int has no known version and is
  accepted everywhere, as before.
- A column declares its version (SQLAlchemy ``SimHash64(text_spec=3)``,
  Django ``SimhashField(text_spec=3)``); a value of another version bound
  to it raises ValueError naming both (``check_spec``).
- In the database the version is the column's comment, ``simhash text spec
  3`` (``comment``): written when our tools make the column (SQLAlchemy's
  CREATE TABLE, Django's migration, the CLI's ingest and refingerprint) and
  read by the CLI and SQLAlchemy's reflection (``SimHash64(text_spec=3)``).
- Two declared columns of different versions are never compared
  (``check_columns``).  A fingerprint column without it was made before versions
  were recorded: version 1 (UNDECLARED_COLUMN_SPEC).

A table that ``pysimhash-sql refingerprint`` moves holds, beside the column,
the column of the other version (``version_column_name``: the shadow column
of a move, the old column ``--keep-old`` kept), which its trigger
(REFINGERPRINT_TRIGGER) keeps in step: ``refingerprint_columns`` names them
(Alembic's autogenerate leaves them alone).

SQL itself is explicit by name: ``simhash(text)`` is version 1,
``simhash_v2(text)`` version 2, ``simhash_v3(text)`` version 3 (extension
1.4), the default of every tool (TEXT_SPEC_VERSION_LATEST).  Needs nothing but Python.
"""

from __future__ import annotations

import operator
import re

__all__ = ["COLUMN_COMMENT_SQL", "MAX_IDENTIFIER", "REFINGERPRINT_TRIGGER", "SQL_FUNCTIONS", "SQL_FUNCTIONS_SINCE",
           "SQL_SPEC_VERSIONS", "TEXT_SPEC_VERSIONS",
           "TEXT_SPEC_VERSION_LATEST", "UNDECLARED_COLUMN_SPEC", "TextFingerprint", "check_columns",
           "check_shingle_size", "check_spec", "check_version", "comment", "comment_on_column_sql",
           "missing_function_message", "refingerprint_columns", "spec_of", "spec_of_comment", "sql_function", "tagged", "version_column_name"]

# The text fingerprint's spec versions (docs/fingerprint-spec.md §3, §6, §8):
# the SQL functions simhash(text), simhash_v2(text) and simhash_v3(text), and
# the extension's SQL version that brought each (SQL_FUNCTIONS_SINCE: a
# database still at an older one is told to ALTER EXTENSION simhash UPDATE).
# New columns and every tool's default take the latest (the one home of the
# default: the CLI, hashing's callers, html, corpus_dedupe, refingerprint's
# --to, the SQLAlchemy and Django models' docs).
TEXT_SPEC_VERSIONS = (1, 2, 3)
TEXT_SPEC_VERSION_LATEST = 3
# The version of a fingerprint column with no marker: every table made before
# the marker existed holds version 1.
UNDECLARED_COLUMN_SPEC = 1
SQL_FUNCTIONS = {1: "simhash", 2: "simhash_v2", 3: "simhash_v3"}
SQL_FUNCTIONS_SINCE = {1: "1.0", 2: "1.3", 3: "1.4"}
SQL_SPEC_VERSIONS = tuple(SQL_FUNCTIONS)

_COMMENT = "simhash text spec {}"
_COMMENT_PATTERN = re.compile(r"\bsimhash text spec (\d+)\b")


def check_version(version: int, what: str = "version") -> int:
    """``version`` if it is one of TEXT_SPEC_VERSIONS, else ValueError naming ``what``."""
    if isinstance(version, bool) or not isinstance(version, int) or version not in TEXT_SPEC_VERSIONS:
        raise ValueError(f"{what}: no text fingerprint spec version {version!r} (known: "
                         f"{', '.join(map(str, TEXT_SPEC_VERSIONS))})")
    return version


def sql_function(version: int) -> str:
    """The SQL function of text spec ``version`` (SQL_FUNCTIONS)."""
    return SQL_FUNCTIONS[check_version(version)]


def missing_function_message(version: int) -> str:
    """What to tell the user of a database whose extension lacks the SQL
    function of text spec ``version`` (an extension older than
    SQL_FUNCTIONS_SINCE[version]); the caller adds its own way to choose an
    older version explicitly: a tool never fingerprints with another version
    in silence."""
    return (f"this database has no {sql_function(version)}(text), text spec version {version}: it comes with the "
            f"simhash extension {SQL_FUNCTIONS_SINCE[version]} (ALTER EXTENSION simhash UPDATE)")


class TextFingerprint(int):
    """A fingerprint computed from text under spec version ``text_spec``:
    an int in every other way (its repr too)."""

    def __new__(cls, value: int, text_spec: int) -> TextFingerprint:
        self = super().__new__(cls, operator.index(value))
        self.text_spec = check_version(text_spec, "text_spec")
        return self

    __repr__ = int.__repr__
    __str__ = int.__repr__

    def __reduce__(self):
        return TextFingerprint, (int(self), self.text_spec)


def tagged(value: int, text_spec: int) -> TextFingerprint:
    """``value`` carrying its spec version."""
    return TextFingerprint(value, text_spec)


def spec_of(value: object) -> int | None:
    """The spec version a value carries, None for a plain int (or anything else)."""
    return getattr(value, "text_spec", None) if isinstance(value, int) else None


def check_spec(value, column_spec: int | None, where: str = "this column"):
    """``value`` unless it carries a spec version other than ``column_spec``
    (None: a column of undeclared version takes anything): ValueError naming both."""
    spec = spec_of(value)
    if column_spec is not None and spec is not None and spec != column_spec:
        raise ValueError(
            f"{where} holds text spec version {column_spec} fingerprints, but this value was computed with "
            f"version {spec}: they are never comparable. Compute it with version {column_spec} "
            f"(hashing.fingerprint(text, version={column_spec})"
            f", SQL {SQL_FUNCTIONS[column_spec]}(text)), "
            "or move the column with pysimhash-sql refingerprint (docs/fingerprint-spec.md §7)")
    return value


def check_columns(mine: int | None, theirs: int | None) -> None:
    """ValueError when two columns (or expressions) that declare text spec
    versions ``mine`` and ``theirs`` are compared and the versions differ
    (None: undeclared, compared with anything).  The one check of every tool
    that compares two columns: SQLAlchemy's comparator and queries, Django's
    lookup and HammingDistance."""
    if None not in (mine, theirs) and mine != theirs:
        raise ValueError(f"a text spec version {mine} column compared with a version {theirs} one: "
                         "their fingerprints are never comparable (docs/fingerprint-spec.md §7)")


def check_shingle_size(shingle_size: int | None, version: int) -> None:
    """ValueError for a shingle size given with a version other than 1, the
    only one that has the parameter (the later versions' feature sizes are fixed)."""
    if shingle_size is not None and version != 1:
        raise ValueError(f"shingle_size: a parameter of text spec version 1, not of version {version} "
                         "(pass version=1 with it)")


def comment(version: int) -> str:
    """The column comment that records a fingerprint column's spec version."""
    return _COMMENT.format(check_version(version))


def spec_of_comment(text: str | None) -> int | None:
    """The version a column comment records, None if it records none."""
    match = _COMMENT_PATTERN.search(text or "")
    return None if match is None else int(match.group(1))


def comment_on_column_sql(table_sql: str, column_sql: str, version: int) -> str:
    """``COMMENT ON COLUMN`` recording ``version``, for a quoted table and column."""
    return f"COMMENT ON COLUMN {table_sql}.{column_sql} IS '{comment(version)}'"


# A column's comment, by table (text, as to_regclass reads it) and column name
# (DB-API parameters %s): None for no such column, or (comment,).
COLUMN_COMMENT_SQL = """SELECT col_description(attrelid, attnum) FROM pg_attribute
                        WHERE attrelid = to_regclass(%s) AND attname = %s AND attnum > 0 AND NOT attisdropped"""


# pysimhash-sql refingerprint's marks in a table (cli/refingerprint.py): the
# trigger that keeps the column of the other version in step with the text,
# and that column's name, the column's with its version (version_column_name).
REFINGERPRINT_TRIGGER = "simhash_refingerprint"
MAX_IDENTIFIER = 63  # bytes of a PostgreSQL name (NAMEDATALEN - 1)


def version_column_name(column: str, version: int) -> str:
    """``<column>_v<version>``, cut to a PostgreSQL name's length: the shadow
    column of a move to ``version``, or the column of ``version`` kept after one."""
    suffix = f"_v{version}"
    return column[:MAX_IDENTIFIER - len(suffix)] + suffix


def refingerprint_columns(columns, has_trigger: bool) -> set[str]:
    """Of a table's column names, the columns of another version that
    refingerprint keeps in step (the shadow column of a move under way, the
    old column ``--keep-old`` kept until ``--drop-kept``): named
    version_column_name(another of them, a version), in a table that has
    refingerprint's trigger (``has_trigger``); none without it."""
    if not has_trigger:
        return set()
    columns = set(columns)
    return {version_column_name(column, version) for column in columns for version in TEXT_SPEC_VERSIONS} & columns
