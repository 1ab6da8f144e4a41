"""pysimhash_sql.plain and .backends: the same SQLAlchemy API on a database
without the extension (docs/managed.md), exact against brute force and equal
to the extension's results; its lock keys equal simhash_lock_near's."""

from __future__ import annotations

import random

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import BigInteger, Column, MetaData, Table, Text, create_engine, event, func, insert, select, text
from sqlalchemy.orm import aliased

from pysimhash_sql import plain
from pysimhash_sql.backends import EXTENSION, PLAIN, backend_of, set_backend
from pysimhash_sql.queries import has_near_duplicate, near_duplicate_matches, near_duplicates, run_nearest
from pysimhash_sql.sqlalchemy import SimHash64, plain_layout, register_simhash, simhash_index
from toolbox import MAX_FINGERPRINT, brute_force_within, distance, near_copies
from toolbox.data import clustered_rows, planted_fingerprints

EDGES = [0, 1, 2**63 - 1, 2**63, 2**64 - 1]
RADII = range(9)


def docs_table(metadata: MetaData, name: str = "docs", **index_options) -> Table:
    return Table(name, metadata, Column("id", BigInteger, primary_key=True), Column("fp", SimHash64),
                 simhash_index(f"{name}_fp_idx", "fp", **index_options))


def test_hash_functions_are_postgresqls(plain_engine) -> None:
    """lookup3 and hash_combine64 as the server computes them (hashtextextended
    is hash_bytes_extended on a C-collated text's bytes)."""
    rng = random.Random(31)
    texts = ["", "a", "example.org", *("".join(rng.choice("abcdéxyz0") for _ in range(n)) for n in range(1, 40))]
    seeds = [0, 1, 0x73696D686173686C, 2**64 - 1]
    with plain_engine.connect() as conn:
        for value in texts:
            for seed in seeds:
                got = conn.scalar(text('SELECT hashtextextended(:t COLLATE "C", :s)'),
                                  {"t": value, "s": plain.to_signed(seed)})
                assert plain.to_unsigned(got) == plain.hash_bytes_extended(value.encode(), seed), (value, seed)
        for value in [0, 1, 3 << 8 | 2, 2**31 - 1]:
            got = conn.scalar(text("SELECT hashint4extended(:v, 0)"), {"v": value})
            assert plain.to_unsigned(got) == plain.hash_uint32_extended(value, 0)


def _held_advisory_keys(conn) -> list[int]:
    rows = conn.execute(text("SELECT classid::bigint, objid::bigint FROM pg_locks WHERE locktype = 'advisory' "
                             "AND objsubid = 1 AND pid = pg_backend_pid()")).all()
    return sorted(plain.to_signed(high << 32 | low) for high, low in rows)


@pytest.mark.parametrize("scope", [None, "example.org", "sité"])
def test_lock_keys_are_simhash_lock_nears(simhash_engine, scope) -> None:
    rng = random.Random(7)
    with simhash_engine.connect() as conn:
        for k in [0, 1, 2, 3, 4, 6, 8, 30, 31, 32, 64]:
            fps = [rng.getrandbits(64) for _ in range(3)] + [0, MAX_FINGERPRINT]
            with conn.begin():
                conn.execute(text("SELECT simhash_lock_near_batch(CAST(:fps AS simhash64[]), :k, :scope)"),
                             {"fps": [str(fp) for fp in fps], "k": k, "scope": scope})
                assert _held_advisory_keys(conn) == plain.lock_keys(fps, k, scope), k
    with pytest.raises(ValueError, match="max_distance"):
        plain.lock_keys([1], 65)


def test_backend_detected_chosen_and_never_mixed(plain_engine, simhash_url, plain_url) -> None:
    extension_engine = create_engine(simhash_url)
    register_simhash(extension_engine)
    with extension_engine.connect():
        pass
    assert backend_of(extension_engine) == EXTENSION
    extension_engine.dispose()
    with pytest.raises(ValueError, match="already uses the plain back end"):
        set_backend(plain_engine, EXTENSION)
    with pytest.raises(ValueError, match="backend must be one of"):
        register_simhash(create_engine(plain_url), backend="managed")
    chosen = create_engine(plain_url)
    register_simhash(chosen, backend=PLAIN)
    assert backend_of(chosen) == PLAIN


def test_round_trip_as_bigint(plain_engine) -> None:
    table = docs_table(MetaData())
    table.create(plain_engine)
    with plain_engine.begin() as conn:
        conn.execute(insert(table), [{"id": i, "fp": fp} for i, fp in enumerate(EDGES)])
        assert conn.scalar(text("SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                                "WHERE attrelid = 'docs'::regclass AND attname = 'fp'")) == "bigint"
        assert dict(conn.execute(select(table.c.id, table.c.fp)).all()) == dict(enumerate(EDGES))
        # the same bits as the extension's bigint casts: 2**63 is the smallest bigint
        assert conn.scalar(text("SELECT fp FROM docs WHERE id = 3")) == -(2**63)
        assert conn.scalar(select(table.c.id).where(table.c.fp == 2**64 - 1)) == 4
        with pytest.raises(Exception, match="out of range"):
            conn.execute(insert(table), {"id": 9, "fp": 2**64})


# simhash_index's layouts: the default (simhash_mih; plain 4 blocks, k <= 3),
# GIN's with single blocks up to k = 6, and Manku's tables of 3 blocks in 6.
LAYOUTS = {"default": {}, "blocks 7, k 6": {"blocks": 7, "max_distance": 6},
           "blocks 6, k 3": {"blocks": 6, "max_distance": 3}}


@pytest.fixture(params=LAYOUTS)
def both_backends(request, plain_engine, simhash_engine):
    """The same rows (planted clusters, edges) in a table on each back end."""
    rng = random.Random(3031)
    fps = [fp for fp in planted_fingerprints(rng, 1500) if fp is not None]
    rows = [{"id": i, "fp": fp} for i, fp in enumerate(fps)]
    tables = {}
    for engine in (plain_engine, simhash_engine):
        metadata = MetaData()
        tables[engine] = docs_table(metadata, **LAYOUTS[request.param])
        metadata.create_all(engine)
        with engine.begin() as conn:
            conn.execute(insert(tables[engine]), rows)
            conn.execute(text("ANALYZE docs"))
    return fps, tables, rng


def test_radius_queries_exact_equal_on_both_backends_and_indexed(both_backends) -> None:
    """k = 0..8 against brute force on each back end; the plain queries a
    layout answers use its index (EXPLAIN), the others are the fallback scan."""
    fps, tables, rng = both_backends
    centres = [fp ^ (1 << rng.randrange(64)) for fp in rng.sample(fps, 12)] + [rng.getrandbits(64) for _ in range(4)]
    for engine, table in tables.items():
        with engine.connect() as conn:
            for centre in centres:
                for k in RADII:
                    got = conn.execute(near_duplicates(table.c.fp, centre, k)).all()
                    assert sorted(row.id for row in got) == brute_force_within(fps, centre, k), (backend_of(engine), k)
                    assert all(row.distance == distance(row.fp, centre) for row in got)
    table = next(table for engine, table in tables.items() if backend_of(engine) == PLAIN)
    plain_engine = next(engine for engine in tables if backend_of(engine) == PLAIN)
    with plain_engine.connect() as conn:
        conn.execute(text("SET enable_seqscan = off"))
        layout = plain_layout(table.c.fp)
        for k in range(layout.max_distance + 1):
            plan = "\n".join(conn.execute(text("EXPLAIN " + str(select(table.c.id).where(table.c.fp.within(5, k))
                                                                  .compile(plain_engine,
                                                                           compile_kwargs={"literal_binds": True}))))
                             .scalars())
            assert "Bitmap Index Scan on docs_fp_idx" in plan, plan
        # past the layout's max_distance: the documented fallback, a scan with the recheck alone
        beyond = str(select(table.c.id).where(table.c.fp.within(5, layout.max_distance + 1)).compile(plain_engine))
        assert "&&" not in beyond and "bit_count" in beyond


def test_run_nearest_exact_on_both_backends(both_backends) -> None:
    """run_nearest: the n nearest rows, as brute force, on each back end.  On
    the plain one: one lookup within the layout's max_distance (its block
    index) when it finds n rows, else that lookup and then the scan."""
    fps, tables, rng = both_backends
    centres = [fp ^ (1 << rng.randrange(64)) for fp in rng.sample(fps, 8)] + [rng.getrandbits(64) for _ in range(3)]
    for engine, table in tables.items():
        statements: list[str] = []

        def record(_conn, _cursor, statement, *_args) -> None:
            statements.append(statement)

        event.listen(engine, "before_cursor_execute", record)
        with engine.connect() as conn:
            for centre in centres:
                expected = sorted(distance(fp, centre) for fp in fps)
                for n in (1, 3, 10, 200):
                    statements.clear()
                    got = run_nearest(conn, table.c.fp, centre, n)
                    assert [row.distance for row in got] == expected[:n], (backend_of(engine), n)
                    assert all(row.distance == distance(row.fp, centre) for row in got)
                    if backend_of(engine) == PLAIN:
                        looked_up = sum(d <= plain_layout(table.c.fp).max_distance for d in expected) >= n
                        assert len(statements) == (1 if looked_up else 2) and "&&" in statements[0], statements
                    else:
                        assert len(statements) == 1 and "<~>" in statements[0], statements
        event.remove(engine, "before_cursor_execute", record)


def test_batch_checks_exact_on_plain(plain_engine) -> None:
    """has_near_duplicate and near_duplicate_matches: new rows against stored ones."""
    metadata = MetaData()
    stored, fresh = docs_table(metadata), docs_table(metadata, "fresh")
    metadata.create_all(plain_engine)
    values = near_copies(5, groups=40, per_group=4, max_flip=3)
    with plain_engine.begin() as conn:
        conn.execute(insert(stored), [{"id": i, "fp": fp} for i, fp in enumerate(values[::2])])
        conn.execute(insert(fresh), [{"id": i, "fp": fp} for i, fp in enumerate(values[1::2])])
        for k in (0, 2, 3, 5):
            expected = {(i, j) for i, a in enumerate(values[1::2]) for j, b in enumerate(values[::2])
                        if distance(a, b) <= k}
            matches = conn.execute(near_duplicate_matches(fresh.c.fp, stored.c.fp, k)).all()
            assert {(row[0], row[2]) for row in matches} == expected
            lonely = conn.execute(select(fresh.c.id).where(~has_near_duplicate(fresh.c.fp, stored.c.fp, k))).scalars()
            assert set(lonely) == set(range(len(values[1::2]))) - {i for i, _ in expected}
            alias = aliased(stored)
            assert conn.scalar(select(func.count()).select_from(stored).join(
                alias, func.hamming_within(stored.c.fp, alias.c.fp, k))) == sum(
                distance(a, b) <= k for a in values[::2] for b in values[::2])


def test_layouts_and_their_errors() -> None:
    assert plain.PlainLayout.from_parameters() == plain.PlainLayout(4, 3)
    assert plain.PlainLayout.from_parameters(max_distance=5) == plain.PlainLayout(6, 5)
    assert plain.PlainLayout.from_parameters(blocks=6, max_distance=3) == plain.PlainLayout(6, 3)
    layout = plain.PlainLayout(6, 3)
    assert len(layout.table_masks) == 20 and all(31 <= bin(m).count("1") <= 33 for m in layout.table_masks)
    assert sum(plain.PlainLayout(7, 6).table_masks) == MAX_FINGERPRINT  # single blocks: the whole 64 bits
    with pytest.raises(ValueError, match="blocks must be greater than max_distance"):
        plain.PlainLayout(3, 3)
    with pytest.raises(ValueError, match="more than 64"):
        plain.PlainLayout(10, 5)


@pytest.mark.parametrize("index_options", [{}, {"blocks": 6, "max_distance": 3}], ids=["default", "manku"])
def test_scoped_index_exact_and_used(plain_engine, index_options) -> None:
    """simhash_index(..., scope=[site, tenant]) on the plain back end: GIN on
    the scope columns and the key array (btree_gin); a scoped radius query
    reads it with both conditions and returns brute force's rows of that
    scope, NULL scopes matching nothing (as =); past the layout, the scan."""
    metadata = MetaData()
    table = Table("scoped", metadata, Column("id", BigInteger, primary_key=True), Column("site", Text),
                  Column("tenant", BigInteger), Column("fp", SimHash64))
    simhash_index("scoped_fp_idx", table.c.fp, scope=[table.c.site, table.c.tenant], **index_options)
    rng = random.Random(33)
    values = near_copies(33, groups=30, per_group=6, max_flip=4)
    sites = ["a.example", "b.example", "é.example", None]
    rows = [{"id": i, "fp": fp, "site": rng.choice(sites), "tenant": rng.randrange(2)} for i, fp in enumerate(values)]
    with plain_engine.begin() as conn:
        conn.execute(text(f"CREATE EXTENSION IF NOT EXISTS {plain.SCOPE_EXTENSION}"))
        metadata.create_all(conn)
        conn.execute(insert(table), rows)
        conn.execute(text("ANALYZE scoped"))
        assert "USING gin (site, tenant, (ARRAY[" in conn.scalar(text(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'scoped_fp_idx'"))
    layout = plain_layout(table.c.fp)
    with plain_engine.connect() as conn:
        for centre in [fp ^ (1 << rng.randrange(64)) for fp in rng.sample(values, 10)]:
            for site in sites[:3]:
                for k in (0, 2, layout.max_distance, layout.max_distance + 1):
                    query = (select(table.c.id).where(table.c.site == site, table.c.tenant == 1,
                                                      table.c.fp.within(centre, k)))
                    expected = sorted(row["id"] for row in rows if row["site"] == site and row["tenant"] == 1
                                      and distance(row["fp"], centre) <= k)
                    assert sorted(conn.scalars(query)) == expected, (site, k)
        conn.execute(text("SET enable_seqscan = off"))
        query = select(table.c.id).where(table.c.site == "a.example", table.c.tenant == 1, table.c.fp.within(5, 3))
        plan = "\n".join(conn.scalars(text("EXPLAIN " + str(query.compile(plain_engine,
                                                                      compile_kwargs={"literal_binds": True})))))
        assert "Bitmap Index Scan on scoped_fp_idx" in plan and "site = " in plan and "&&" in plan, plan


@pytest.fixture(scope="module")
def shared_plain_and_extension(postgresql_proc):
    """Two read-only databases for hypothesis (one without the extension, one
    with), as autocommit psycopg connections."""
    server = dict(host=postgresql_proc.host, port=postgresql_proc.port, user=postgresql_proc.user)
    with psycopg.connect(dbname="postgres", autocommit=True, **server) as admin:
        admin.execute("CREATE DATABASE plain_hypothesis TEMPLATE template0")
        admin.execute("CREATE DATABASE extension_hypothesis")
    with psycopg.connect(dbname="plain_hypothesis", autocommit=True, **server) as plain_conn, \
            psycopg.connect(dbname="extension_hypothesis", autocommit=True, **server) as extension_conn:
        extension_conn.execute("CREATE EXTENSION simhash")
        yield plain_conn, extension_conn
    with psycopg.connect(dbname="postgres", autocommit=True, **server) as admin:
        admin.execute("DROP DATABASE plain_hypothesis WITH (FORCE)")
        admin.execute("DROP DATABASE extension_hypothesis WITH (FORCE)")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=clustered_rows(max_k=8), layout=st.sampled_from([(4, 3), (7, 6), (6, 3), (5, 4), (9, 8), (2, 0)]),
       centre=st.integers(0, MAX_FINGERPRINT))
def test_plain_sql_is_exact_for_any_layout_and_radius(shared_plain_and_extension, data, layout, centre) -> None:
    """The plain radius SQL (key overlap and recheck, evaluated row by row) on
    clustered rows, for every radius 0..8 and a layout that may or may not
    answer it: brute force's rows, and the extension's."""
    plain_conn, extension_conn = shared_plain_and_extension
    rows, _, _ = data
    rows = [(i, fp) for i, fp in rows if fp is not None]
    centres = [centre, *(fp for _, fp in rows[:2])]
    values = ", ".join(f"({i}, ({plain.to_signed(fp)})::bigint)" for i, fp in rows) or "(0, 0::bigint)"
    present = "" if rows else " WHERE false"
    for k in RADII:
        for q in centres:
            expected = sorted(i for i, fp in rows if distance(fp, q) <= k)
            near = plain.PlainLayout(*layout).within_sql("fp", f"({plain.to_signed(q)})::bigint", str(k), k)
            got = plain_conn.execute(f"SELECT id FROM (SELECT * FROM (VALUES {values}) r (id, fp){present}) r "
                                     f"WHERE {near} ORDER BY id").fetchall()
            assert [i for (i,) in got] == expected, (layout, k)
            extension = extension_conn.execute(
                f"SELECT id FROM (SELECT * FROM (VALUES {values}) r (id, fp){present}) r "
                f"WHERE hamming_within(fp::simhash64, '{q}'::simhash64, {k}) ORDER BY id").fetchall()
            assert extension == got
