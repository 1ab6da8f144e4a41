"""The write-path benchmark (bench/bench_mih_writes.py) at a tiny size: its
writers insert exactly the rows asked for, its windows add up to them, the
index holds every row, and its exactness check compares with brute force;
its pgbench writer scaling measures every index at every writer count."""

from __future__ import annotations

from pathlib import Path

import bench_mih_writes as bench
import psycopg
import pytest

ROWS, INSERTS, PENDING_LIMIT, EXACT_QUERIES = 3_000, 4_000, 500, 20


def test_tiny_run_inserts_every_row_and_answers_exactly(db: psycopg.Connection, capsys) -> None:
    options = bench.parse_options([
        "--rows", str(ROWS), "--inserts", str(INSERTS), "--writers", "2", "--window", "1",
        "--copy-share", "0.3", "--copy-rows", "200", "--queries", "30", "--exact-queries", str(EXACT_QUERIES),
        "--pending-limit", str(PENDING_LIMIT), "--loaded-seconds", "1.5"])
    run = bench.one_run(db.info.dsn, "tiny", 2, options, bench.plan_of(options, 2))

    assert run.inserted == INSERTS == sum(window.rows for window, *_ in run.windows)
    # the fresh index queried while the writers filled another table (its own index), which the run then dropped
    assert set(run.loaded) == set(bench.RADII) and all(p50 > 0 for p50, _ in run.loaded.values())
    assert {k for window, *_ in run.windows for k in bench.RADII if window.queries[k]} == set(bench.RADII)
    # the query backend's CPU time a query, read from /proc beside each query's latency: on this
    # Linux machine (the server is local) for every query
    assert set(run.fresh_cpu) == set(bench.RADII) and all(cpu > 0 for cpu in run.fresh_cpu.values())
    assert all(len(window.query_sched[k]) == len(window.queries[k]) for window, *_ in run.windows for k in bench.RADII)
    # No part of a query's time is negative, and over all the queries the backend's time fits in
    # their latencies, but for a margin.  (Query by query it need not: the scheduler adds a running
    # task's time at its next tick or switch, so a query may be charged the end of the one before,
    # the backend's few microseconds after its reply.  The client's counts include the bench's
    # own reads around the query.)
    sched = [(ms, *split) for window, *_ in run.windows for k in bench.RADII
             for ms, split in zip(window.queries[k], window.query_sched[k])]
    assert sched and all(min(split) >= 0 for _, *split in sched)
    latency, cpu, wait, client_cpu, _ = map(sum, zip(*sched))
    assert 0 < cpu + wait <= 1.1 * latency + 5 and client_cpu > 0, (latency, cpu, wait)
    # the slowest queries' time, split: five parts, none negative
    for k in bench.RADII:
        _, share, text = bench.slowest_split(k, [window for window, *_ in run.windows])
        assert len(split := [float(part) for part in text.split(" / ")]) == 5 and min(split) >= 0
        assert share >= 0
        # and the middle ones' (what the p50 is made of), of the loaded fresh index and of a window
        busiest = max((window for window, *_ in run.windows), key=lambda window: len(window.queries[k]))
        for window in (run.loaded_queries, busiest):
            _, server_cpu, text = bench.middle_split(k, "", window)
            assert len(split := [float(part) for part in text.split(" / ")]) == 5 and min(split) >= 0
            assert round(server_cpu, 3) == split[0] > 0
    assert sum(len(window.waits) for window, *_ in run.windows) > 0          # INSERT transactions ran
    assert sum(len(window.commits) for window, *_ in run.windows) > 0        # and their COMMITs were timed apart
    assert sum(len(window.copies) for window, *_ in run.windows) > 0         # and COPY batches
    # each COPY batch with its scheduler counts, and the slowest one's time split in five parts
    assert all(len(window.copy_sched) == len(window.copies) for window, *_ in run.windows)
    slowest = max((ms, sched) for window, *_ in run.windows for ms, sched in zip(window.copies, window.copy_sched))
    _, asleep, text = bench.slowest_copy([window for window, *_ in run.windows])
    assert len(split := [float(part) for part in text.split(" / ")]) == 5 and min(split) >= 0
    assert split[0] > 0 and asleep == pytest.approx(max(0.0, slowest[0] - sum(slowest[1])))
    stats = run.final["stats"]
    # Every row built or inserted is in the index, pending (with the sealed rows,
    # which the bench counts as pending) or in a run set (no VACUUM, no deletes).
    assert stats["pending_rows"] + sum(stats["set_rows"]) == ROWS + INSERTS
    assert stats["flushes"] > 0 and sum(stats["set_rows"]) > ROWS  # the writers' tiny pending limit flushed
    total, generic = run.wal
    assert total > 0 and (generic is None or 0 < generic < total)
    assert (run.checked, run.mismatches, run.check_error) == (EXACT_QUERIES * len(bench.EXACT_RADII), 0, "")

    printed = capsys.readouterr().out
    assert printed.count("\n" + bench.header() + "\n") == 1
    assert "exactness mismatches" in printed and f"0 of {run.checked:,}" in printed
    assert db.execute("SELECT to_regclass('docs'), to_regclass('docs_load')").fetchone() == (None, None)
    assert "worst window / loaded fresh" in printed and "CPU p50 worst window / fresh" in printed
    assert "CPU p50 median window / loaded fresh" in printed and "middle queries (p40-p60), loaded fresh" in printed


def test_writers_keep_to_the_rate(db: psycopg.Connection) -> None:
    """--rate 600 with 2 writers: each writer starts a transaction of 100
    rows every 1/3 s at most, so the one that wrote at least half of the 1,200
    rows began its last transaction 5 transactions in, after 5/3 s at least
    (unpaced, these rows take a few tenths of a second)."""
    options = bench.parse_options([
        "--rows", "1000", "--inserts", "1200", "--writers", "2", "--copy-share", "0", "--rate", "600",
        "--queries", "10", "--exact-queries", "4", "--loaded-seconds", "0"])
    run = bench.one_run(db.info.dsn, "paced", 2, options, bench.plan_of(options, 2))
    assert run.inserted == 1200 and run.mismatches == 0
    assert run.seconds >= 5 * 100 * 2 / 600


def test_mismatch_is_any_difference_from_brute_force() -> None:
    truth = {1: 0, 2: 3, 3: 5}
    assert not bench.mismatch([2, 1], truth, 3)
    assert not bench.mismatch([1, 2, 3], truth, 8)
    assert bench.mismatch([1], truth, 3)            # a row missing
    assert bench.mismatch([1, 2, 3], truth, 3)      # a row too far
    assert bench.mismatch([1, 2, 2], truth, 3)      # a row twice


@pytest.mark.skipif(bench.pgbench_binary() is None, reason="no pgbench in $PG_CONFIG's bindir or on PATH")
def test_writer_scaling_measures_each_index_at_each_writer_count(db: psycopg.Connection, tmp_path: Path,
                                                                  capsys) -> None:
    # A tiny pending limit (through pgbench's PGOPTIONS): simhash_mih flushes while pgbench inserts.
    options = bench.parse_options(["--rows", "2000", "--scaling-writers", "2,1", "--scaling-seconds", "1",
                                   "--scaling-rounds", "1", "--pending-limit", "300"])
    # writer_scaling exits when a window's new rows differ from pgbench's transactions x 100.
    info = db.info
    dsn = f"host={info.host} port={info.port} user={info.user} dbname={info.dbname}"
    results = bench.writer_scaling(dsn, options, tmp_path)

    assert [(r.index, r.writers) for r in results] == [(name, w) for name, _ in bench.SCALING_INDEXES for w in (1, 2)]
    assert all(r.rows_per_second > 0 and r.latency_ms > 0 and r.client_us > 0 for r in results)
    # The server's CPU per row: its processes on this machine, run by the harness.
    assert all(r.server_us > 0 for r in results)
    table = capsys.readouterr().out.split("2w/1w")[1]
    for name, _ in bench.SCALING_INDEXES:
        assert f"\n  {name} " in table
    assert db.execute("SELECT to_regclass('docs')").fetchone() == (None,)
