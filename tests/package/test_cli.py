"""The pysimhash-sql command line, run as users run it: the installed console
script in a subprocess, against the real test server for the database commands."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import random
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from toolbox.readme import readme_blocks, run_example
from toolbox import ROOT, brute_force_hash_pairs, flip_random

from pysimhash_sql.plain import PlainLayout

CLI = str(Path(sys.executable).with_name("pysimhash-sql"))
CORPUS = ROOT / "examples" / "corpus"


SKIPPED_STATUS = 3  # some inputs were reported and skipped, the rest processed


def run(*args: str, input: str | None = None, env: dict | None = None, ok: bool = True,
        skips: bool = False) -> subprocess.CompletedProcess:
    """Runs the CLI; with ok, asserts it succeeded (with skips: and skipped some inputs)."""
    result = subprocess.run([CLI, *args], input=input, capture_output=True, text=True, env=env, timeout=120)
    if ok:
        assert result.returncode == (SKIPPED_STATUS if skips else 0), result.stderr
    return result


def assert_user_error(result: subprocess.CompletedProcess, *fragments: str) -> None:
    """One line on stderr that says what is wrong, exit status 1, no traceback."""
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("pysimhash-sql: "), result.stderr
    for fragment in fragments:
        assert fragment in result.stderr


def near_duplicate_hashes(seed: int, groups: int = 40, per_group: int = 6) -> set[int]:
    """Random fingerprints, each with a few copies differing in 1-5 random bits."""
    rng = random.Random(seed)
    hashes = set()
    for _ in range(groups):
        base = rng.getrandbits(64)
        hashes.add(base)
        for _ in range(per_group):
            hashes.add(flip_random(base, rng.randint(1, 5), rng))
    return hashes


# -- find-all and find-clusters (simhash-cpp's binaries) ------------------------------------

@pytest.mark.parametrize("distance, blocks", [(0, 1), (1, 4), (3, 6), (4, 8)])
def test_find_all_is_brute_force_in_simhash_cpp_format(distance: int, blocks: int) -> None:
    hashes = near_duplicate_hashes(seed=distance)
    lines = "".join(f"{h}\n" for h in sorted(hashes, key=str)) + f"{min(hashes)}\n"  # a duplicate counts once
    out = run("find-all", "--distance", str(distance), "--blocks", str(blocks), input=lines).stdout
    expected = brute_force_hash_pairs(hashes, distance)
    assert out == "".join(f"[{a}, {b}]\n" for a, b in expected)
    assert distance == 0 or expected  # the data has pairs to find


def test_find_clusters_matches_simhash_cpp_test_vectors() -> None:
    # simhash-cpp's FindClusters test: four clusters of four, and 0x33.. left alone.
    hashes = [b << shift for shift in (0, 8, 16, 24) for b in (0xFF, 0xEF, 0xEE, 0xCE, 0x33)]
    expected = sorted(sorted(b << shift for b in (0xFF, 0xEF, 0xEE, 0xCE)) for shift in (0, 8, 16, 24))
    for blocks in range(4, 10):
        out = run("find-clusters", "-d", "3", "-b", str(blocks), input="\n".join(map(str, hashes))).stdout
        assert [json.loads(line) for line in out.splitlines()] == expected


def test_find_clusters_are_the_connected_components_of_find_all(tmp_path: Path) -> None:
    hashes = near_duplicate_hashes(seed=7, groups=60)
    (tmp_path / "hashes.txt").write_text("\n".join(map(str, hashes)) + "\n")
    run("find-clusters", "-d", "4", "-b", "7", "-i", str(tmp_path / "hashes.txt"), "-o", str(tmp_path / "out"))
    clusters = [json.loads(line) for line in (tmp_path / "out").read_text().splitlines()]

    pairs = brute_force_hash_pairs(hashes, 4)
    cluster_of = {h: i for i, cluster in enumerate(clusters) for h in cluster}
    assert all(cluster_of[a] == cluster_of[b] for a, b in pairs)  # linked hashes share a cluster
    linked = {h for pair in pairs for h in pair}
    assert set(cluster_of) == linked  # and every clustered hash is linked: no singletons
    for cluster in clusters:  # each cluster is connected by the pairs
        members, reached = set(cluster), {cluster[0]}
        while grown := {b for a, b in pairs + [(b, a) for a, b in pairs] if a in reached and b in members} - reached:
            reached |= grown
        assert reached == members
    assert clusters == sorted(clusters) and all(cluster == sorted(cluster) for cluster in clusters)


@pytest.mark.parametrize("command", ["find-all", "find-clusters"])
def test_no_hashes_no_output(command: str) -> None:
    assert run(command, input="").stdout == ""
    assert run(command, input="42\n\n42\n").stdout == ""  # one distinct hash has no partner


def test_malformed_hash_line_names_the_line() -> None:
    assert_user_error(run("find-all", input="1\n2\n0x10\n", ok=False), "stdin, line 3", "'0x10'")
    assert_user_error(run("find-clusters", input="18446744073709551616\n", ok=False), "line 1")
    assert_user_error(run("find-all", "-i", "/nonexistent/hashes", ok=False), "cannot read /nonexistent/hashes")
    assert_user_error(run("find-all", "-o", "/nonexistent/out", input="1\n", ok=False), "cannot write /nonexistent/out")
    binary = subprocess.run([CLI, "find-all"], input=b"12\n\xff\xfe\n", capture_output=True)
    assert binary.returncode == 1 and b"stdin, line 2" in binary.stderr and b"Traceback" not in binary.stderr


def test_blocks_must_exceed_distance() -> None:
    assert_user_error(run("find-all", "-d", "3", "-b", "3", input="1\n", ok=False), "--distance 3 --blocks 3")


# -- fingerprint -------------------------------------------------------------------------

@pytest.mark.parametrize(("options", "sql"), [((), "simhash_v3(%s)"),  # the latest text spec by default
                                              (("--spec-version", "2"), "simhash_v2(%s)"),
                                              (("--spec-version", "1", "--shingle-size", "2"), "simhash(%s, 2)")])
def test_fingerprint_of_a_directory_equals_sql_simhash(shared_db: psycopg.Connection, options, sql: str) -> None:
    out = run("fingerprint", *options, str(CORPUS)).stdout.splitlines()
    assert out[0] == "id,fingerprint"
    files = sorted(p.name for p in CORPUS.iterdir())
    assert [line.split(",")[0] for line in out[1:]] == files
    for line in out[1:6]:
        name, fingerprint = line.split(",")
        body = (CORPUS / name).read_text(encoding="utf-8")
        assert shared_db.execute(f"SELECT {sql}::text", (body,)).fetchone() == (fingerprint,)


@pytest.mark.parametrize("options", [(), ("--spec-version", "1", "--shingle-size", "2")])
def test_fingerprint_on_many_cores_gives_the_same_lines(tmp_path: Path, options) -> None:
    """--jobs: the documents fingerprinted a batch at a time on that many
    threads, in input order, whichever implementation computes (the pure-Python
    one in processes): the same output as one core's."""
    docs = [{"id": i, "text": f"page {i % 41} of a crawl, about the fox number {i}" * (1 + i % 5)} for i in range(500)]
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    args = ("fingerprint", *options, "--format", "jsonl", str(tmp_path / "docs.jsonl"))
    one = run(*args, "--jobs", "1").stdout
    assert len(one.splitlines()) == len(docs)
    assert run(*args, "--jobs", "3").stdout == one
    assert run(*args, env={**os.environ, "PYSIMHASH_SQL_PURE_PYTHON": "1"}).stdout == one
    assert run(*args, env={**os.environ, "PYSIMHASH_SQL_STDLIB_JSON": "1"}).stdout == one
    assert_user_error(run(*args, "--jobs", "0", ok=False), "--jobs must be at least 1")


def multi_block_jsonl(path: Path, records: int = 700) -> dict[int, str]:
    """JSON Lines of several of cli/jsonl.py's blocks (BLOCK_BYTES), with CR LF
    line ends, blank lines, malformed lines (one not UTF-8, one with a lone surrogate) spread
    over them, and no final line end; returns the malformed lines' numbers
    and what is wrong with each."""
    from pysimhash_sql.cli.jsonl import BLOCK_BYTES

    lines, malformed = [], {}
    for i in range(records):
        text = f"record {i} of a corpus in blocks, about the fox number {i % 97} " * (24 + i % 11)
        lines.append(json.dumps({"id": i, "text": text}).encode() + (b"\r" if i % 5 == 0 else b""))
        if i % 7 == 3:
            lines.append(b"")
        if i % 293 == 100:
            lines.append(b'{"id": "x", "text": "not closed')
            malformed[len(lines)] = "not JSON"
        if i % 577 == 200:
            lines.append('{"id": "y", "text": "caf\xe9"}'.encode("latin-1"))
            malformed[len(lines)] = "not UTF-8"
        if i % 613 == 300:  # half of an emoji: JSON's escape of a lone surrogate
            lines.append(b'{"id": "z", "text": "caf\\u00e9 \\ud83d and no more"}')
            malformed[len(lines)] = "'text' holds a lone surrogate (\\ud83d), not Unicode text"
    path.write_bytes(b"\n".join(lines))
    assert path.stat().st_size > 2 * BLOCK_BYTES
    return malformed


def test_fingerprint_jsonl_in_blocks_the_same_on_any_cores_and_parser(tmp_path: Path) -> None:
    """JSON Lines parsed and fingerprinted in blocks (cli/jsonl.py): the same
    output, and the same report of the malformed lines at their numbers, with
    1, 2 or 3 jobs, the standard library's json alone, and the pure-Python
    fingerprints (in worker processes)."""
    malformed = multi_block_jsonl(tmp_path / "docs.jsonl")
    args = ("fingerprint", "--verbose", "--format", "jsonl", str(tmp_path / "docs.jsonl"))
    one = run(*args, "--jobs", "1", ok=False)
    assert_skipped(one, *(f"docs.jsonl, line {number}: {why}" for number, why in malformed.items()))
    assert len(one.stdout.splitlines()) == 700
    for options, env in [(("--jobs", "2"), {}), (("--jobs", "3"), {}), ((), {"PYSIMHASH_SQL_STDLIB_JSON": "1"}),
                         (("--jobs", "2"), {"PYSIMHASH_SQL_PURE_PYTHON": "1"})]:
        again = run(*args, *options, env={**os.environ, **env}, ok=False)
        assert (again.returncode, again.stdout, again.stderr) == (one.returncode, one.stdout, one.stderr), env


def test_shingle_size_is_version_one_s() -> None:
    assert_user_error(run("fingerprint", "--shingle-size", "2", str(CORPUS), ok=False),
                      "--shingle-size is a parameter of text spec version 1", "--spec-version 1")
    assert_user_error(run("fingerprint", "--spec-version", "1", "--shingle-size", "0", str(CORPUS), ok=False),
                      "--shingle-size must be at least 1")


def test_fingerprint_jsonl_in_and_out(tmp_path: Path) -> None:
    docs = [{"key": 10, "body": "the quick brown fox"}, {"key": "b", "body": "jumps over the lazy dog"}]
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    out = run("fingerprint", "--format", "jsonl", "--id-field", "key", "--text-field", "body",
              str(tmp_path / "docs.jsonl")).stdout
    from pysimhash_sql import hashing

    assert [json.loads(line) for line in out.splitlines()] == [
        {"id": str(d["key"]), "fingerprint": hashing.simhash_v3(d["body"])} for d in docs
    ]


def test_fingerprint_input_mistakes(tmp_path: Path) -> None:
    assert_user_error(run("fingerprint", str(tmp_path / "missing"), ok=False), "missing: no such file or directory")
    assert_user_error(run("fingerprint", "--encoding", "nope", str(tmp_path), ok=False), "--encoding nope")


def assert_skipped(result: subprocess.CompletedProcess, *reports: str) -> None:
    """Exit status 3: done, with one line on stderr for each input skipped (the
    command ran with --verbose), then the summary line counting them."""
    assert result.returncode == 3, result.stderr
    *lines, summary = result.stderr.splitlines()
    assert summary.startswith(f"pysimhash-sql: skipped {len(reports)}: "), summary
    assert len(lines) == len(reports) and all(line.startswith("pysimhash-sql: ") for line in lines), lines
    for line, fragments in zip(lines, reports):
        assert all(fragment in line for fragment in fragments.split("|")), (line, fragments)


def fingerprints_of(result: subprocess.CompletedProcess) -> dict[str, int]:
    lines = result.stdout.splitlines()
    assert lines[0] == "id,fingerprint"
    return {name: int(fp) for name, fp in (line.rsplit(",", 1) for line in lines[1:])}


LATIN1_TEXT = "Ärger über Straßen: café au lait, à la française, très bien, garçon, naïve Größe"


def mixed_directory(root: Path) -> Path:
    """UTF-8 and Latin-1 text, a binary file, an empty file, and a hidden file and directory."""
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "utf8.txt").write_text("the quick brown fox jumps over the lazy dog", encoding="utf-8")
    (root / "docs" / "latin1.txt").write_bytes(LATIN1_TEXT.encode("latin-1"))
    (root / "docs" / "empty.txt").write_bytes(b"")
    (root / "docs" / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    (root / "docs" / ".secret").write_text("hidden file")
    (root / "docs" / ".cache").mkdir()
    (root / "docs" / ".cache" / "note.txt").write_text("in a hidden directory")
    return root / "docs"


def test_binary_files_are_reported_and_skipped_latin1_is_read(tmp_path: Path) -> None:
    from pysimhash_sql import hashing

    result = run("fingerprint", "--verbose", str(mixed_directory(tmp_path)), ok=False)
    assert_skipped(result, "image.png|binary|skipped")
    assert fingerprints_of(result) == {
        "empty.txt": hashing.simhash_v3(""),
        "latin1.txt": hashing.simhash_v3(LATIN1_TEXT),  # detected: the same text as UTF-8 would give
        "utf8.txt": hashing.simhash_v3("the quick brown fox jumps over the lazy dog"),
    }
    hidden = run("fingerprint", "--verbose", "--hidden", str(tmp_path / "docs"), ok=False)
    assert_skipped(hidden, "image.png|binary")
    assert {".cache/note.txt", ".secret"} < fingerprints_of(hidden).keys()
    assert run("fingerprint", str(tmp_path / "docs" / ".secret")).stdout.startswith("id,fingerprint\n")  # named: read


def test_encoding_option(tmp_path: Path) -> None:
    from pysimhash_sql import hashing

    path = tmp_path / "cyrillic.txt"
    text = "Съешь же ещё этих мягких французских булок, да выпей чаю"
    path.write_bytes(text.encode("koi8_r"))
    assert fingerprints_of(run("fingerprint", "--encoding", "koi8-r", str(path))) == {str(path): hashing.simhash_v3(text)}
    assert_skipped(run("fingerprint", "--verbose", "--encoding", "utf-8", str(path), ok=False), "cyrillic.txt|not utf-8 text")


def git_checkout(root: Path) -> Path:
    """A git repository with a commit: .git holds hooks/*.sample and a binary index."""
    repo = mixed_directory(root)
    (repo / "image.png").unlink()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "files"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    assert (repo / ".git" / "index").is_file() and list((repo / ".git" / "hooks").glob("*.sample"))
    return repo


def test_a_git_checkout(tmp_path: Path) -> None:
    repo = git_checkout(tmp_path)
    assert fingerprints_of(run("fingerprint", str(repo))).keys() == {"empty.txt", "latin1.txt", "utf8.txt"}
    everything = run("fingerprint", "--verbose", "--hidden", str(repo), ok=False)  # .git too: its binary files are skipped
    assert everything.returncode == 3 and "pysimhash-sql: " + str(repo / ".git" / "index") in everything.stderr
    assert "Traceback" not in everything.stderr
    names = fingerprints_of(everything).keys()
    assert "utf8.txt" in names and any(name.startswith(".git/hooks/") for name in names)


def test_jsonl_records_that_are_malformed_are_skipped(tmp_path: Path) -> None:
    lines = [b'{"id": 1, "text": "a b c"}', b'{"id": 2, "text": "b"', b'{"id": 3}', b'["list"]',
             '{"id": 4, "text": "caf\xe9"}'.encode("latin-1"), b"", b'{"id": 5, "text": "d e f"}']
    (tmp_path / "docs.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    result = run("fingerprint", "--verbose", str(tmp_path / "docs.jsonl"), ok=False)
    assert_skipped(result, "docs.jsonl, line 2|not JSON", "line 3|need an object", "line 4|need an object",
                   "line 5|not UTF-8")
    assert fingerprints_of(result).keys() == {"1", "5"}


# -- the database commands -----------------------------------------------------------------

def documents(conn: psycopg.Connection, table: str = "documents") -> list[tuple]:
    return conn.execute(f"SELECT name, body, fingerprint::text FROM {table} ORDER BY name").fetchall()


def test_ingest_directory_fingerprints_in_the_server_or_locally_alike(db: psycopg.Connection) -> None:
    dsn = db.info.dsn
    run("ingest", "--dsn", dsn, "--batch-size", "7", str(CORPUS))
    run("ingest", "--dsn", dsn, "--table", "local_docs", "--fingerprints", "local", "--jobs", "2",
        "--batch-size", "5", str(CORPUS))
    server = documents(db)
    assert len(server) == len(list(CORPUS.iterdir()))
    assert server == documents(db, "local_docs")
    mismatched = db.execute("SELECT count(*) FROM documents WHERE fingerprint <> simhash_v3(body)").fetchone()
    assert mismatched == (0,)
    assert column_spec(db, "documents") == "simhash text spec 3"  # the table knows its version: the latest

    run("ingest", "--dsn", dsn, str(CORPUS))  # again: every name is there already
    assert documents(db) == server
    # the near-duplicate index, made once after the first load: simhash_mih unless asked
    assert fingerprint_indexes(db) == {"documents_fingerprint_idx": "USING simhash_mih (fingerprint)"}


def column_spec(db: psycopg.Connection, table: str, column: str = "fingerprint") -> str | None:
    """The comment that records a fingerprint column's text spec version."""
    return db.execute("SELECT col_description(%s::regclass, (SELECT attnum FROM pg_attribute WHERE attrelid = "
                      "%s::regclass AND attname = %s))", (table, table, column)).fetchone()[0]


def fingerprint_indexes(db: psycopg.Connection, table: str = "documents") -> dict[str, str]:
    """The table's indexes but its primary key and unique names: name -> USING clause."""
    rows = db.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s"
                      " AND indexdef LIKE '%%(fingerprint)%%'", [table]).fetchall()
    return {name: "USING " + definition.partition(" USING ")[2] for name, definition in rows}


@pytest.mark.parametrize("kind", ["gin", "simhash_mih"])
def test_ingest_makes_the_index_asked_for_and_keeps_it(db: psycopg.Connection, tmp_path: Path, kind: str) -> None:
    dsn = db.info.dsn
    run("ingest", "--dsn", dsn, "--table", "docs", "--index", kind, str(CORPUS))
    made = {"gin": "USING gin (fingerprint) WITH (fastupdate=off)",  # without GIN's pending list
            "simhash_mih": "USING simhash_mih (fingerprint)"}[kind]
    assert fingerprint_indexes(db, "docs") == {"docs_fingerprint_idx": made}
    db.execute("SET enable_seqscan = off")
    near = db.execute("EXPLAIN SELECT id FROM docs WHERE hamming_within(fingerprint, 0, 5)").fetchall()
    assert "docs_fingerprint_idx" in "\n".join(row[0] for row in near)

    # a later ingest with the default keeps the index there, of either kind
    (tmp_path / "more.txt").write_text("one more document, loaded into the indexed table")
    run("ingest", "--dsn", dsn, "--table", "docs", str(tmp_path))
    assert fingerprint_indexes(db, "docs") == {"docs_fingerprint_idx": made}
    assert db.execute("SELECT count(*) FROM docs WHERE name = 'more.txt'").fetchone() == (1,)


def test_ingest_jsonl_from_stdin_with_pg_environment_variables(db: psycopg.Connection) -> None:
    info = db.info
    env = {**os.environ, "PGHOST": info.host, "PGPORT": str(info.port), "PGUSER": info.user, "PGDATABASE": info.dbname}
    # distinct words (text spec 2 read numbers as separators; 3, the default, counts them)
    words = [chr(97 + i % 26) + chr(97 + i // 26) for i in range(50)]
    lines = "".join(json.dumps({"id": f"doc{i}", "text": f"document {w} " * 5}) + "\n" for i, w in enumerate(words))
    run("ingest", "--table", "public.docs", "--fingerprints", "local", "-", input=lines, env=env)
    assert db.execute("SELECT count(*), count(DISTINCT fingerprint) FROM docs").fetchone() == (50, 50)


def test_database_mistakes_are_one_line(db: psycopg.Connection, tmp_path: Path) -> None:
    assert_user_error(run("ingest", "--dsn", "host=/nonexistent-dir port=1", str(CORPUS), ok=False),
                      "cannot connect to the database")
    assert_user_error(run("ingest", "--dsn", "not a dsn", str(CORPUS), ok=False), "cannot connect to the database")
    dsn = db.info.dsn
    for command in ("dupes", "clusters"):
        assert_user_error(run(command, "--dsn", dsn, "--table", "nope", ok=False), "table nope does not exist")
    db.execute("CREATE TABLE notext (name text, body int, fingerprint simhash64)")
    (tmp_path / "a.txt").write_text("some text")
    assert_user_error(run("ingest", "--dsn", dsn, "--table", "notext", str(tmp_path), ok=False), "body")


def test_ingest_of_a_directory_with_a_binary_file_loads_the_rest(db: psycopg.Connection, tmp_path: Path) -> None:
    docs = mixed_directory(tmp_path)
    assert_skipped(run("ingest", "--verbose", "--dsn", db.info.dsn, str(docs), ok=False), "image.png|binary")
    assert [name for name, _, _ in documents(db)] == ["empty.txt", "latin1.txt", "utf8.txt"]
    assert db.execute("SELECT body FROM documents WHERE name = 'latin1.txt'").fetchone() == (LATIN1_TEXT,)


def test_ingest_of_a_git_checkout(db: psycopg.Connection, tmp_path: Path) -> None:
    run("ingest", "--dsn", db.info.dsn, str(git_checkout(tmp_path)))
    assert [name for name, _, _ in documents(db)] == ["empty.txt", "latin1.txt", "utf8.txt"]


def test_documents_the_server_refuses_leave_the_rest_of_their_batch(db: psycopg.Connection) -> None:
    """A NUL, text the database encoding cannot hold, a name twice in a batch:
    the batch goes in one document at a time, and only those are left out."""
    db.execute("CREATE DATABASE latin1_docs ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0")
    latin1 = psycopg.connect(**{**psycopg.conninfo.conninfo_to_dict(db.info.dsn), "dbname": "latin1_docs"},
                             autocommit=True)
    latin1.execute("CREATE EXTENSION simhash")
    records = [{"id": f"d{i}", "text": f"document number {i}"} for i in range(10)]
    records[3]["text"] = "a NUL \u0000 here"
    records[5]["text"] = "日本語のテキスト"  # not in LATIN1
    records[7]["id"] = "d6"  # the same name as the one before it, in the same batch
    lines = "".join(json.dumps(r) + "\n" for r in records)
    for fingerprints in ("server", "local"):
        latin1.execute("DROP TABLE IF EXISTS documents")
        result = run("ingest", "--verbose", "--dsn", latin1.info.dsn, "--batch-size", "100", "--fingerprints", fingerprints, "-",
                     input=lines, ok=False)
        assert_skipped(result, "d3|0x00", "d5|")
        assert [name for name, _, _ in documents(latin1)] == [f"d{i}" for i in (0, 1, 2, 4, 6, 8, 9)]
    latin1.close()


@pytest.fixture
def near_duplicate_table(db: psycopg.Connection) -> list[tuple[int, int]]:
    """documents(id, name, fingerprint) with near-duplicates; the brute-force pairs within 3 bits."""
    hashes = sorted(near_duplicate_hashes(seed=3))
    db.execute("CREATE TABLE documents (id bigint PRIMARY KEY, name text, fingerprint simhash64)")
    with db.cursor().copy("COPY documents FROM STDIN") as copy:
        for i, h in enumerate(hashes, 1):
            copy.write_row((i * 10, f"doc{i * 10}", str(h)))
    id_of = {h: i * 10 for i, h in enumerate(hashes, 1)}
    return sorted((id_of[a], id_of[b]) for a, b in brute_force_hash_pairs(set(hashes), 3))


def test_dupes_are_the_brute_force_hash_pairs(db: psycopg.Connection, near_duplicate_table) -> None:
    out = run("dupes", "--dsn", db.info.dsn, "--format", "jsonl", "--label", "name").stdout
    rows = [json.loads(line) for line in out.splitlines()]
    assert [(r["id1"], r["id2"]) for r in rows] == near_duplicate_table
    assert all(r["name1"] == f"doc{r['id1']}" and r["name2"] == f"doc{r['id2']}" for r in rows)
    csv = run("dupes", "--dsn", db.info.dsn, "--distance", "3", "--blocks", "6").stdout.splitlines()
    assert csv[0] == "id1,id2,distance" and len(csv) == len(rows) + 1


def test_dupes_and_clusters_with_workers(db: psycopg.Connection, near_duplicate_table) -> None:
    """--workers reaches the server (simhash_find_all's workers); a negative
    count is the command's own error."""
    db.execute("ALTER DATABASE " + db.info.dbname + " SET simhash.find_all_parallel_min_rows = 0")
    out = run("dupes", "--dsn", db.info.dsn, "--workers", "2").stdout.splitlines()
    assert [tuple(map(int, line.split(",")[:2])) for line in out[1:]] == near_duplicate_table
    assert len(run("clusters", "--dsn", db.info.dsn, "--workers", "0").stdout.splitlines()) > 1
    assert_user_error(run("dupes", "--dsn", db.info.dsn, "--workers", "-1", ok=False), "--workers must be 0 or more")


def test_clusters_group_the_linked_rows(db: psycopg.Connection, near_duplicate_table) -> None:
    out = run("clusters", "--dsn", db.info.dsn).stdout.splitlines()
    assert out[0] == "cluster_id,id"
    cluster_of = {int(i): int(c) for c, i in (line.split(",") for line in out[1:])}
    assert set(cluster_of) == {i for pair in near_duplicate_table for i in pair}
    assert all(cluster_of[a] == cluster_of[b] for a, b in near_duplicate_table)
    everyone = run("clusters", "--dsn", db.info.dsn, "--singletons").stdout.splitlines()
    assert len(everyone) - 1 == db.execute("SELECT count(*) FROM documents").fetchone()[0]


def test_database_messages_are_short_and_in_the_command_s_terms(db: psycopg.Connection, tmp_path: Path) -> None:
    run("ingest", "--dsn", db.info.dsn, str(CORPUS))
    result = run("dupes", "--dsn", db.info.dsn, "--fingerprint-column", "body", ok=False)
    assert_user_error(result, 'invalid input syntax for type simhash64: "', "characters)")
    assert len(result.stderr) < 600 and result.stdout == ""  # not a whole document, and no header
    result = run("dupes", "--dsn", db.info.dsn, "-b", "2", ok=False)
    assert_user_error(result, "--blocks must be more than --distance, got --blocks 2 --distance 3")
    assert "NULL" not in result.stderr
    assert_user_error(run("clusters", "--dsn", db.info.dsn, "-d", "-1", ok=False), "--distance must be at least 0")
    result = run("dupes", "--dsn", db.info.dsn, "-b", "40", ok=False)  # refused by the server, at the first fetch
    assert_user_error(result, "40 blocks cannot find fingerprints within 3 bits")
    assert result.stdout == ""
    (tmp_path / "out.csv").write_text("before")
    run("dupes", "--dsn", db.info.dsn, "-b", "40", "-o", str(tmp_path / "out.csv"), ok=False)
    assert (tmp_path / "out.csv").read_text() == "before"  # not even opened
    result = run("dupes", "--dsn", "host=/nonexistent-a,/nonexistent-b port=1", ok=False)
    assert_user_error(result, "No such file or directory; Is the server running")  # libpq's lines, kept apart


def committed(conn: psycopg.Connection) -> int:
    try:
        return conn.execute("SELECT count(*) FROM documents").fetchone()[0]
    except psycopg.errors.UndefinedTable:
        return 0


def test_ctrl_c_during_ingest_keeps_committed_batches_and_rerun_resumes(db: psycopg.Connection) -> None:
    lines = [json.dumps({"id": f"d{i:04}", "text": f"text of document {i}"}) + "\n" for i in range(1000)]
    # SIGINT as at a terminal, even when the tests run as a background job
    # (which starts with SIGINT ignored, and Python keeps it so).
    ingest = subprocess.Popen([CLI, "ingest", "--dsn", db.info.dsn, "--batch-size", "100", "-"],
                              stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    ingest.stdin.write("".join(lines[:250]))  # two batches commit; the third waits for input
    ingest.stdin.flush()
    deadline = time.monotonic() + 30
    while committed(db) < 200:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    ingest.send_signal(signal.SIGINT)
    _, stderr = ingest.communicate(timeout=30)

    assert ingest.returncode == 130
    assert "Traceback" not in stderr and "200 new documents were committed" in stderr
    assert db.execute("SELECT count(*) FROM documents").fetchone() == (200,)
    run("ingest", "--dsn", db.info.dsn, "-", input="".join(lines))
    assert db.execute("SELECT count(*), count(DISTINCT name) FROM documents").fetchone() == (1000, 1000)


def test_readme_command_line_example(db: psycopg.Connection, tmp_path: Path) -> None:
    (tmp_path / "examples").symlink_to(ROOT / "examples")  # the example runs from a checkout
    info = db.info
    env = {"PGHOST": info.host, "PGPORT": str(info.port), "PGUSER": info.user, "PGDATABASE": info.dbname}
    out = run_example(readme_blocks("Command line", document="docs/cli.md")[0], cwd=tmp_path, env=env, path=[]).splitlines()

    arrays = [json.loads(line) for line in out if line.startswith("[")]
    assert arrays and all(len(a) >= 2 for a in arrays)
    header = out.index("id1,id2,distance,name1,name2")
    clusters = [json.loads(line) for line in out if line.startswith("{")]
    assert header + 1 < len(out) and clusters and {"cluster_id", "id", "name"} == clusters[0].keys()
    nearest = out.index("id,distance,name")
    assert out[nearest + 1].split(",")[1:] == ["0", "GFDL-1.3.license.txt"]  # the file's own row first
    assert db.execute("SELECT count(*) FROM documents").fetchone() == (len(list(CORPUS.iterdir())),)


# -- the terminal ------------------------------------------------------------------------------

def on_a_terminal(*args: str) -> bytes:
    """What the CLI shows on stderr when stderr is a terminal (24 rows, 100
    columns); asserts it succeeded."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # 24 rows, 100 columns
    with subprocess.Popen([CLI, *args], stdout=subprocess.DEVNULL, stderr=terminal) as proc:
        os.close(terminal)
        shown = b""
        while chunk := _read_pty(controller):
            shown += chunk
    os.close(controller)
    assert proc.returncode == 0
    return shown


def test_progress_bar_on_a_terminal_only() -> None:
    assert run("fingerprint", str(CORPUS)).stderr == ""  # piped: quiet
    shown = on_a_terminal("fingerprint", str(CORPUS))
    count = len(list(CORPUS.iterdir()))
    assert f"{count}/{count}".encode() in shown and b"doc/s" in shown


def test_server_progress_bar_on_a_terminal(db: psycopg.Connection, tmp_path: Path) -> None:
    """dupes on a terminal: the server's progress NOTICEs of simhash_find_all
    draw a bar, to 100 %; the pairs still go to the output."""
    db.execute("CREATE TABLE documents (id bigint PRIMARY KEY, fingerprint simhash64)")
    db.execute("INSERT INTO documents SELECT i, hashint8extended(i % 150000, 0)::simhash64 FROM generate_series(1, 300000) i")
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    output = tmp_path / "pairs.csv"
    with subprocess.Popen([CLI, "dupes", "--dsn", db.info.dsn, "--workers", "0", "-o", str(output)],
                          stdout=subprocess.DEVNULL, stderr=terminal) as proc:
        os.close(terminal)
        shown = b""
        while chunk := _read_pty(controller):
            shown += chunk
    os.close(controller)
    pairs = output.read_text().splitlines()
    assert proc.returncode == 0
    assert b"simhash_find_all: 100%" in shown
    assert len(pairs) == 150000 + 1  # each i and i + 150000, and the header


def _read_pty(fd: int) -> bytes:
    try:
        return os.read(fd, 4096)
    except OSError:  # the other end closed
        return b""


# ------------------------------------------------ the plain back end (docs/managed.md)


def plain_dsn(plain_url) -> str:
    return plain_url.set(drivername="postgresql").render_as_string(hide_password=False)


def test_plain_backend_ingest(db: psycopg.Connection, plain_url, tmp_path: Path) -> None:
    """ingest into a database without the extension: a bigint column, the
    fingerprints the extension computes, the plain index the queries use; a
    later ingest (auto) keeps the table's back end."""
    from pysimhash_sql import hashing

    dsn = plain_dsn(plain_url)
    run("ingest", "--dsn", db.info.dsn, str(CORPUS))
    run("ingest", "--dsn", dsn, "--backend", "plain", "--batch-size", "7", str(CORPUS))
    with psycopg.connect(dsn, autocommit=True) as conn:
        stored = conn.execute("SELECT name, body, fingerprint FROM documents ORDER BY name").fetchall()
        assert [(name, body, str(fp % 2**64)) for name, body, fp in stored] == documents(db)
        # the default text spec, computed here: version 3, recorded as the column's
        assert all(fp % 2**64 == hashing.fingerprint(body, version=3) for _, body, fp in stored)
        assert column_spec(conn, "documents") == "simhash text spec 3"
        assert conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'simhash'").fetchone() == (0,)
        (definition,) = fingerprint_indexes_plain(conn)
        assert "USING gin ((ARRAY[" in definition and "fastupdate=off" in definition
        conn.execute("SET enable_seqscan = off")
        near = PlainLayout().within_sql("fingerprint", "0::bigint", "3", 3)
        plan = "\n".join(row[0] for row in conn.execute(f"EXPLAIN SELECT id FROM documents WHERE {near}"))
        assert "documents_fingerprint_idx" in plan, plan
        (tmp_path / "more.txt").write_text("one more document, loaded into the plain table")
        run("ingest", "--dsn", dsn, str(tmp_path))  # auto: the table's bigint column says plain
        assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == len(stored) + 1


def fingerprint_indexes_plain(conn: psycopg.Connection) -> list[str]:
    return [row[0] for row in conn.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'documents' "
                                           "AND indexname = 'documents_fingerprint_idx'")]


def test_plain_backend_dupes_and_clusters_equal_the_extensions(db: psycopg.Connection, near_duplicate_table,
                                                               plain_url) -> None:
    dsn = plain_dsn(plain_url)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE documents (id bigint PRIMARY KEY, name text, fingerprint bigint)")
        with conn.cursor().copy("COPY documents FROM STDIN") as copy:
            for row in db.execute("SELECT id, name, fingerprint::bigint FROM documents"):
                copy.write_row(row)
        copy_of_row = conn.execute("SELECT fingerprint FROM documents WHERE id = 10").fetchone()[0]
        conn.execute("INSERT INTO documents VALUES (5, 'same as doc10', %s), (6, 'no fingerprint', NULL)",
                     [copy_of_row])
    db.execute("INSERT INTO documents SELECT 5, 'same as doc10', fingerprint FROM documents WHERE id = 10")
    db.execute("INSERT INTO documents VALUES (6, 'no fingerprint', NULL)")
    for command in (["dupes", "--label", "name"], ["dupes", "--distance", "5", "--blocks", "8"],
                    ["clusters", "--singletons", "--format", "jsonl", "--label", "name"], ["clusters"],
                    ["dupes", "--workers", "1"], ["clusters", "--workers", "2"]):  # plain: the search's threads
        extension = run(*command, "--dsn", db.info.dsn).stdout
        assert run(*command, "--dsn", dsn).stdout == extension, command
        assert run(*command, "--dsn", dsn, "--backend", "plain").stdout == extension, command
    out = run("dupes", "--dsn", dsn).stdout.splitlines()
    assert [tuple(map(int, line.split(",")[:2])) for line in out[1:] if not line.startswith("5,")] == near_duplicate_table
    for command in (["nearest", "--id", "10"], ["nearest", "--fingerprint", "12345", "-n", "30"]):
        # the same distances (rows tied at the last one may differ)
        extension = nearest_rows(run(*command, "--dsn", db.info.dsn).stdout)
        assert [d for _, d in nearest_rows(run(*command, "--dsn", dsn).stdout)] == [d for _, d in extension], command


def nearest_rows(out: str) -> list[tuple[int, int]]:
    """(id, distance) of nearest's CSV lines, after the header."""
    lines = out.splitlines()
    assert lines[0].startswith("id,distance")
    return [(int(line.split(",")[0]), int(line.split(",")[1])) for line in lines[1:]]


def test_nearest_by_value_file_and_row_is_brute_force(db: psycopg.Connection, near_duplicate_table,
                                                      tmp_path: Path) -> None:
    """nearest: the n rows closest to a fingerprint (decimal or hex), to a
    file's text (in the column's text spec version: 1 undeclared, 2 when its
    comment says so) or to a row (itself left out), as brute force has them;
    the query is the simhash_mih index's ordering scan (EXPLAIN)."""
    from pysimhash_sql import hashing, text_spec
    from pysimhash_sql.backends import backend_named
    from pysimhash_sql.cli import build_parser
    from pysimhash_sql.cli.nearest import nearest_sql
    from pysimhash_sql.cli.settings import Settings

    stored = {i: int(fp) for i, fp in db.execute("SELECT id, fingerprint::text FROM documents")}
    db.execute("INSERT INTO documents VALUES (1, 'no fingerprint', NULL)")

    def check(out: str, q: int, n: int, leave_out: int | None = None) -> None:
        got = nearest_rows(out)
        expected = sorted(distance for i, distance in ((i, bin(fp ^ q).count("1")) for i, fp in stored.items())
                          if i != leave_out)[:n]
        assert [d for _, d in got] == expected
        assert all(bin(stored[i] ^ q).count("1") == d for i, d in got) and leave_out not in dict(got)

    dsn = db.info.dsn
    q = stored[10] ^ 0b101
    check(run("nearest", "--dsn", dsn, "--fingerprint", str(q)).stdout, q, 10)
    check(run("nearest", "--dsn", dsn, "--fingerprint", hex(q), "-n", "25").stdout, q, 25)
    check(run("nearest", "--dsn", dsn, "--id", "10", "-n", "5").stdout, stored[10], 5, leave_out=10)
    labelled = run("nearest", "--dsn", dsn, "--id", "10", "--label", "name", "--format", "jsonl").stdout
    assert all(row["name"] == f"doc{row['id']}" for row in map(json.loads, labelled.splitlines()))
    text = "a page of text whose nearest stored rows are asked for, " * 3
    (tmp_path / "page.txt").write_text(text)
    check(run("nearest", "--dsn", dsn, "--file", str(tmp_path / "page.txt")).stdout, hashing.simhash(text), 10)
    db.execute(text_spec.comment_on_column_sql("documents", "fingerprint", 2))
    check(run("nearest", "--dsn", dsn, "--file", str(tmp_path / "page.txt")).stdout, hashing.simhash_v2(text), 10)
    db.execute(text_spec.comment_on_column_sql("documents", "fingerprint", 3))
    check(run("nearest", "--dsn", dsn, "--file", str(tmp_path / "page.txt")).stdout, hashing.simhash_v3(text), 10)
    assert_user_error(run("nearest", "--dsn", dsn, "--id", "7", ok=False), "no row id = 7")
    assert_user_error(run("nearest", "--dsn", dsn, "--fingerprint", "0xZZ", ok=False), "--fingerprint")
    assert_user_error(run("nearest", "--dsn", dsn, "--fingerprint", "1", "-n", "0", ok=False), "--count")

    db.execute("CREATE INDEX documents_fingerprint_mih ON documents USING simhash_mih (fingerprint)")
    db.execute("ANALYZE documents")
    db.execute("SET enable_seqscan = off")  # a few hundred rows: the planner would read them all
    settings = Settings.parsed(build_parser().parse_args(["nearest", "--fingerprint", str(q), "--label", "name"]))
    query = nearest_sql(db, settings, backend_named("extension"), q)
    plan = "\n".join(row[0] for row in db.execute(sql.SQL("EXPLAIN ") + query))
    assert "Index Scan using documents_fingerprint_mih" in plan and "Order By" in plan, plan


@pytest.mark.parametrize("argv", [["find-all"], ["find-clusters"], ["fingerprint", "a.txt"], ["ingest", "a.txt"],
                                  ["refingerprint"], ["dupes"], ["clusters", "--singletons"], ["report", "a.txt"],
                                  ["nearest", "--id", "3"], ["dedupe", "a.jsonl", "-o", "b.jsonl"]])
def test_every_commands_options_are_one_frozen_settings(argv) -> None:
    """Each command's options parse into Settings (a field for each), which no
    command can rewrite."""
    from dataclasses import FrozenInstanceError

    from pysimhash_sql.cli import build_parser
    from pysimhash_sql.cli.settings import Settings

    settings = Settings.parsed(build_parser().parse_args(argv))
    assert settings.run.split(":")[0] in {"hashes", "fingerprint", "database", "refingerprint", "report", "nearest",
                                            "dedupe"}
    with pytest.raises(FrozenInstanceError):
        settings.backend = "plain"
