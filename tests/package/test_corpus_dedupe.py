"""pysimhash_sql.corpus_dedupe: the dedupe of the command line as Python
functions, over records and Arrow tables (a Hugging Face dataset's data)."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest
from toolbox import brute_force_pairs, components as brute_force_components, flip_random
from toolbox.corpus_records import corpus, expected_kept

from pysimhash_sql import corpus_dedupe, hashing
from pysimhash_sql.corpus_dedupe import (
    dedupe_records, dedupe_table, dedupe_table_indices, find_clusters, fingerprint_batch, fingerprint_stream)

pytestmark = pytest.mark.major_independent


@pytest.mark.parametrize("keep", ["first", "longest", "date", "score"])
def test_records_keep_what_brute_force_keeps(keep: str) -> None:
    records = corpus()
    assert dedupe_records(records, keep=keep, jobs=2) == expected_kept(records, 3, keep)
    assert dedupe_records(iter(records), keep=keep, jobs=1) == expected_kept(records, 3, keep)  # a generator


def test_plain_strings_and_other_distances() -> None:
    texts = [r["text"] for r in corpus()]
    for distance in (0, 6):
        assert dedupe_records(texts, distance=distance) == expected_kept(corpus(), distance)
    assert dedupe_records([]) == []


class HuggingFaceData:
    """What a Hugging Face dataset's ``dataset.data`` is: a wrapper whose ``table`` is the Arrow table."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table


def test_arrow_tables_and_dataset_data() -> None:
    records = corpus()
    table = pa.Table.from_pylist(records)
    kept = expected_kept(records, 3, "date")
    assert dedupe_table_indices(table, keep="date") == kept
    assert dedupe_table_indices(HuggingFaceData(table), keep="date") == kept
    assert dedupe_table(table, keep="date").equals(table.take(kept))
    with pytest.raises(ValueError, match="no column 'body'"):
        dedupe_table_indices(table, text_column="body")


def test_fingerprints_are_the_hashing_module_s(monkeypatch) -> None:
    texts = [r["text"] for r in corpus(originals=10)]
    expected = [hashing.fingerprint(t, version=2) for t in texts]
    assert fingerprint_batch(texts, version=2).tolist() == expected
    batches = [(texts[:7], "a"), (texts[7:], "b")]
    # the compiled core's threads; the pure-Python core's worker processes
    for implementation in filter(None, (hashing.COMPILED, hashing.PURE_PYTHON)):
        monkeypatch.setattr(hashing, "_IMPLEMENTATION", implementation)
        out = list(fingerprint_stream(batches, version=1, jobs=2))
        assert [extra for _, _, extra in out] == ["a", "b"]
        assert np.concatenate([fps for fps, _, _ in out]).tolist() == [hashing.simhash(t) for t in texts]


@pytest.mark.parametrize("slice_rows, pair_batch, chunk_rows", [(65536, 1 << 18, 1 << 20), (16, 1, 7), (50, 13, 1)])
def test_clusters_are_the_connected_components_of_the_pairs(slice_rows, pair_batch, chunk_rows) -> None:
    # the pairs joined as they come, a few at a time, and the labels flattened a chunk at a time
    rng = random.Random(5)
    fps = []
    for _ in range(60):  # chains: each copy a few bits from the one before
        fp = rng.getrandbits(64)
        for _ in range(rng.randint(1, 5)):
            fps.append(fp)
            fp = flip_random(fp, rng.randint(1, 4), rng)
    rng.shuffle(fps)
    for k in (0, 3, 4):
        labels = find_clusters(np.array(fps, np.uint64), k, slice_rows=slice_rows, pair_batch=pair_batch,
                               chunk_rows=chunk_rows).tolist()
        pairs = brute_force_pairs(list(enumerate(fps)), k)
        expected = brute_force_components(range(len(fps)), ((a, b) for a, b, _ in pairs))
        assert labels == [expected[i] for i in range(len(fps))]


@pytest.mark.parametrize("chunk", [1, 5, 64, 1 << 20])
def test_keep_rule_in_chunks_keeps_the_best_of_each_cluster(chunk: int) -> None:
    # the highest rank of each cluster, ties to the smallest index, whatever
    # the chunks the members are taken in; count() the clusters of two or more
    rng = random.Random(chunk)
    labels = np.array([rng.choice([i] * 3 + list(range(i))) if i else 0 for i in range(300)], np.uint32)
    labels = corpus_dedupe.components(labels.size, np.arange(labels.size), labels)  # each its cluster's smallest
    rank = np.array([rng.randint(0, 4) for _ in range(labels.size)], np.int32)
    kept = corpus_dedupe.best_of_clusters(labels, corpus_dedupe.array_ranks(rank), chunk)
    best = {}
    for i, label in enumerate(labels.tolist()):
        if label not in best or rank[i] > rank[best[label]]:
            best[label] = i
    assert kept.tolist() == [best[label] for label in labels.tolist()]
    clusters = corpus_dedupe.Clusters.of(np.zeros(labels.size, np.uint64), labels, rank)
    assert clusters.count() == sum(1 for label in set(labels.tolist()) if (labels == label).sum() > 1)


def test_keep_values_are_held_as_text_and_ranked_as_they_order() -> None:
    # a keep field's values, a few bytes each: back exactly as keep_value orders them
    values = [None, 3, 2.5, "2024-01-02", "\ud800 ünï", 10**30, float("inf"), -0.0, 3.0, "", "2024-01-02", -2**63]
    held = corpus_dedupe.KeepValues()
    held.add(values[:4])
    held.add([])
    held.add(values[4:])
    assert len(held) == len(values)
    assert [held.value(i) for i in range(len(values))] == [corpus_dedupe.keep_value(v) for v in values]
    held.settle(3)  # the batches joined into runs of about 3 values, as after the reading
    assert [held.value(i) for i in range(len(values))] == [corpus_dedupe.keep_value(v) for v in values]
    assert len(held.texts) == 2  # whole batches: the first 4 values, then the empty batch and 8
    rows = np.array([10, 1, 8, 0, 3])  # "2024-01-02" > 3 == 3.0 > None
    assert held.ranks(rows).tolist() == [2, 1, 1, 0, 2]
    with pytest.raises(ValueError, match="number or a string, not list"):
        held.add([[1]])


def test_nan_keep_values_count_as_missing_whatever_the_order() -> None:
    # JSON Lines may hold NaN: it orders against nothing, so it counts as missing (lowest),
    # and the document kept does not depend on the order NaNs are met or hashed in
    text = "The quick brown fox jumps over the lazy dog, again and again and again, all day long."
    records = [{"text": text, "score": float("nan")}, {"text": text + "!", "score": 1.5},
               {"text": text + "?", "score": float("nan")}, {"text": text + ".", "score": None}]
    assert corpus_dedupe.keep_value(float("nan")) == corpus_dedupe.keep_value(None)
    assert dedupe_records(records, keep="score", jobs=1) == [1]
    nans = [{"text": text + "!" * i, "score": float("nan")} for i in range(4)]
    assert all(dedupe_records(nans, keep="score", jobs=1) == [0] for _ in range(5))  # ties: the first
