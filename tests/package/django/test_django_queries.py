"""find_all and clusters over exactly a queryset's rows (against brute
force), and insert_unless_near_duplicate: 8 concurrent writers store no
near-duplicate pair; the async twins."""

from __future__ import annotations

import asyncio
import random

import pytest
from asgiref.sync import sync_to_async
from django.db import connections
from django.db.models import Value
from django.db.models.signals import pre_save
from simhash_testapp.models import Page, ScopedPage
from toolbox import MAX_FINGERPRINT, brute_force_clusters, brute_force_pairs, distance, flip, flip_random, near_copies
from toolbox.workers import run_together

from pysimhash_sql import hashing
from pysimhash_sql.django import (
    HammingDistance,
    Simhash,
    aclusters,
    afind_all,
    ainsert_unless_near_duplicate,
    clusters,
    find_all,
    insert_unless_near_duplicate,
    query_sql,
)

EDGES = [0, 2**63 - 1, 2**63, MAX_FINGERPRINT]
# A domain whose quoting matters: the queryset's parameters are rendered into find_all's SQL text.
AWKWARD = "it's \\ 100% {x}"


def _pages() -> dict[str, dict[int, int]]:
    """Pages in two domains, clustered; pk -> fp per domain."""
    fps = near_copies(30, 25, 6, 3) + EDGES + [flip(v, [0]) for v in EDGES]
    rows = [Page(domain=AWKWARD if i % 3 else "other.example", fp=fp) for i, fp in enumerate(fps)]
    Page.objects.bulk_create(rows + [Page(domain=AWKWARD, fp=None)])
    by_domain: dict[str, dict[int, int]] = {AWKWARD: {}, "other.example": {}}
    for row in rows:
        by_domain[row.domain][row.pk] = row.fp
    return by_domain


@pytest.mark.django_db
def test_n_nearest_by_order_by_is_the_ordering_scan() -> None:
    """order_by(HammingDistance("fp", q))[:n] (or by its annotation) compiles
    to fp <~> q, which the model's simhash_mih index answers in order
    (EXPLAIN: Index Scan ... Order By); the distances are brute force's."""
    rng = random.Random(50)
    q = rng.getrandbits(64)
    fps = [rng.getrandbits(64) for _ in range(20000)] + [flip_random(q, flips, rng) for flips in (0, 1, 2, 4, 7)]
    Page.objects.bulk_create([Page(fp=fp) for fp in fps] + [Page(fp=None)], batch_size=5000)
    with connections["default"].cursor() as cursor:
        cursor.execute(f"ANALYZE {Page._meta.db_table}")
    expected = sorted(distance(fp, q) for fp in fps)[:10]
    for nearest in (Page.objects.order_by(HammingDistance("fp", q))[:10],
                    Page.objects.annotate(distance=HammingDistance("fp", q)).order_by("distance")[:10]):
        assert "<~>" in str(nearest.query) and "hamming_distance" not in str(nearest.query)
        plan = nearest.explain()
        assert "Index Scan using page_fp_mih" in plan and "Order By" in plan, plan
        assert [distance(page.fp, q) for page in nearest] == expected


@pytest.mark.django_db
def test_find_all_and_clusters_over_exactly_the_querysets_rows() -> None:
    by_domain = _pages()
    chosen = Page.objects.filter(domain=AWKWARD)
    assert "%s" not in query_sql(chosen, "fp")  # the domain rendered in by the driver (the results show how well)
    for k in [0, 3, 6]:
        assert find_all(chosen, "fp", k) == brute_force_pairs(by_domain[AWKWARD].items(), k)
        assert dict(clusters(chosen, "fp", k)) == brute_force_clusters(by_domain[AWKWARD], k)
    everything = {**by_domain[AWKWARD], **by_domain["other.example"]}
    assert find_all(Page.objects.all(), "fp", 4, workers=0) == brute_force_pairs(everything.items(), 4)
    with_singletons = dict(clusters(Page.objects.exclude(fp=None), "fp", 2, include_singletons=True))
    assert set(with_singletons) == set(everything)
    assert find_all(Page.objects.filter(domain="nowhere"), "fp", 3) == []
    with pytest.raises(ValueError, match="max_distance"):
        find_all(chosen, "fp", 65)
    with pytest.raises(ValueError, match="workers"):
        find_all(chosen, "fp", 3, workers=-1)


WRITERS = 8
CLUSTERS = 10
MAX_DISTANCE = 3


def _writer(seed: int, stored: list) -> None:
    """Stores its own near-copy (1 bit from the cluster's centre: two copies are
    within 2 bits) of every cluster unless one is stored, on its own connection."""
    rng = random.Random(seed)
    try:
        for cluster in range(CLUSTERS):
            centre = random.Random(cluster).getrandbits(64) | (1 << 63) * (cluster % 2)
            values = {"domain": f"site{cluster % 3}.example", "fp": flip(centre, [rng.randrange(64)])}
            stored.append(insert_unless_near_duplicate(ScopedPage, values, fingerprint="fp", scope="domain",
                                                       max_distance=MAX_DISTANCE))
    finally:
        connections.close_all()


def _crawler_work(**_kwargs) -> None:
    """A crawler's work between the check and the insert, so that writers overlap there."""
    connections["default"].cursor().execute("SELECT pg_sleep(0.01)")


@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_store_no_near_duplicate_pair() -> None:
    stored: list = []
    pre_save.connect(_crawler_work, sender=ScopedPage)
    try:
        errors = run_together([lambda seed=seed: _writer(seed, stored) for seed in range(WRITERS)])
    finally:
        pre_save.disconnect(_crawler_work, sender=ScopedPage)
    assert errors == []
    rows = list(ScopedPage.objects.values_list("pk", "domain", "fp"))
    assert len(rows) == CLUSTERS
    assert not [(a, b) for a in rows for b in rows if a[0] < b[0] and a[1] == b[1] and distance(a[2], b[2]) <= 3]
    assert sum(outcome.inserted for outcome in stored) == CLUSTERS and len(stored) == WRITERS * CLUSTERS
    assert {outcome.pk for outcome in stored} == {pk for pk, _, _ in rows}


@pytest.mark.django_db(transaction=True)
def test_async_twins() -> None:
    async def main():
        try:
            return await both_ways()
        finally:
            await sync_to_async(connections.close_all)()  # the connection of asgiref's thread

    async def both_ways():
        first = await ainsert_unless_near_duplicate(Page, {"fp": 2**63, "domain": "a"}, fingerprint="fp")
        again = await ainsert_unless_near_duplicate(Page, {"fp": 2**63 + 1, "domain": "a"}, fingerprint="fp")
        other = await ainsert_unless_near_duplicate(Page, {"fp": 2**63 + 1, "domain": "b"}, fingerprint="fp",
                                                    scope="domain")
        count = await Page.objects.filter(fp__hamming_within=(2**63, 1)).acount()
        pairs = await afind_all(Page.objects.all(), "fp", 1)
        groups = await aclusters(Page.objects.all(), "fp", 1)
        return first, again, other, count, pairs, groups

    first, again, other, count, pairs, groups = asyncio.run(main())
    assert first.inserted and not again.inserted and again.pk == first.pk and other.inserted
    assert count == 2 and pairs == [(first.pk, other.pk, 1)] and groups == [(first.pk, first.pk), (other.pk, first.pk)]


@pytest.mark.django_db
def test_insert_unless_near_duplicate_computes_an_expression_first() -> None:
    body = "The quick brown fox jumps over the lazy dog"
    first = insert_unless_near_duplicate(Page, {"body": body, "fp": Simhash(Value(body))}, fingerprint="fp")
    again = insert_unless_near_duplicate(Page, {"body": body + "!", "fp": Simhash(Value(body + "!"))},
                                         fingerprint="fp")
    assert first.inserted and not again.inserted and again.pk == first.pk
    assert Page.objects.get(pk=first.pk).fp == hashing.simhash(body)


@pytest.mark.django_db
@pytest.mark.parametrize("values", [{"fp": -1}, {"fp": "0xzz"}, {"fp": 2**64}], ids=repr)
def test_insert_unless_near_duplicate_names_the_field(values) -> None:
    with pytest.raises(ValueError, match=r"Page\.fp"):
        insert_unless_near_duplicate(Page, values, fingerprint="fp")
    with pytest.raises(ValueError, match="max_distance"):
        insert_unless_near_duplicate(Page, {"fp": 1}, fingerprint="fp", max_distance=-1)
