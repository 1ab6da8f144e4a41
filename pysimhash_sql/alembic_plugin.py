"""The ``alembic.plugins`` entry point (name ``pysimhash_sql``).

Alembic loads entry-point plugins while it is still importing itself, so this
module imports nothing from Alembic at load time: the comparators it
registers import ``pysimhash_sql.alembic`` when autogenerate first calls them.
Enable them in env.py with ``autogenerate_plugins=["alembic.autogenerate.*",
"pysimhash_sql"]``.
"""

from __future__ import annotations


def compare_extension(*args):
    from .alembic import compare_extension

    return compare_extension(*args)


def compare_indexes(*args):
    from .alembic import compare_indexes

    return compare_indexes(*args)


def compare_column_types(*args):
    from .alembic import compare_column_types

    return compare_column_types(*args)


def compare_refingerprint_columns(*args):
    from .alembic import compare_refingerprint_columns

    return compare_refingerprint_columns(*args)


def setup(plugin) -> None:
    from alembic.util import DispatchPriority  # initialised before plugins load

    plugin.add_autogenerate_comparator(
        compare_extension, "autogenerate", qualifier="postgresql", priority=DispatchPriority.LAST
    )
    plugin.add_autogenerate_comparator(
        compare_indexes, "table", "simhash_indexes", qualifier="postgresql", priority=DispatchPriority.LAST
    )
    plugin.add_autogenerate_comparator(
        compare_column_types, "table", "simhash_column_types", qualifier="postgresql", priority=DispatchPriority.LAST
    )
    plugin.add_autogenerate_comparator(
        compare_refingerprint_columns, "schema", "simhash_refingerprint_columns", qualifier="postgresql",
        priority=DispatchPriority.LAST,
    )
