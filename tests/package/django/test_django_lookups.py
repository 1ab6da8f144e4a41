"""fp__hamming_within: results equal brute force at k = 0..8 through each
index kind, and the plan reads the index (as SQL's hamming_within does);
the scoped check through SimhashMihIndex(fields=["domain", "fp"])."""

from __future__ import annotations

import random

import pytest
from django.db import connection
from django.db.models import Exists, F, OuterRef
from simhash_testapp.models import GinPage, Page, ScopedPage
from toolbox import MAX_FINGERPRINT, brute_force_within, distance, flip_random
from toolbox.data import planted_fingerprints

from pysimhash_sql.django import near_duplicates

pytestmark = pytest.mark.django_db

EDGES = [0, 2**63 - 1, 2**63, MAX_FINGERPRINT]
INDEX_OF = {Page: "page_fp_mih", GinPage: "ginpage_fp_gin"}


def _load(model, fps) -> list:
    """The rows' pks, in the order of fps.  A sequential scan is made to cost
    more than any index scan (the tables are small): a plan without the index
    then means the lookup's SQL is not indexable."""
    pks = [row.pk for row in model.objects.bulk_create([model(fp=fp) for fp in fps])]
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {model._meta.db_table}")
        cursor.execute("SET LOCAL enable_seqscan = off")
    return pks


@pytest.mark.parametrize("model", [Page, GinPage], ids=["simhash_mih", "gin"])
def test_lookup_equals_brute_force_through_the_index(model) -> None:
    rng = random.Random(30)
    fps = planted_fingerprints(rng, 1500) + EDGES
    pks = _load(model, fps)
    stored = [fp for fp in fps if fp is not None]
    centres = [*EDGES, *(flip_random(rng.choice(stored), rng.randint(0, 6), rng) for _ in range(6))]
    for k in range(9):
        for centre in centres:
            near = model.objects.filter(fp__hamming_within=(centre, k))
            assert sorted(near.values_list("pk", flat=True)) == sorted(pks[i] for i in brute_force_within(fps, centre, k))
        plan = model.objects.filter(fp__hamming_within=(centres[-1], k)).explain()
        assert f"Index Scan on {INDEX_OF[model]}" in plan, plan
    # exclude(): every other row, NULLs too (Django's exclude keeps them)
    assert model.objects.exclude(fp__hamming_within=(0, 8)).count() == len(fps) - sum(
        1 for fp in stored if distance(fp, 0) <= 8)


def test_scoped_check_reads_the_scoped_index() -> None:
    rng = random.Random(31)
    domains = [f"site{i}.example" for i in range(20)]
    rows = [(rng.choice(domains), fp) for fp in planted_fingerprints(rng, 1500) if fp is not None]
    rows += [(domain, fp) for domain in domains[:2] for fp in EDGES]
    pks = [row.pk for row in ScopedPage.objects.bulk_create([ScopedPage(domain=d, fp=fp) for d, fp in rows])]
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE simhash_testapp_scopedpage")
        cursor.execute("SET LOCAL enable_seqscan = off")
    (index,) = ScopedPage._meta.indexes
    for k in [0, 3, 8]:
        for domain, centre in rng.sample(rows, 5) + [(domains[0], 2**63), (domains[1], MAX_FINGERPRINT)]:
            found = near_duplicates(ScopedPage.objects.all(), "fp", centre, k, scope={"domain": domain})
            expected = sorted(((distance(fp, centre), pk) for pk, (d, fp) in zip(pks, rows)
                               if d == domain and distance(fp, centre) <= k))
            assert [(row.distance, row.pk) for row in found.order_by("distance", "pk")] == expected
        plan = near_duplicates(ScopedPage.objects.all(), "fp", centre, k, scope={"domain": domain}).explain()
        # its bitmap scan, or (ordered by HammingDistance, the operator <~>) its ordering scan, the radius a condition
        assert f"Bitmap Index Scan on {index.name}" in plan or (
            f"Index Scan using {index.name}" in plan and "Index Cond" in plan and "Order By" in plan), plan


def test_expressions_as_the_centre() -> None:
    """The new-rows-against-stored check (pysimhash_sql.queries.has_near_duplicate's
    query) as an Exists subquery with OuterRef, and F() of the row itself."""
    rng = random.Random(32)
    stored = planted_fingerprints(rng, 300)
    fresh = [flip_random(rng.choice([fp for fp in stored if fp is not None]), rng.randint(0, 6), rng)
             for _ in range(40)] + EDGES
    _load(GinPage, stored)
    pks = _load(Page, fresh)
    near = Exists(GinPage.objects.filter(fp__hamming_within=(OuterRef("fp"), 3)))
    expected = [pk for pk, fp in zip(pks, fresh) if any(s is not None and distance(s, fp) <= 3 for s in stored)]
    assert sorted(Page.objects.filter(near).values_list("pk", flat=True)) == expected
    assert Page.objects.filter(fp__hamming_within=(F("fp"), 0)).count() == len(fresh)
