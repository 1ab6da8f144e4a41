"""The compiled fingerprint core (pysimhash_sql._simhash_core, built from
pysimhash_sql/_core.c and pg_ext/src/core) against the pure-Python reference
(hashing.PURE_PYTHON): the same bits on the shared vectors and on generated
text of every script, in every SIMD copy, in threads, and on hostile input
the same value or the same exception class.  SQL's side of the comparison:
tests/extension/fingerprint/test_hashing_sql.py."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sysconfig
import sys
import threading
import time
from functools import partial

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pysimhash_sql import hashing
from toolbox import ROOT
from toolbox.implementations import (
    SIMD_LEVELS,
    assert_every_implementation_gives,
    fingerprints_in_fresh_interpreter,
    outcome,
)
from toolbox.text_vectors import load_vectors

COMPILED = hashing.COMPILED
PURE = hashing.PURE_PYTHON
pytestmark = pytest.mark.skipif(os.environ.get("PYSIMHASH_SQL_PURE_PYTHON") == "1",
                                reason="PYSIMHASH_SQL_PURE_PYTHON=1: the compiled core is off")

# Characters of many scripts and classes (tests/extension/fingerprint has the full list), NUL too.
characters = st.one_of(
    st.sampled_from(list("aAzZ09 \t\n\r.,;:!?'\"-_()\x00\x01\x7f")),
    st.characters(min_codepoint=0x80, max_codepoint=0x52F),
    st.characters(min_codepoint=0x3000, max_codepoint=0x9FFF),
    st.characters(min_codepoint=0xAC00, max_codepoint=0xD7A3),
    st.characters(codec="utf-8", exclude_categories=("Cs",)),
)
texts = st.text(characters, max_size=300)


def mixed_texts(seed: int, count: int) -> list[str]:
    """Texts of ASCII words among other scripts' characters, runs of one letter, of every length."""
    rng = random.Random(seed)
    pieces = ["中", "文", "é", "ß", "—", "。", "한", "ภา", "passwd", "a", "to", "the", " ", "  ", "\n", "-h", "x1"]
    pieces += [c * k for c in "az" for k in range(1, 21)]
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 3000))) for _ in range(count)]


def test_the_compiled_core_is_in_use() -> None:
    """The tests' environment builds it (scripts/venv.sh): every comparison then has two sides."""
    assert COMPILED is not None and hashing.IMPLEMENTATION == "c"
    assert COMPILED.core.SIMD_LEVEL == COMPILED.core.CPU_SIMD_LEVEL


@pytest.mark.parametrize("version", [2, 3])
def test_the_shared_vectors(version: int) -> None:
    for vector in load_vectors(version):
        assert_every_implementation_gives(int(vector[f"simhash_v{version}"], 16), vector["text"], version)


@settings(max_examples=500, deadline=None)
@given(texts, st.integers(1, 6))
def test_version_1_matches_the_reference(text: str, size: int) -> None:
    assert COMPILED.simhash(text, size) == PURE.simhash(text, size)


@settings(max_examples=500, deadline=None)
@given(texts)
def test_version_2_matches_the_reference(text: str) -> None:
    assert COMPILED.simhash_v2(text) == PURE.simhash_v2(text)


@settings(max_examples=500, deadline=None)
@given(texts)
def test_version_3_matches_the_reference(text: str) -> None:
    assert COMPILED.simhash_v3(text) == PURE.simhash_v3(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["12", "3.5", "x200", "the", "link", "中", "文", "٣", "①", " ", "\n", ", "]),
                max_size=300))
def test_version_3_numbers_and_repeats_match_the_reference(pieces: list[str]) -> None:
    """Texts around the ramp's shares of numbers, with features past the cap."""
    text = "".join(pieces)
    assert COMPILED.simhash_v3(text) == PURE.simhash_v3(text)


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=200), st.integers(1, 4))
def test_bytes_match_the_reference(data: bytes, size: int) -> None:
    """Bytes as they are: ill-formed UTF-8 included (version 2 reads each such sequence as a separator)."""
    assert COMPILED.simhash(data, size) == PURE.simhash(data, size)
    assert COMPILED.simhash_v2(data) == PURE.simhash_v2(data)
    assert COMPILED.simhash_v3(data) == PURE.simhash_v3(data)


def test_mixed_runs_match_the_reference() -> None:
    for text in mixed_texts(49, 20):
        assert COMPILED.simhash_v2(text) == PURE.simhash_v2(text), text[:200]
        assert COMPILED.simhash_v3(text) == PURE.simhash_v3(text), text[:200]
        assert COMPILED.simhash(text, 3) == PURE.simhash(text, 3), text[:200]


# -- version 3's cap (pg_ext/src/core/text_v3.c): a sketch, its logs, walks in order by parts ----------

def random_words(seed: int, count: int, digits: bool = False) -> list[str]:
    """Words of random letters (and numbers, with digits): nearly every n-gram of them distinct."""
    rng = random.Random(seed)
    alphabet = "abcdefghijklmnopqrstuvwxyz" + ("0123456789" if digits else "")
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 9))) for _ in range(count)]


@pytest.mark.parametrize("times", [1, 31, 32, 33, 34, 65])
@pytest.mark.parametrize("unit", ["the cat sat ", "abcde ", "x1 y2 ", "12 ", "近似重复", "a. ", "Ünïcödé — "])
def test_version_3_at_the_cap_matches_the_reference(unit: str, times: int) -> None:
    """A feature 32 times votes 32 times; 33 times, still 32 (each kind, with and without digits)."""
    for text in (unit * times, "start " + unit * times + " end", unit * times + "tail" + unit * 2):
        assert COMPILED.simhash_v3(text) == PURE.simhash_v3(text), (unit, times)


@pytest.mark.parametrize("size", [20_000, 400_000, 800_000])
def test_version_3_many_hot_features_match_the_reference(size: int) -> None:
    """Words of a small vocabulary: many features past the cap, many slots of the sketch hot; from
    the logs (20 kB), and past the logs' room, walked again in parts (400 kB, 800 kB)."""
    rng = random.Random(size)
    vocabulary = random_words(size, 3000, digits=True) + ["中文", "é", "2024", "the"]
    text = " ".join(rng.choice(vocabulary) for _ in range(size // 6))
    assert COMPILED.simhash_v3(text) == PURE.simhash_v3(text)
    assert COMPILED.simhash_v3(text.encode()) == PURE.simhash_v3(text.encode())


@pytest.mark.parametrize("digits", [False, True])
def test_version_3_walks_in_parts_match_the_reference(digits: bool) -> None:
    """More distinct features past the cap than one walk's table counts (cap_exact_limit: the text's
    length / 64, some 7,000 here): the hash space is walked in parts, halved as the table fills."""
    unit = " ".join(random_words(48 if digits else 49, 2_500, digits))  # some 15,000 distinct n-grams
    text = (unit + " ") * 34
    assert COMPILED.simhash_v3(text) == PURE.simhash_v3(text)
    assert COMPILED.simhash_v3(text + " 2024 tail") == PURE.simhash_v3(text + " 2024 tail")


def test_version_3_all_distinct_features_match_the_reference() -> None:
    """A text of random hex past the logs' room: most of its n-grams past the cap, the shingles not."""
    rng = random.Random(16)
    text = " ".join(f"{rng.getrandbits(64):x}" for _ in range(40_000))
    assert COMPILED.simhash_v3(text) == PURE.simhash_v3(text)


@pytest.mark.parametrize("level", SIMD_LEVELS)
def test_every_simd_level_gives_the_same_bits(level: str) -> None:
    texts = mixed_texts(4949, 12) + [v["text"] for v in load_vectors(2) + load_vectors(3)]
    reference = {1: lambda t: PURE.simhash(t, 3), 2: PURE.simhash_v2, 3: PURE.simhash_v3}
    for version in (1, 2, 3):
        got = fingerprints_in_fresh_interpreter(texts, version, {"PYSIMHASH_SQL_SIMD": level})
        assert got["implementation"] == "c"
        assert got["values"] == [reference[version](t) for t in texts]
    cpu = COMPILED.core.CPU_SIMD_LEVEL
    assert got["simd"] == min(level, cpu, key=SIMD_LEVELS[::-1].index)


def test_a_wrong_simd_level_is_refused() -> None:
    with pytest.raises(subprocess.CalledProcessError) as info:
        fingerprints_in_fresh_interpreter(["a"], 2, {"PYSIMHASH_SQL_SIMD": "sse9"})
    assert "ValueError: PYSIMHASH_SQL_SIMD must be auto, avx512, avx2 or none, not sse9" in info.value.stderr


def test_without_the_module_the_same_bits() -> None:
    texts = mixed_texts(7, 6) + ["", "a", "近似重复"]
    for version in (1, 2, 3):
        got = fingerprints_in_fresh_interpreter(texts, version, {"PYSIMHASH_SQL_PURE_PYTHON": "1"})
        assert got["implementation"] == "python" and got["simd"] is None
        assert got["values"] == [int(v) for v in hashing.fingerprints(texts, version=version)]


# -- fingerprints(): many at once, in threads ----------------------------------------


@pytest.mark.parametrize("version", [1, 2, 3])
def test_fingerprints_in_threads_equal_one_by_one(version: int) -> None:
    texts = mixed_texts(11, 40) + [b"bytes \xff too", bytearray(b"a bytearray"), memoryview(b"a memoryview")]
    one_by_one = [hashing.fingerprint(text, version=version) for text in texts]
    for jobs in (None, 1, 2, 7, 100):
        got = hashing.fingerprints(texts, version=version, jobs=jobs)
        assert got == one_by_one and all(value.text_spec == version for value in got)
    assert hashing.fingerprints(iter(texts), version=version) == one_by_one
    assert PURE.fingerprints(texts, version, 2) == one_by_one
    assert hashing.fingerprints([], version=version) == []


def test_fingerprints_refuse_what_fingerprint_refuses() -> None:
    for texts, error in [(["a", 3], TypeError), (["a", "\ud800"], UnicodeEncodeError), ([None], TypeError)]:
        for impl in (COMPILED, PURE):
            with pytest.raises(error):
                impl.fingerprints(texts, 2, 2)
        with pytest.raises(error):
            hashing.fingerprints(texts, version=2)
    for bad in (0, -1):
        with pytest.raises(ValueError, match="jobs"):
            hashing.fingerprints(["a"], version=2, jobs=bad)
    with pytest.raises(ValueError, match="version"):
        hashing.fingerprints(["a"], version=4)


def test_the_cores_threads_share_the_texts_and_their_failures() -> None:
    """core.fingerprints(texts, version, shingle_size, jobs): jobs threads of
    its own each take the next texts as they are done: the values of
    one by one, in order, whatever each text costs (a long one among short
    ones), with more jobs than texts or none; a failure in any thread is the
    call's exception."""
    texts = ["word " * 100_000] + mixed_texts(17, 60) + [b"bytes", "", "a"] + ["x " * 50_000]
    for version in (1, 2, 3):
        one_by_one = [COMPILED.core.fingerprint(text, version) for text in texts]
        for jobs in (1, 2, 3, 64):
            assert COMPILED.core.fingerprints(texts, version, 3, jobs) == one_by_one
        assert COMPILED.core.fingerprints(texts[:1], version, 3, 8) == one_by_one[:1]
        assert COMPILED.core.fingerprints([], version, 3, 8) == []
    for jobs in (1, 2, 5):
        with pytest.raises(ValueError, match="shingle_size"):
            COMPILED.core.fingerprints(texts, 1, 0, jobs)
    for bad in (0, -1):
        with pytest.raises(ValueError, match="jobs"):
            COMPILED.core.fingerprints(texts, 2, 3, bad)


def test_the_compiled_path_never_imports_numpy(tmp_path) -> None:
    """hashing with the compiled core, and the CLI's fingerprint over JSON Lines,
    load no numpy (its import alone is some 80 ms of every command's start);
    the pure-Python reference's functions load it when called."""
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "text": text}) + "\n" for i, text in enumerate(mixed_texts(19, 20))))
    code = ("import sys; from pysimhash_sql import hashing; from pysimhash_sql.cli import main; "
            "values = hashing.fingerprints(['a b c d', 'e'], version=3, jobs=2) + [hashing.fingerprint('x y', version=1)]; "
            f"main(['fingerprint', '--jobs', '2', '-o', {str(tmp_path / 'out.csv')!r}, {str(corpus)!r}]); "
            "print(hashing.IMPLEMENTATION, 'numpy' in sys.modules, hashing.UNICODE_VERSION, 'numpy' in sys.modules)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["c", "False", hashing.UNICODE_VERSION, "True"], run.stderr
    assert (tmp_path / "out.csv").read_text().count("\n") == 21


def test_threads_calling_at_once_get_their_own_answers() -> None:
    texts = mixed_texts(13, 16)
    expected = [PURE.simhash_v2(text) for text in texts]
    results: dict[int, list[int]] = {}
    start = threading.Barrier(4)

    def work(k: int) -> None:
        start.wait()
        results[k] = [hashing.simhash_v2(text) for text in texts[k:] + texts[:k]]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(results[k] == expected[k:] + expected[:k] for k in range(4))


@pytest.mark.parametrize("jobs", [None, 1, 2])
def test_the_gil_is_released_while_a_fingerprint_is_computed(jobs: int | None) -> None:
    """Python code of another thread runs while the core computes, one text or a
    batch in its own threads (it could not if the GIL were held)."""
    text = "The quick brown fox jumps over the lazy dog. " * 400_000
    window: list[float] = []
    ticks: list[float] = []

    def compute() -> None:
        window.append(time.perf_counter())
        if jobs is None:
            hashing.COMPILED.core.fingerprint(text, 2)
        else:
            hashing.COMPILED.core.fingerprints([text[: len(text) // 2], text[len(text) // 2 :]] * 2, 2, 3, jobs)
        window.append(time.perf_counter())

    worker = threading.Thread(target=compute)
    worker.start()
    while worker.is_alive():
        ticks.append(time.perf_counter())
    worker.join()
    start, end = window
    inside = [tick for tick in ticks if start < tick < end]
    # Held, the GIL would let this thread tick only before the call began: never across most of it.
    assert inside and inside[-1] - inside[0] > (end - start) / 2, (start, end, inside[:1], inside[-1:])


# -- hostile and huge input: the same value, or the same exception class ------------------

HOSTILE = [
    "a\x00b c\x00\x00d e",
    "\x00" * 1000,
    "\ud800",
    "abc \udfff def",
    "x" * 10 + "\ud83d",
    "😀 wide \udc00 text",
    "caf\xe9\x00 \xfc\xff latin-1",
    "中文\x00 한국어 \U0001F600\x00",
    b"\xff\xfe\xfd",
    b"ab\xc3 \xe2\x82 \xf0\x9f\x98 \xed\xa0\x80 \xc0\xaf \xf4\x90\x80\x80 z",
    b"\x00caf\xc3\xa9\x00",
    bytearray(b"abc def"),
    memoryview(b"abc def ghi"),
    memoryview(np.arange(6, dtype=np.uint16)),
    123,
    None,
    ["a"],
    3.5,
]


def hostile_id(text) -> str:
    """A stable test id (a memoryview's repr holds its address, which differs between processes)."""
    return f"memoryview({bytes(text)!r})" if isinstance(text, memoryview) else repr(text)


@pytest.mark.parametrize("text", HOSTILE, ids=hostile_id)
def test_hostile_input_gives_what_the_reference_gives(text) -> None:
    for size in (1, 3):
        assert outcome(COMPILED.simhash, text, size) == outcome(PURE.simhash, text, size)
    assert outcome(COMPILED.simhash_v2, text) == outcome(PURE.simhash_v2, text)
    assert outcome(hashing.simhash_v2, text) == outcome(PURE.simhash_v2, text)


def test_huge_shingle_sizes_and_texts() -> None:
    text = " ".join(f"w{i % 101}" for i in range(3000))
    for size in (255, 256, 257, 3000, 3001, 2**62, 2**80):
        assert hashing.simhash(text, size) == PURE.simhash(text, size)
    huge = ("Word ÜNÏCODE 日本語の 한국어 " * 200_000) + "a" * 1_000_000
    assert len(huge.encode()) > 8_000_000
    assert COMPILED.simhash_v2(huge) == PURE.simhash_v2(huge)
    assert COMPILED.simhash(huge, 3) == PURE.simhash(huge, 3)


@pytest.mark.parametrize("n", [0, 1, 31, 32, 33, 65, 129, 3969, 70_001])
def test_vote_matches_the_reference(n: int) -> None:
    hashes = np.random.default_rng(n).integers(0, 2**64, n, dtype=np.uint64, endpoint=False)
    assert COMPILED.vote(hashes) == PURE.vote(hashes)
    assert COMPILED.vote(hashes[::2]) == PURE.vote(hashes[::2])


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc)")
def test_the_module_compiles_without_a_warning(tmp_path) -> None:
    """setup.py's build is optional (a failed one installs the package without
    the module): every warning of _core.c is an error here."""
    include = sysconfig.get_paths()["include"]
    run = subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-O2", f"-I{ROOT / 'pg_ext' / 'src'}",
                          f"-I{include}", "-c", str(ROOT / "pysimhash_sql" / "_core.c"), "-o", str(tmp_path / "core.o")],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


@pytest.mark.parametrize("n", [0, 1, 255, 256, 257, 4096, 5000])
def test_vote_of_a_list_or_tuple_of_ints_is_read_in_c(n: int) -> None:
    """compute()/vote() of a list or tuple (simhash-py's input) are read by the
    core itself: the same answers as the reference, negative ints as two's
    complement, and an item that is not an int hash is the reference's error."""
    hashes = np.random.default_rng(n).integers(0, 2**64, n, dtype=np.uint64, endpoint=False).tolist()
    signed = [h - (1 << 64) if h >= 1 << 63 else h for h in hashes]
    expected = PURE.vote(hashes)
    assert COMPILED.vote(hashes) == COMPILED.vote(tuple(signed)) == expected
    assert COMPILED.vote(signed + [True]) == PURE.vote(signed + [True])


@pytest.mark.parametrize("bad", [1 << 64, -(1 << 63) - 1, 1.5, "1", None])
def test_vote_of_a_list_with_a_bad_item_raises_as_the_reference(bad) -> None:
    with pytest.raises(Exception) as compiled:
        COMPILED.vote([1, 2, bad])
    with pytest.raises(Exception) as pure:
        PURE.vote([1, 2, bad])
    assert (type(compiled.value), str(compiled.value)) == (type(pure.value), str(pure.value))


@pytest.mark.parametrize("jobs", [1, 2, 5])
def test_fingerprint_batches_streams_in_order(jobs: int) -> None:
    """fingerprint_batches: a list a batch, in order, equal to fingerprints();
    it reads at most 2 x jobs batches ahead of what it has yielded."""
    texts = [f"document {i} of a stream, with words {i % 13} and {i % 7}" for i in range(300)]
    batches = [texts[i:i + 7] for i in range(0, len(texts), 7)]
    read = []

    def stream():
        for batch in batches:
            read.append(batch)
            yield batch

    got = []
    for fps in hashing.fingerprint_batches(stream(), version=2, jobs=jobs):
        assert len(read) <= len(got) + 2 * jobs + 1
        got.append(fps)
    assert [len(fps) for fps in got] == [len(b) for b in batches]
    assert [fp for fps in got for fp in fps] == hashing.fingerprints(texts, version=2, jobs=1)
    assert all(fp.text_spec == 2 for fps in got for fp in fps)
    sized = [fp for fps in hashing.fingerprint_batches(batches, version=1, shingle_size=2, jobs=jobs) for fp in fps]
    assert sized == [PURE.simhash(text, 2) for text in texts]


def test_fingerprint_batches_in_processes_for_the_pure_python_code() -> None:
    """Without the compiled core, fingerprint_batches computes in worker
    processes (threads would take turns at the GIL): the same fingerprints."""
    code = ("from pysimhash_sql import hashing; import json, sys;"
            "texts = [f'text {i} ' * (i % 9 + 1) for i in range(60)];"
            "got = [fp for fps in hashing.fingerprint_batches([texts[i:i+6] for i in range(0, 60, 6)], version=2,"
            " jobs=3) for fp in fps];"
            "print(hashing.IMPLEMENTATION, json.dumps(got))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYSIMHASH_SQL_PURE_PYTHON": "1"}).stdout.split(" ", 1)
    assert out[0] == "python"
    texts = [f"text {i} " * (i % 9 + 1) for i in range(60)]
    assert json.loads(out[1]) == hashing.fingerprints(texts, version=2)


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_in_order_and_fingerprint_values(jobs: int) -> None:
    """in_order: a function of each item, in order, on jobs cores (what a
    worker raises comes out where its item is); fingerprint_values: a batch's
    fingerprints as plain ints, in the calling thread."""
    texts = [f"item {i} of a stream " * (1 + i % 5) for i in range(40)]
    batches = [texts[i:i + 3] for i in range(0, len(texts), 3)]
    work = partial(hashing.fingerprint_values, version=2)
    got = list(hashing.in_order(work, batches, jobs=jobs))
    assert [fp for fps in got for fp in fps] == hashing.fingerprints(texts, version=2)
    assert all(type(fp) is int for fps in got for fp in fps)
    assert hashing.fingerprint_values(texts[:5], version=1, shingle_size=2) == [PURE.simhash(t, 2) for t in texts[:5]]
    results = hashing.in_order(work, [texts[:2], ["a", 5], texts[2:4]], jobs=jobs)
    assert next(results) == hashing.fingerprints(texts[:2], version=2)
    with pytest.raises(TypeError):
        next(results)
    with pytest.raises(ValueError, match="shingle_size is a parameter of text spec version 1"):
        hashing.fingerprint_values(["a"], version=2, shingle_size=3)


def test_fingerprint_batches_refuses_bad_arguments() -> None:
    with pytest.raises(ValueError, match="shingle_size is a parameter of text spec version 1"):
        list(hashing.fingerprint_batches([["a"]], version=2, shingle_size=3))
    with pytest.raises(ValueError, match="jobs must be at least 1"):
        list(hashing.fingerprint_batches([["a"]], version=2, jobs=0))
    with pytest.raises(TypeError):
        list(hashing.fingerprint_batches([["a", 5]], version=2, jobs=2))
