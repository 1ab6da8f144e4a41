"""Near-duplicate work over querysets: ``near_duplicates`` (one fingerprint,
optionally scoped), ``find_all`` / ``clusters`` (every pair, every cluster of
a queryset's rows) and ``insert_unless_near_duplicate`` (lock, check, insert:
docs/crawling.md), each with an async twin (``a…``) for async views.

``find_all`` and ``clusters`` run the SQL functions ``simhash_find_all`` /
``simhash_clusters``, which take their rows as SQL text: the queryset is
compiled by Django, its parameters rendered into the text by the driver's own
quoting (``connection.ops.compose_sql``: psycopg's or psycopg2's ``mogrify``,
no string formatting here), and the text is then sent as a bound parameter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.db import connections, router, transaction
from django.db.models import Model, QuerySet
from django.db.models.sql import Query

from ..text_spec import tagged
from .fields import check_radius
from .functions import HammingDistance

__all__ = [
    "Stored",
    "aclusters",
    "afind_all",
    "ainsert_unless_near_duplicate",
    "clusters",
    "find_all",
    "insert_unless_near_duplicate",
    "near_duplicates",
    "query_sql",
]


def near_duplicates(queryset: QuerySet, fingerprint: str, value: Any, max_distance: int,
                    scope: dict[str, Any] | None = None) -> QuerySet:
    """The rows of ``queryset`` within ``max_distance`` bits of ``value``,
    annotated with ``distance``, closest first.  ``scope``: equalities on the
    scope columns (``{"domain": "example.org"}``), the per-site check that a
    ``SimhashMihIndex(fields=["domain", "fp"])`` answers reading only the
    scope's rows."""
    return (queryset.filter(**(scope or {}), **{f"{fingerprint}__hamming_within": (value, max_distance)})
            .annotate(distance=HammingDistance(fingerprint, value)).order_by("distance"))


def query_sql(queryset: QuerySet, fingerprint: str) -> str:
    """The SQL text of ``queryset``'s (pk, fingerprint) rows, its parameters
    rendered by the driver's quoting: what simhash_find_all reads."""
    rows = queryset.values_list("pk", fingerprint)
    connection = connections[rows.db]
    sql, params = rows.query.get_compiler(using=rows.db).as_sql()
    return connection.ops.compose_sql(sql, params)


def _run(queryset: QuerySet, sql: str, params: list[Any]) -> list[tuple]:
    with connections[queryset.db].cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _workers(workers: int | None) -> tuple[str, list[int]]:
    # Passed only when given, as pysimhash_sql.queries does (extension 1.1 has no workers parameter).
    if workers is None:
        return "", []
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise ValueError(f"workers must be an int, 0 or more, not {workers!r}")
    return ", %s::integer", [workers]


def find_all(queryset: QuerySet, fingerprint: str, max_distance: int = 3, *, blocks: int | None = None,
             workers: int | None = None) -> list[tuple[Any, Any, int]]:
    """Every pair of ``queryset``'s rows within ``max_distance`` bits, as
    (pk1, pk2, distance) with pk1 < pk2, in pk order (the pk is an integer).
    Only the queryset's rows take part: its filters, slices and joins hold."""
    extra, extra_params = _workers(workers)
    return _run(queryset, "SELECT id1, id2, distance FROM simhash_find_all(%s::text, %s::integer, %s::integer"
                f"{extra}) ORDER BY id1, id2",
                [query_sql(queryset, fingerprint), check_radius(max_distance), blocks, *extra_params])


def clusters(queryset: QuerySet, fingerprint: str, max_distance: int = 3, *, blocks: int | None = None,
             include_singletons: bool = False, workers: int | None = None) -> list[tuple[Any, Any]]:
    """The connected components of the within-``max_distance`` graph over
    ``queryset``'s rows, as (pk, cluster_id) in pk order (rows in no pair
    only with ``include_singletons``)."""
    extra, extra_params = _workers(workers)
    return _run(queryset, "SELECT id, cluster_id FROM simhash_clusters(%s::text, %s::integer, %s::integer, "
                f"%s::boolean{extra}) ORDER BY id",
                [query_sql(queryset, fingerprint), check_radius(max_distance), blocks, bool(include_singletons),
                 *extra_params])


@dataclass(frozen=True)
class Stored:
    """The outcome: the pk of the stored near-duplicate (``inserted`` False) or
    of the row just inserted (``inserted`` True)."""

    pk: Any
    inserted: bool


def _evaluate(model: type[Model], alias: str, expression: Any) -> int:
    """The value of an expression over constants (``Simhash(Value(text))``),
    computed by the server; with the text spec its output field declares."""
    query = Query(model)
    sql, params = query.get_compiler(using=alias).compile(expression.resolve_expression(query))
    with connections[alias].cursor() as cursor:
        cursor.execute(f"SELECT ({sql})::text", params)
        value = int(cursor.fetchone()[0])
    # Simhash(...)'s value carries its text spec, for the field to check
    spec = getattr(getattr(expression, "output_field", None), "text_spec", None)
    return value if spec is None else tagged(value, spec)


def insert_unless_near_duplicate(model: type[Model], values: dict[str, Any], *, fingerprint: str = "fingerprint",
                                 scope: str | None = None, max_distance: int = 3,
                                 using: str | None = None) -> Stored:
    """Creates ``model(**values)`` unless a row within ``max_distance`` bits of
    its fingerprint exists (among the rows with the same ``scope`` field
    value, if given), safe with many concurrent writers.  The fingerprint is
    any value the field takes, or an expression over constants that the
    server computes first (``Simhash(Value(text))``).  In one atomic block:
    ``simhash_lock_near(fp, k, scope)`` (held to the end of the outermost
    transaction), the check through the index, the insert.  Run it in READ
    COMMITTED (Django's default); the lock raises under REPEATABLE READ.  The
    locks are pysimhash_sql.dedupe's (same scope text), so Django and
    SQLAlchemy writers of one table exclude each other."""
    alias = using or router.db_for_write(model)
    fp = values[fingerprint]
    if hasattr(fp, "resolve_expression"):
        fp = _evaluate(model, alias, fp)
        values = {**values, fingerprint: fp}
    fp = model._meta.get_field(fingerprint).checked(fp)
    k = check_radius(max_distance)
    scope_value = None if scope is None else values[scope]
    lock_scope = None if scope_value is None else str(scope_value)
    manager = model._default_manager.db_manager(alias)
    with transaction.atomic(using=alias):
        with connections[alias].cursor() as cursor:
            cursor.execute("SELECT simhash_lock_near(%s::simhash64, %s::integer, %s::text)", [str(fp), k, lock_scope])
        near = manager.filter(**{f"{fingerprint}__hamming_within": (fp, k)})
        if scope is not None:
            near = near.filter(**{scope: scope_value})
        existing = list(near.values_list("pk", flat=True)[:1])
        if existing:
            return Stored(existing[0], False)
        return Stored(manager.create(**values).pk, True)


async def ainsert_unless_near_duplicate(model: type[Model], values: dict[str, Any], **options: Any) -> Stored:
    """``insert_unless_near_duplicate`` from async code (its transaction on one thread)."""
    return await sync_to_async(insert_unless_near_duplicate)(model, values, **options)


async def afind_all(queryset: QuerySet, fingerprint: str, max_distance: int = 3, **options: Any) -> list[tuple]:
    """``find_all`` from async code."""
    return await sync_to_async(find_all)(queryset, fingerprint, max_distance, **options)


async def aclusters(queryset: QuerySet, fingerprint: str, max_distance: int = 3, **options: Any) -> list[tuple]:
    """``clusters`` from async code."""
    return await sync_to_async(clusters)(queryset, fingerprint, max_distance, **options)
