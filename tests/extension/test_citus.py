"""The extension on a local Citus cluster (a coordinator and 2 workers on
127.0.0.1): radius and scoped queries through each shard's GIN index equal
brute force, the distributed find_all and clusters equal the single-node
functions, and concurrent dedupe through the coordinator stores no
near-duplicates.  Skipped, with the reason, where Citus is not installed in
the private installation (as in CI).
"""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import psycopg
import pytest

from toolbox.citus_cluster import CitusCluster, citus_missing
from toolbox.readme import readme_blocks
from toolbox.dedupe_writers import CLUSTERS, MAX_DISTANCE, run_writers
from toolbox import brute_force_pairs, error_of, flip

pytestmark = pytest.mark.skipif(citus_missing() is not None, reason=citus_missing() or "")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with CitusCluster(tmp_path_factory.mktemp("citus")) as cluster:
        yield cluster


@pytest.fixture
def coordinator(cluster):
    with cluster.connect() as conn:
        yield conn
        for (table,) in conn.execute("SELECT logicalrelid::regclass::text FROM pg_dist_partition").fetchall():
            conn.execute(f"DROP TABLE IF EXISTS {table} CASCADE")


def clustered_pages(n: int, seed: int = 1) -> list[tuple[int, str, int | None]]:
    """(id, domain, fingerprint): copies of a few hundred centres at 0-5 bits,
    random fingerprints, exact duplicates and NULLs, over 5 domains."""
    rng = random.Random(seed)
    centres = [rng.getrandbits(64) for _ in range(n // 10 + 1)]
    rows = []
    for i in range(1, n + 1):
        kind = rng.random()
        if kind < 0.03:
            fp = None
        elif kind < 0.4:
            fp = rng.getrandbits(64)
        else:
            fp = flip(rng.choice(centres), rng.sample(range(64), rng.randrange(6)))
        rows.append((i, f"site{rng.randrange(5)}.example", fp))
    return rows


def load_pages(conn: psycopg.Connection, rows, distribution: str = "id", shards: int = 8) -> None:
    conn.execute("CREATE TABLE pages (id bigint NOT NULL, domain text NOT NULL, fp simhash64)")
    conn.execute("SELECT create_distributed_table('pages', %s, shard_count := %s)", (distribution, shards))
    with conn.cursor().copy("COPY pages (id, domain, fp) FROM STDIN") as copy:
        for i, domain, fp in rows:
            copy.write_row((i, domain, None if fp is None else str(fp)))


def test_the_extension_reaches_every_node(cluster) -> None:
    with cluster.connect() as conn:
        (default,) = conn.execute("SELECT default_version FROM pg_available_extensions WHERE name = 'simhash'").fetchone()
    for node in range(len(cluster.nodes)):
        with cluster.connect(node) as conn:
            assert conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'simhash'").fetchone() == (default,)


def test_radius_and_scoped_queries_equal_brute_force(coordinator) -> None:
    rows = clustered_pages(3000)
    load_pages(coordinator, rows)
    coordinator.execute("CREATE INDEX ON pages USING gin (fp) WITH (fastupdate = off)")
    coordinator.execute("ALTER TABLE pages ADD PRIMARY KEY (id)")
    # Each shard's own GIN index (on shards this small, only when seq scans are off).
    coordinator.execute("SET citus.propagate_set_commands = 'local'")
    with coordinator.transaction(force_rollback=True):
        coordinator.execute("SET LOCAL enable_seqscan = off")
        plan = "\n".join(r[0] for r in coordinator.execute(
            "EXPLAIN SELECT id FROM pages WHERE hamming_within(fp, '1', 3)").fetchall())
    assert "Task Count: 8" in plan and "Bitmap Index Scan on pages_fp_idx_" in plan
    rng = random.Random(2)
    for _ in range(40):
        q = flip(rng.choice([fp for _, _, fp in rows if fp is not None]), rng.sample(range(64), rng.randrange(3)))
        k, domain = rng.randrange(6), f"site{rng.randrange(5)}.example"
        got = sorted(i for (i,) in coordinator.execute(
            "SELECT id FROM pages WHERE hamming_within(fp, %s::text::simhash64, %s)", (str(q), k)).fetchall())
        assert got == sorted(i for i, _, fp in rows if fp is not None and (fp ^ q).bit_count() <= k)
        scoped = sorted(i for (i,) in coordinator.execute(
            "SELECT id FROM pages WHERE domain = %s AND hamming_within(fp, %s::text::simhash64, %s)",
            (domain, str(q), k)).fetchall())
        assert scoped == sorted(i for i, d, fp in rows if d == domain and fp is not None and (fp ^ q).bit_count() <= k)


def rows_of(conn, sql: str) -> list[tuple]:
    return sorted(conn.execute(sql).fetchall())


def leftovers(cluster: CitusCluster) -> list[str]:
    """What a run may leave behind, on every node: work tables, and files in
    Citus's directory of intermediate results."""
    found = []
    for node, server in enumerate(cluster.nodes):
        with cluster.connect(node) as conn:
            found += [f"node {node}: table {name}" for (name,) in conn.execute(
                "SELECT relname FROM pg_class WHERE relname LIKE 'simhash\\_work\\_%'").fetchall()]
        cache = server.datadir / "base" / "pgsql_job_cache"
        found += [f"node {node}: {path}" for path in cache.rglob("*")] if cache.exists() else []
    return found


def assert_distributed_equal_single_node(conn: psycopg.Connection, rows, ks=(0, 3, 5)) -> None:
    """find_all and clusters (with and without singletons) of pages, distributed
    and on one node, for each distance; and find_all against brute force."""
    for k in ks:
        pairs = rows_of(conn, f"SELECT * FROM simhash_find_all('SELECT id, fp FROM pages', {k})")
        assert pairs == brute_force_pairs([(i, fp) for i, _, fp in rows], k)
        assert rows_of(conn, f"SELECT * FROM simhash_find_all_distributed('pages', 'id', 'fp', {k})") == pairs
        for singletons in (False, True):
            single = rows_of(conn, f"SELECT * FROM simhash_clusters('SELECT id, fp FROM pages', {k}, NULL, {singletons})")
            assert rows_of(conn, f"SELECT * FROM simhash_clusters_distributed('pages', 'id', 'fp', {k}, {singletons})") == single


@pytest.mark.parametrize("distribution", ["id", "domain"])
def test_distributed_find_all_and_clusters_equal_single_node(cluster, coordinator, distribution) -> None:
    """By id (a unique index on the id: no duplicate check) and by domain
    (ids checked for duplicates first)."""
    rows = clustered_pages(4000, seed=3)
    load_pages(coordinator, rows, distribution, shards=6)
    if distribution == "id":
        coordinator.execute("ALTER TABLE pages ADD PRIMARY KEY (id)")
    assert_distributed_equal_single_node(coordinator, rows)
    assert leftovers(cluster) == []


# Settings of a run, for its transaction on every node (citus.propagate_set_commands):
# several buckets (a small maintenance_work_mem on the coordinator sets more,
# each worker then searches within it); the results through Citus's functions
# only, not read and written directly; the rows through temporary files on the
# workers (spilled past simhash.debug_spill_rows, and then also read through
# Citus's functions, as they no longer fit).
RUN_SETTINGS = {
    "buckets": {"maintenance_work_mem": "'1MB'"},
    "through Citus": {"maintenance_work_mem": "'1MB'", "simhash.debug_direct_results": "off"},
    "spilled": {"simhash.debug_spill_rows": "500"},
}


@pytest.mark.parametrize("settings", RUN_SETTINGS.values(), ids=RUN_SETTINGS.keys())
def test_every_way_the_rows_go_gives_the_single_node_results(cluster, coordinator, settings) -> None:
    rows = clustered_pages(20000, seed=4)
    load_pages(coordinator, rows, "domain", shards=8)
    coordinator.execute("SET citus.propagate_set_commands = 'local'")
    with coordinator.transaction():
        for name, value in settings.items():
            coordinator.execute(f"SET LOCAL {name} = {value}")
        assert_distributed_equal_single_node(coordinator, rows, ks=(3,))
    assert leftovers(cluster) == []


def test_rows_written_earlier_in_the_transaction_are_seen(coordinator) -> None:
    """The rows of each shard are read over the connection that holds the
    transaction's writes to it."""
    rows = clustered_pages(3000, seed=5)
    load_pages(coordinator, rows[:1500], "id", shards=8)
    with coordinator.transaction(force_rollback=True):
        with coordinator.cursor().copy("COPY pages (id, domain, fp) FROM STDIN") as copy:
            for i, domain, fp in rows[1500:]:
                copy.write_row((i, domain, None if fp is None else str(fp)))
        coordinator.execute("DELETE FROM pages WHERE id % 7 = 0")
        kept = [(i, d, fp) for i, d, fp in rows if i % 7 != 0]
        assert_distributed_equal_single_node(coordinator, kept, ks=(3,))


def test_a_partitioned_table(coordinator) -> None:
    """The rows of a shard of a partitioned table are those of all its partitions."""
    rows = clustered_pages(3000, seed=6)
    coordinator.execute("CREATE TABLE pages (id bigint NOT NULL, domain text NOT NULL, fp simhash64)"
                        " PARTITION BY LIST (domain)")
    for site in range(5):
        coordinator.execute(f"CREATE TABLE pages_site{site} PARTITION OF pages FOR VALUES IN ('site{site}.example')")
    coordinator.execute("SELECT create_distributed_table('pages', 'id', shard_count := 4)")
    with coordinator.cursor().copy("COPY pages (id, domain, fp) FROM STDIN") as copy:
        for i, domain, fp in rows:
            copy.write_row((i, domain, None if fp is None else str(fp)))
    assert_distributed_equal_single_node(coordinator, rows, ks=(3,))


def test_quoted_names(coordinator) -> None:
    coordinator.execute('CREATE SCHEMA "Crawl Data"')
    try:
        coordinator.execute('CREATE TABLE "Crawl Data"."Odd Pages" ("Page Id" bigint, "the fp" simhash64)')
        coordinator.execute("""SELECT create_distributed_table('"Crawl Data"."Odd Pages"', 'Page Id', shard_count := 4)""")
        coordinator.execute("""INSERT INTO "Crawl Data"."Odd Pages" SELECT g, ((g / 3) * 1024 + g % 3)::bigint::simhash64
                               FROM generate_series(1, 300) g""")
        single = rows_of(coordinator, """SELECT * FROM simhash_find_all('SELECT "Page Id", "the fp" FROM "Crawl Data"."Odd Pages"', 2)""")
        assert rows_of(coordinator, """SELECT * FROM simhash_find_all_distributed('"Crawl Data"."Odd Pages"', 'Page Id', 'the fp', 2)""") == single
        assert single
    finally:
        coordinator.execute('DROP SCHEMA "Crawl Data" CASCADE')


def test_an_error_on_a_worker_is_the_single_node_error_and_leaves_nothing(cluster, coordinator) -> None:
    """A NULL id, found only when a shard's rows are read on its worker: the
    same ERROR as on one node, and the transaction takes the work table and the
    files with it."""
    rows = clustered_pages(2000, seed=7)
    load_pages(coordinator, rows, "domain", shards=4)
    coordinator.execute("ALTER TABLE pages ALTER COLUMN id DROP NOT NULL")
    coordinator.execute("UPDATE pages SET id = NULL WHERE id = (SELECT min(id) FROM pages WHERE fp IS NOT NULL)")
    single = error_of(coordinator, "SELECT count(*) FROM simhash_find_all('SELECT id, fp FROM pages', 3)")
    for function in ("simhash_find_all_distributed", "simhash_clusters_distributed"):
        error = error_of(coordinator, f"SELECT count(*) FROM {function}('pages', 'id', 'fp', 3)")
        assert (error.sqlstate, "returned a NULL id" in str(error)) == (single.sqlstate, True)
    assert leftovers(cluster) == []


def test_cancelling_reaches_the_workers(cluster, coordinator) -> None:
    """A run waiting on a worker (a shard locked there) is cancelled by the
    statement timeout like any query, and leaves nothing behind."""
    rows = clustered_pages(2000, seed=8)
    load_pages(coordinator, rows, "id", shards=4)
    shard, port = coordinator.execute(
        "SELECT shard_name('pages'::regclass, shardid), nodeport FROM pg_dist_shard JOIN pg_dist_placement USING (shardid)"
        " JOIN pg_dist_node USING (groupid) WHERE logicalrelid = 'pages'::regclass ORDER BY shardid LIMIT 1").fetchone()
    worker = [n for n, server in enumerate(cluster.nodes) if server.port == port][0]
    with cluster.connect(worker) as locker:
        locker.execute("BEGIN")
        locker.execute("SET LOCAL citus.enable_manual_changes_to_shards = on")
        locker.execute(f"LOCK TABLE {shard} IN ACCESS EXCLUSIVE MODE")
        with coordinator.transaction():
            coordinator.execute("SET LOCAL statement_timeout = '2s'")
            error = error_of(coordinator, "SELECT count(*) FROM simhash_find_all_distributed('pages', 'id', 'fp', 3)")
        locker.execute("ROLLBACK")
    assert error.sqlstate == "57014"
    assert leftovers(cluster) == []


def test_a_repeated_id_is_the_single_node_error(coordinator) -> None:
    load_pages(coordinator, [(1, "a", 1), (2, "b", 3), (2, "c", 7), (3, "a", None), (3, "b", None)], "domain")
    for function in ("simhash_find_all_distributed", "simhash_clusters_distributed"):
        with pytest.raises(psycopg.errors.UniqueViolation, match="returned id 2 more than once"):
            coordinator.execute(f"SELECT * FROM {function}('pages', 'id', 'fp', 3)")


def test_tables_citus_does_not_shard_run_on_the_coordinator(coordinator) -> None:
    coordinator.execute("CREATE TABLE local_pages AS SELECT g::bigint AS id, (g % 7)::bigint::simhash64 AS fp"
                        " FROM generate_series(1, 50) g")
    try:
        single = coordinator.execute("SELECT * FROM simhash_find_all('SELECT id, fp FROM local_pages', 2)").fetchall()
        got = coordinator.execute("SELECT * FROM simhash_find_all_distributed('local_pages', 'id', 'fp', 2)").fetchall()
        assert sorted(got) == sorted(single) and single
        coordinator.execute("SELECT create_reference_table('local_pages')")
        got = coordinator.execute("SELECT * FROM simhash_find_all_distributed('local_pages', 'id', 'fp', 2)").fetchall()
        assert sorted(got) == sorted(single)
    finally:
        coordinator.execute("DROP TABLE local_pages")


def test_concurrent_dedupe_through_the_coordinator(cluster, coordinator) -> None:
    """tests/extension/locks/test_lock_near.py's writers, on a pages table distributed by domain:
    the advisory locks live on the coordinator, where every transaction runs."""
    coordinator.execute("CREATE TABLE pages (id bigserial, domain text NOT NULL, fingerprint simhash64 NOT NULL,"
                        " PRIMARY KEY (domain, id))")
    coordinator.execute("SELECT create_distributed_table('pages', 'domain', shard_count := 4)")
    coordinator.execute("CREATE INDEX ON pages USING gin (fingerprint) WITH (fastupdate = off)")
    assert run_writers(cluster.dsn(), lock=True) == []
    stored = coordinator.execute("SELECT domain, fingerprint::text FROM pages").fetchall()
    near = [(a, b) for a in stored for b in stored
            if a < b and a[0] == b[0] and (int(a[1]) ^ int(b[1])).bit_count() <= MAX_DISTANCE]
    assert (len(stored), near) == (CLUSTERS, [])


def test_the_recipe_runs_as_written(cluster, coordinator) -> None:
    """docs/citus.md's recipe, block by block through psql, on this cluster
    (already set up as its first section says)."""
    blocks = readme_blocks("The recipe", "sql", "docs/citus.md")
    assert len(blocks) >= 4
    psql = [str(Path(os.environ["SIMHASH_PG_BINDIR"]) / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", cluster.dsn()]
    for block in blocks:
        result = subprocess.run(psql, input=block, capture_output=True, text=True)
        assert result.returncode == 0, f"{block}\n{result.stderr}"
    assert coordinator.execute("SELECT count(*) FROM pages").fetchone() == (2000,)
    indexes = coordinator.execute("SELECT sum(result::int) FROM run_command_on_workers($$SELECT count(*)"
                                  " FROM pg_indexes WHERE indexname LIKE 'pages_fingerprint_idx_%'$$)").fetchone()
    assert indexes == (32,)  # a GIN index on every shard
    pairs = coordinator.execute(
        "SELECT count(*) FROM simhash_find_all_distributed('pages', 'id', 'fingerprint', 3)").fetchone()[0]
    assert pairs == coordinator.execute(
        "SELECT count(*) FROM simhash_find_all('SELECT id, fingerprint FROM pages', 3)").fetchone()[0] > 0
