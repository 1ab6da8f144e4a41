"""Deduplicate a corpus: which documents to keep, one per cluster of near-duplicates.

The job of ``pysimhash-sql dedupe`` (pysimhash_sql/cli/dedupe.py) as Python
functions, over an iterable of records (dicts, or plain strings) or over an
Arrow table (pyarrow, the ``parquet`` extra; a Hugging Face dataset's
``dataset.data``)::

    from datasets import load_dataset
    from pysimhash_sql.corpus_dedupe import dedupe_table_indices

    dataset = load_dataset("json", data_files="corpus.jsonl", split="train")
    kept = dedupe_table_indices(dataset.data, text_column="text", distance=3)
    dataset = dataset.select(kept)          # one document of each cluster, in input order

    from pysimhash_sql.corpus_dedupe import dedupe_records
    kept = dedupe_records([{"text": "a b c"}, {"text": "a b c"}])   # [0]

How: every text is fingerprinted (text spec version 3 by default,
TEXT_SPEC_VERSION_LATEST, as SQL's simhash_v3(text); on every core:
``fingerprint_batch``); every pair of fingerprints within ``distance`` bits
is found (the package's numpy find_all, _find_all.pair_batches, its search
in threads); the pairs link documents into clusters (connected components: Forest, joined as the pairs come); of
each cluster one document is kept, by the keep rule: ``"first"`` (the first
in input order), ``"longest"`` (the most characters) or a field's name (the
highest value of that field: a date in ISO 8601, a score; documents without
it count as lowest), ties going to the first in input order.  The result
depends only on the input and the arguments: the same input gives the same
kept documents.

Memory, a document's bytes (positions are uint32 up to 2**32 documents,
int64 past that: _find_all.index_dtype).  Held between the readings: its
fingerprint (8); ``"longest"``: its length (4); a field: its value (a
number 8, a string its UTF-8) and 5 (KeepValues).  The search adds its
forest's parent (4, which becomes the cluster labels) and one block's
sorted order (4, one group of tables at a time, whatever the threads); the
pairs are never all held (PAIR_BATCH at a time) and every other temporary
is a slice's or a chunk's.  The keep rule adds the kept document of each
(4, ``"first"``: the labels themselves) and a flag (1).  So 16 bytes a
document at the search ("longest" 20), 13 at the end ("longest" 21), plus
the fixed part (the interpreter, a few chunks' temporaries):
bench_dedupe.py measured 19 bytes a document resident at the peak at 10M
("longest" 25), 16 at 100M: 1.5 GiB ("longest" 24: 2.2 GiB; docs/cli.md,
"dedupe").
"""

from __future__ import annotations

import math
import struct
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, TypeVar

import numpy as np

from . import hashing
from ._find_all import SLICE_ROWS, block_masks, default_blocks, index_dtype, pair_batches, popcount
from .text_spec import TEXT_SPEC_VERSION_LATEST, check_version

__all__ = ["KEEP_RULES", "DEFAULT_DISTANCE", "Clusters", "dedupe_records", "dedupe_table",
           "dedupe_table_indices", "fingerprint_batch", "fingerprint_stream", "find_clusters", "Collector"]

DEFAULT_DISTANCE = 3
KEEP_RULES = ("first", "longest")  # or the name of a field
BATCH_DOCUMENTS = 512  # texts fingerprinted in one call (a worker process's task)
T = TypeVar("T")


# -- fingerprints -------------------------------------------------------------------


def fingerprint_batch(texts: Sequence[str], *, version: int, jobs: int | None = None) -> np.ndarray:
    """The fingerprints of texts (uint64) on ``jobs`` cores (hashing.fingerprints)."""
    return np.asarray(hashing.fingerprints(texts, version=version, jobs=jobs), np.uint64)


def fingerprint_stream(batches: Iterable[tuple[Sequence[str], T]], *, version: int,
                       jobs: int | None = None) -> Iterator[tuple[np.ndarray, Sequence[str], T]]:
    """(fingerprints, texts, extra) of each (texts, extra) batch, in order, on
    ``jobs`` cores (None: all) while the next batches are read
    (hashing.fingerprint_batches: the compiled core's threads, else worker
    processes)."""
    pending: deque = deque()

    def texts() -> Iterator[Sequence[str]]:
        for batch_texts, extra in batches:
            pending.append((batch_texts, extra))
            yield batch_texts

    for fps in hashing.fingerprint_batches(texts(), version=version, jobs=jobs):
        batch_texts, extra = pending.popleft()
        yield np.asarray(fps, np.uint64), batch_texts, extra


# -- what is collected per document --------------------------------------------------


def check_keep(keep: str) -> str:
    if not isinstance(keep, str) or not keep:
        raise ValueError(f"keep must be 'first', 'longest' or a field's name, not {keep!r}")
    return keep


def keep_value(value: Any) -> tuple:
    """A field's value as the keep rule orders it: missing (None) lowest, then
    numbers, then strings (an ISO 8601 date orders as its string); NaN (which
    JSON Lines may hold) counts as missing, as it orders against nothing;
    ValueError for any other kind (a list, an object)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return (0, 0)
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"a keep field's value must be a number or a string, not {type(value).__name__}")
    return (1, value) if not isinstance(value, str) else (2, value)


INT, FLOAT = struct.Struct("<q"), struct.Struct("<d")  # KeepValues's numbers
SETTLED_VALUES = 1 << 16
"""A keep field's values KeepValues.settle joins into one bytes object."""


class KeepValues:
    """A keep field's values in input order, held as bytes: a batch's values
    in one bytes object (each a kind byte, then 0 missing, 1 an int64, 2 a
    float64, 3 a string in UTF-8, 4 a larger int's digits) and where each
    ends (uint32), so a document costs its value (a number 8 bytes, a string
    its UTF-8) and 5 bytes, not a Python object.
    ``ranks`` gives the standing of some documents' values among themselves:
    the keep rule compares only a cluster's members."""

    def __init__(self) -> None:
        self.texts: list[bytes] = []
        self.ends: list[np.ndarray] = []
        self.starts = [0]  # the first document of each batch, and the count after the last

    def add(self, values: Sequence[Any]) -> None:
        encoded = []
        for value in values:
            kind = keep_value(value)[0]  # ValueError for a list, an object, a bool
            if kind == 0:
                encoded.append(b"\x00")
            elif kind == 2:
                encoded.append(b"\x03" + value.encode("utf-8", "surrogatepass"))
            elif isinstance(value, float):
                encoded.append(b"\x02" + FLOAT.pack(value))
            elif -(1 << 63) <= value < 1 << 63:
                encoded.append(b"\x01" + INT.pack(value))
            else:
                encoded.append(b"\x04" + repr(value).encode())
        self.texts.append(b"".join(encoded))
        self.ends.append(np.cumsum(np.fromiter(map(len, encoded), np.int64, len(encoded))).astype(np.uint32))
        self.starts.append(self.starts[-1] + len(encoded))

    def __len__(self) -> int:
        return self.starts[-1]

    def settle(self, documents: int = SETTLED_VALUES) -> None:
        """The batches joined into runs of about ``documents`` values (once
        read: the many small objects of the reading let go, their memory
        given back by release_free_memory rather than left in holes)."""
        texts: list[bytes] = []
        ends: list[np.ndarray] = []
        starts = [0]
        first = 0
        for last in range(1, len(self.texts) + 1):
            if last < len(self.texts) and self.starts[last] - self.starts[first] < documents:
                continue
            offsets = np.cumsum([0] + [len(t) for t in self.texts[first:last - 1]], dtype=np.int64)
            joined = [e.astype(np.int64) + o for e, o in zip(self.ends[first:last], offsets)]
            texts.append(b"".join(self.texts[first:last]))
            ends.append(np.concatenate(joined).astype(index_dtype(len(texts[-1]))))
            starts.append(self.starts[last])
            self.texts[first:last] = self.ends[first:last] = [None] * (last - first)  # a run at a time let go
            first = last
        self.texts, self.ends, self.starts = texts, ends, starts

    def value(self, i: int) -> tuple:
        """keep_value of document i's value."""
        batch = bisect_right(self.starts, i) - 1
        j = i - self.starts[batch]
        ends = self.ends[batch]
        text = self.texts[batch][int(ends[j - 1]) if j else 0:int(ends[j])]
        kind, body = text[0], text[1:]
        if kind == 0:
            return (0, 0)
        if kind == 3:
            return (2, body.decode("utf-8", "surrogatepass"))
        return (1, INT.unpack(body)[0] if kind == 1 else FLOAT.unpack(body)[0] if kind == 2 else int(body))

    def ranks(self, rows: np.ndarray) -> np.ndarray:
        """The standing of the values of documents ``rows`` among themselves (int64, higher better)."""
        values = [self.value(i) for i in rows.tolist()]
        position = {value: n for n, value in enumerate(sorted(set(values)))}
        return np.fromiter((position[v] for v in values), np.int64, len(values))


def array_ranks(rank: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """ranks of documents from an array of every document's standing."""
    return lambda rows: rank[rows].astype(np.int64)


class Collector:
    """The per-document state of a dedupe, gathered in input order a batch at a
    time: the fingerprints, and what the keep rule needs (``"longest"``: the
    lengths; a field: its values).  ``add`` each batch, then ``clusters()``."""

    def __init__(self, keep: str = "first") -> None:
        self.keep = check_keep(keep)
        self.parts: list[np.ndarray] = []
        self.lengths: list[np.ndarray] = []
        self.values = KeepValues()

    @property
    def by_field(self) -> bool:
        return self.keep not in KEEP_RULES

    def add(self, fps: np.ndarray, texts: Sequence[str], values: Sequence[Any] | None = None) -> None:
        self.parts.append(fps)
        if self.keep == "longest":
            self.lengths.append(np.fromiter(map(len, texts), np.int32, len(texts)))
        elif self.by_field:
            self.values.add(values)

    def collect(self, batches: Iterable[tuple[Sequence[str], Sequence[Any] | None]], version: int,
                jobs: int | None = None) -> Collector:
        """Every (texts, keep values) batch fingerprinted (fingerprint_stream) and added."""
        for fps, texts, values in fingerprint_stream(batches, version=check_version(version), jobs=jobs):
            self.add(fps, texts, values)
        return self

    def fingerprints(self) -> np.ndarray:
        """Every fingerprint in one array, and ``"longest"``'s lengths in one,
        a field's values settled (the batches' objects let go, their memory
        given back: release_free_memory)."""
        if len(self.parts) != 1:
            self.parts = [np.concatenate(self.parts) if self.parts else np.empty(0, np.uint64)]
            if self.keep == "longest":
                self.lengths = [np.concatenate(self.lengths) if self.lengths else np.empty(0, np.int32)]
            elif self.by_field:
                self.values.settle()
            release_free_memory()
        return self.parts[0]

    def rank(self) -> Callable[[np.ndarray], np.ndarray] | None:
        """The standing under the keep rule (higher kept) of some documents
        among themselves, as a function of their positions; None for "first"."""
        if self.keep == "longest":
            self.fingerprints()
            return array_ranks(self.lengths[0])
        return self.values.ranks if self.by_field else None

    def clusters(self, distance: int = DEFAULT_DISTANCE, threads: int | None = None,
                 labels: np.ndarray | None = None) -> Clusters:
        """The clusters and the kept documents; ``labels``: clusters found
        elsewhere (the database), as find_clusters gives them."""
        fps = self.fingerprints()
        if labels is None:
            labels = find_clusters(fps, distance, threads)
        return Clusters.of(fps, labels, self.rank())


# -- clusters --------------------------------------------------------------------------


PAIR_BATCH = 1 << 18
"""Pairs find_clusters gathers before it unions them (2 MiB of uint32 pairs;
the union's temporaries about 10 MiB)."""

CHUNK_ROWS = 1 << 20
"""Documents a pass over every document takes at a time (labels, the keep
rule, is_own): its temporaries are a chunk's, never an int64 a document."""


def find_clusters(fps: np.ndarray, distance: int = DEFAULT_DISTANCE, threads: int | None = None, *,
                  slice_rows: int = SLICE_ROWS, pair_batch: int = PAIR_BATCH,
                  chunk_rows: int = CHUNK_ROWS) -> np.ndarray:
    """For each document (a uint64 fingerprint), the smallest index of its
    cluster (index_dtype: uint32 up to 2**32 documents, int64 past that): the
    documents linked by pairs within ``distance`` bits (as simhash_clusters's
    cluster_id: the smallest id); a document in no pair is its own.  The
    pairs: _find_all.pair_batches, in ``threads`` threads (None: one per
    CPU), in slices of ``slice_rows``, joined as they come (``pair_batch`` at
    a time) into one forest (Forest): never all held at once."""
    if not 0 <= distance < 64:
        raise ValueError(f"distance must be between 0 and 63, not {distance!r}")
    fps = np.ascontiguousarray(fps, np.uint64)
    forest = Forest(fps.size)
    pending: list[tuple[np.ndarray, np.ndarray]] = []
    held = 0
    for a, b in pair_batches(fps, block_masks(default_blocks(distance)), distance, threads, slice_rows):
        pending.append((a, b))
        held += a.size
        if held >= pair_batch:
            forest.union(*map(np.concatenate, zip(*pending)))
            pending, held = [], 0
    if pending:
        forest.union(*map(np.concatenate, zip(*pending)))
    return forest.labels(chunk_rows)


class Forest:
    """Union-find over n nodes in one array of index_dtype (4 bytes a node
    below 2**32 nodes), in numpy: each node's parent is at most itself, so a
    tree's root is its smallest node, the component's label."""

    def __init__(self, n: int) -> None:
        self.parent = np.arange(n, dtype=index_dtype(n))

    def roots(self, x: np.ndarray) -> np.ndarray:
        r = self.parent[x]
        while True:
            up = self.parent[r]
            if np.array_equal(up, r):
                return r
            r = up

    def union(self, a: np.ndarray, b: np.ndarray) -> None:
        """Joins the trees of each edge (a[i], b[i]): each edge's larger root
        hooked onto its smaller, rounds until every edge's ends share a root;
        the ends' paths compressed on the way."""
        parent = self.parent
        while a.size:
            ra, rb = self.roots(a), self.roots(b)
            parent[a], parent[b] = ra, rb
            differ = ra != rb
            a, b, ra, rb = a[differ], b[differ], ra[differ], rb[differ]
            parent[np.maximum(ra, rb)] = np.minimum(ra, rb)  # roots hooked onto smaller nodes

    def labels(self, chunk_rows: int = CHUNK_ROWS) -> np.ndarray:
        """Each node's root, the parent array itself flattened, a chunk at a
        time in increasing order (the chunks before are flat: a parent is at
        most its node)."""
        parent = self.parent
        for start in range(0, parent.size, chunk_rows):
            part = parent[start:start + chunk_rows]
            while True:
                up = parent[part]
                if np.array_equal(up, part):
                    break
                part[...] = up
        return parent


def components(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Connected components of n nodes linked by the edges (a[i], b[i]), each
    node labelled by its component's smallest node (Forest)."""
    forest = Forest(n)
    forest.union(np.asarray(a, forest.parent.dtype), np.asarray(b, forest.parent.dtype))
    return forest.labels()


def is_own(values: np.ndarray, chunk: int = CHUNK_ROWS) -> np.ndarray:
    """values[i] == i for each i, a chunk at a time (no array of every index)."""
    out = np.empty(values.size, bool)
    for start in range(0, values.size, chunk):
        part = values[start:start + chunk]
        np.equal(part, np.arange(start, start + part.size), out=out[start:start + part.size])
    return out


def best_of_clusters(labels: np.ndarray, rank: Callable[[np.ndarray], np.ndarray],
                     chunk: int = CHUNK_ROWS) -> np.ndarray:
    """For each document, the document kept of its cluster: the highest
    ``rank`` (of given documents among themselves: Collector.rank), ties to
    the smallest index; a chunk of documents at a time
    (each chunk's members against the best found so far of their clusters),
    then each member pointed at its cluster's best: one array beside the
    labels, the rest a chunk's."""
    kept = labels.copy()
    for start in range(0, labels.size, chunk):
        part = labels[start:start + chunk]
        members = np.flatnonzero(part != np.arange(start, start + part.size)) + start  # not a cluster's first
        if not members.size:
            continue
        clusters = np.unique(labels[members])
        candidates = np.concatenate([kept[clusters], members])  # the best so far first: it has the smaller index
        of = np.concatenate([clusters, labels[members]])
        ordered = np.lexsort((candidates, -rank(candidates), of))  # by cluster, best first
        first = np.ones(ordered.size, bool)
        first[1:] = of[ordered[1:]] != of[ordered[:-1]]
        kept[clusters] = candidates[ordered[first]]
    for start in range(0, labels.size, chunk):
        part = labels[start:start + chunk]
        members = part != np.arange(start, start + part.size)
        kept[start:start + chunk][members] = kept[part[members]]
    return kept


@dataclass(frozen=True)
class Clusters:
    """A dedupe's outcome: for each document (input order) its cluster's
    label (its smallest index), the document kept of it, and whether it is
    kept itself (keep_mask: kept[i] == i)."""

    fingerprints: np.ndarray
    labels: np.ndarray
    kept: np.ndarray
    keep_mask: np.ndarray

    @classmethod
    def of(cls, fps: np.ndarray, labels: np.ndarray,
           rank: np.ndarray | Callable[[np.ndarray], np.ndarray] | None = None) -> Clusters:
        """The kept document of each cluster: the highest ``rank`` (None: the
        first, the label itself), ties to the smallest index."""
        if isinstance(rank, np.ndarray):
            rank = array_ranks(rank)
        kept = labels if rank is None else best_of_clusters(labels, rank)
        return cls(fps, labels, kept, is_own(kept))

    def __len__(self) -> int:
        return self.labels.size

    def kept_indices(self) -> np.ndarray:
        return np.flatnonzero(self.keep_mask)

    def removed(self) -> np.ndarray:
        return np.flatnonzero(~self.keep_mask)

    def count(self) -> int:
        """Clusters of two or more documents."""
        has_members = np.zeros(self.labels.size, bool)  # a byte a document, not a sort of the members
        for start in range(0, self.labels.size, CHUNK_ROWS):
            part = self.labels[start:start + CHUNK_ROWS]
            has_members[part[part != np.arange(start, start + part.size)]] = True
        return int(np.count_nonzero(has_members))

    def distance(self, i: int) -> int:
        """Bits between document i and the one kept of its cluster."""
        return int(popcount(self.fingerprints[i] ^ self.fingerprints[self.kept[i]]))


# -- memory --------------------------------------------------------------------------


def release_free_memory() -> bool:
    """Gives the free pages in the middle of glibc's heap back to the system
    (malloc_trim): the reading's many small arrays, once concatenated, leave
    holes that otherwise stay resident through the search.  False where
    there is no glibc.  (The search's temporaries are a slice's or a chunk's,
    so glibc's own mmap threshold serves it: forcing large blocks to mmap,
    as dedupe did when the search held arrays as long as the corpus, left
    the peak at 19.3 bytes a document at 10M and took 1.4 times as long.)"""
    import ctypes

    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    return bool(libc.malloc_trim(0))


# -- over records and tables ---------------------------------------------------------


def batches(items: Iterable[Any], size: int = BATCH_DOCUMENTS) -> Iterator[list[Any]]:
    items = iter(items)
    while batch := list(islice(items, size)):
        yield batch


def dedupe_records(records: Iterable[Any], *, text_field: str = "text", distance: int = DEFAULT_DISTANCE,
                   keep: str = "first", version: int = TEXT_SPEC_VERSION_LATEST, jobs: int | None = None) -> list[int]:
    """The indices (input order) of the records to keep: one of each cluster of
    near-duplicates by ``keep`` (module doc), and every record that has none.
    A record is a mapping holding its text under ``text_field`` (or a str)."""
    by_field = keep not in KEEP_RULES

    def texts_and_values(batch: list[Any]) -> tuple[list[str], list[Any] | None]:
        texts = [r if isinstance(r, str) else r[text_field] for r in batch]
        return texts, [None if isinstance(r, str) else r.get(keep) for r in batch] if by_field else None

    collector = Collector(keep).collect(map(texts_and_values, batches(records)), version, jobs)
    return collector.clusters(distance).kept_indices().tolist()


def _arrow_table(table: Any) -> Any:
    """A pyarrow Table from one, or from a Hugging Face dataset's ``data`` (its ``table``)."""
    return getattr(table, "table", table)


def dedupe_table_indices(table: Any, *, text_column: str = "text", distance: int = DEFAULT_DISTANCE,
                         keep: str = "first", version: int = TEXT_SPEC_VERSION_LATEST,
                         jobs: int | None = None) -> list[int]:
    """dedupe_records over an Arrow table's rows (a pyarrow Table, or a
    Hugging Face dataset's ``dataset.data``), read a batch of rows at a time:
    the row indices to keep (``dataset.select(indices)``)."""
    table = _arrow_table(table)
    columns = [text_column] + ([keep] if keep not in KEEP_RULES else [])
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise ValueError(f"the table has no column {missing[0]!r}")

    def texts_and_values(batch: Any) -> tuple[list[str], list[Any] | None]:
        texts = batch.column(0).to_pylist()
        if any(t is None for t in texts):
            raise ValueError(f"column {text_column!r} has a null text")
        return texts, batch.column(1).to_pylist() if len(columns) > 1 else None

    collector = Collector(keep).collect(map(texts_and_values, table.select(columns).to_batches(BATCH_DOCUMENTS)),
                                        version, jobs)
    return collector.clusters(distance).kept_indices().tolist()


def dedupe_table(table: Any, **options: Any) -> Any:
    """The Arrow table of the rows dedupe_table_indices keeps, in their order."""
    table = _arrow_table(table)
    return table.take(dedupe_table_indices(table, **options))
