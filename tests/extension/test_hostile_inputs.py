"""Every SQL-callable object of the extension, called with hostile arguments,
either answers or raises a clean ERROR: never a crash, never an internal error.

The objects are enumerated from the catalogs (pg_depend on the extension), and
CALLS must name each one: a new function, operator, cast or aggregate fails
test_every_object_has_a_strategy until it gets hostile inputs here too.
Functions taking `internal` cannot be called from SQL (a test checks that), so
their strategies reach them the way the server does: through the index, the
planner, ORDER BY, aggregates, binary I/O.

A crash takes every backend down with it, so after each call the connection
must still answer with the same backend PID and postmaster start time.
"""

from __future__ import annotations

from dataclasses import dataclass

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# ---------- running a call and judging the outcome ----------


@dataclass(frozen=True)
class Sql:
    """A piece of SQL with %s placeholders and their values."""

    text: str
    params: tuple = ()
    binary: bool = False  # results in binary format (the type's send function)

    def __add__(self, other: Sql) -> Sql:
        return Sql(self.text + other.text, self.params + other.params, self.binary or other.binary)


def join(parts: list[Sql] | tuple[Sql, ...], separator: str = ", ") -> Sql:
    return Sql(separator.join(p.text for p in parts), tuple(v for p in parts for v in p.params))


# SQLSTATE classes that mean the server, not the input, is at fault.
FORBIDDEN_STATES = ("XX", "58", "57P")


def call_outcome(conn: psycopg.Connection, sql: Sql) -> str:
    """Runs sql, reading every row, in a transaction rolled back afterwards (so
    inserts and indexes do not pile up); returns "ok" or the SQLSTATE of a
    clean ERROR."""
    try:
        with conn.transaction(force_rollback=True), conn.cursor(binary=sql.binary) as cur:
            cur.execute(sql.text, sql.params)
            if cur.description is not None:
                cur.fetchall()
        return "ok"
    except psycopg.Error as error:
        state = error.sqlstate
        assert state is not None, f"connection lost (a crash?) on {sql}: {error}"
        assert not state.startswith(FORBIDDEN_STATES), f"{state} on {sql}: {error}"
        return state


class Server:
    """What a crash would change: the backend and the postmaster start time."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn
        self.identity = self._identity()

    def _identity(self) -> tuple:
        return self.conn.execute("SELECT pg_backend_pid(), pg_postmaster_start_time()").fetchone()

    def assert_survived(self, after: Sql) -> None:
        assert not self.conn.closed, f"connection closed after {after}"
        assert self._identity() == self.identity, f"backend restarted after {after}"


def run_hostile(server: Server, sql: Sql) -> str:
    outcome = call_outcome(server.conn, sql)
    server.assert_survived(sql)
    return outcome


# ---------- hostile argument values ----------


def typed(values: st.SearchStrategy, sql_type: str) -> st.SearchStrategy[Sql]:
    """A value passed as a parameter and cast to sql_type (None is SQL NULL)."""
    return values.map(lambda v: Sql(f"%s::{sql_type}", (v,)))


INT32_EDGES = [None, -(2**31), -(2**31) + 1, -65, -1, 0, 1, 2, 3, 4, 7, 16, 31, 32, 33, 63, 64, 65, 1000, 2**31 - 1]
int4s = typed(st.one_of(st.sampled_from(INT32_EDGES), st.integers(-3, 70)), "int4")
int8s = typed(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1), st.sampled_from([-(2**63), -1, 0, 2**63 - 1])), "int8")
int2s = typed(st.one_of(st.none(), st.integers(-(2**15), 2**15 - 1), st.sampled_from([-(2**15), -1, 0, 2**15 - 1])), "int2")
# numeric: integers on both sides of every bound, fractions, huge and tiny scales, NaN and infinities.
NUMERIC_EDGES = [None, "0", "-0", "1", "-1", "0.5", "-0.5", "1.0000000000000000001", "9223372036854775807",
                 "9223372036854775808", "18446744073709551615", "18446744073709551615.0", "18446744073709551615.5",
                 "18446744073709551616", "-9223372036854775808", "1e131071", "-1e131071", "1e-16383", "NaN",
                 "Infinity", "-Infinity", "0.000000000000000000000000000000000000001"]
numerics = typed(
    st.one_of(
        st.sampled_from(NUMERIC_EDGES),
        st.integers(-(2**65), 2**65).map(str),
        st.decimals(allow_nan=True, allow_infinity=True).map(str),
    ),
    "numeric",
)
bools = typed(st.sampled_from([None, True, False]), "bool")
floats = typed(st.one_of(st.none(), st.floats(), st.sampled_from([0.0, -0.0, 5e-324, 1e308, -1e308])), "float8")

# Text input of simhash64: valid forms and every near miss.
FINGERPRINT_LITERALS = [
    "0", "1", "18446744073709551615", "18446744073709551616", "99999999999999999999999",
    "0x0", "0xFFFFFFFFFFFFFFFF", "0x10000000000000000", "0x00000000000000001", "0X1f", "0x", "0xg",
    "-1", "+1", " 42 ", "\t0x2A\n", "", " ", "4 2", "1e3", "0x1_0", "NaN", "１２", "0b101", "00000000000000000000001",
    "\u00a042", "12\u0301",
]
fingerprint_texts = st.one_of(
    st.sampled_from(FINGERPRINT_LITERALS),
    st.integers(0, 2**64 - 1).map(str),
    st.integers(0, 2**64 - 1).map(hex),
    st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=24),
)
fingerprints = typed(st.one_of(st.none(), st.integers(0, 2**64 - 1).map(str), fingerprint_texts), "simhash64")
cstrings = typed(fingerprint_texts, "cstring")
byteas = typed(st.one_of(st.none(), st.binary(min_size=8, max_size=8), st.binary(max_size=12)), "bytea")
bit_strings = st.one_of(
    st.just(Sql("NULL::bit")),
    st.text("01", min_size=64, max_size=64).map(lambda bits: Sql(f"B'{bits}'")),
    st.text("01", min_size=1, max_size=70).map(lambda bits: Sql(f"B'{bits}'")),
)

# Texts: tokenizer stress, long runs of tokens (quadratic shingles), NULL.
text_characters = st.one_of(
    st.sampled_from(list("aZ09 \t\n.,-_'\x01\x7f")),
    st.characters(min_codepoint=0x80, max_codepoint=0x2FF),
    st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="\x00"),
)
long_texts = st.builds(lambda word, n: (word + " ") * n, st.sampled_from(["a", "Ärger", "x-y"]), st.integers(0, 20_000))
# One token far longer than version 2's first buffer, of characters that grow
# when normalised (ligatures, Hangul syllables, Arabic ligatures).
long_tokens = st.builds(lambda chars, n: chars * n, st.sampled_from(["ﬃ", "한", "ﷺ", "x́"]), st.integers(0, 50_000))
texts = typed(st.one_of(st.none(), st.text(text_characters, max_size=300), long_texts, long_tokens), "text")
shingle_sizes = typed(st.one_of(st.sampled_from(INT32_EDGES), st.integers(1, 20_000)), "int4")


def array_literal(elements: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Array literals of 0 to 3 dimensions with odd lower bounds and NULLs."""

    def build(ndim: int, lengths: list[int], lower: list[int], values: list[str]) -> str:
        if ndim == 0 or 0 in lengths[:ndim]:
            return "{}"
        shape = lengths[:ndim]
        needed = 1
        for length in shape:
            needed *= length
        flat = (values * needed)[:needed] if values else ["NULL"] * needed

        def nest(dims: list[int], items: list[str]) -> str:
            if len(dims) == 1:
                return "{" + ",".join(items) + "}"
            step = len(items) // dims[0]
            return "{" + ",".join(nest(dims[1:], items[i * step:(i + 1) * step]) for i in range(dims[0])) + "}"

        bounds = "".join(f"[{lb}:{lb + n - 1}]" for lb, n in zip(lower, shape))
        return f"{bounds}={nest(shape, flat)}"

    return st.builds(
        build,
        st.integers(0, 3),
        st.lists(st.integers(0, 5), min_size=3, max_size=3),
        st.lists(st.sampled_from([1, 0, -5, -(2**31) + 10, 2**31 - 10]), min_size=3, max_size=3),
        st.lists(st.one_of(st.just("NULL"), elements), max_size=30),
    )


bigint_arrays = typed(st.one_of(st.none(), array_literal(st.integers(-(2**63), 2**63 - 1).map(str))), "bigint[]")
float_arrays = typed(
    st.one_of(st.none(), array_literal(
        st.one_of(st.floats().map(repr), st.sampled_from(["NaN", "Infinity", "-Infinity", "1e308"])).map(lambda f: f'"{f}"')
    )),
    "float8[]",
)
fingerprint_arrays = typed(st.one_of(st.none(), array_literal(st.integers(0, 2**64 - 1).map(str))), "simhash64[]")
# Near-duplicates so that searches find pairs and clusters.
near_arrays = st.lists(st.sampled_from([0, 1, 3, 2**64 - 1, 2**63, 0xFF, 0xF0F0]), max_size=40).map(
    lambda fps: Sql("%s::simhash64[]", ("{" + ",".join(map(str, fps)) + "}",))
)

balls = st.one_of(
    st.builds(lambda c, r: Sql("ROW(") + join([c, r]) + Sql(")::simhash64_ball"), fingerprints, int4s),
    st.just(Sql("NULL::simhash64_ball")),
    typed(st.sampled_from(["(0,3)", "(,)", "(1,)", "(,1)", "(0x10,64)", "(1,65)", "(1,-1)", "(1,2,3)", "(1)", "()", "x"]),
          "simhash64_ball"),
)

# ---------- hostile queries for the query variants of find_all and clusters ----------

DOCS = "pg_temp.hostile_docs"
QUERIES = [
    f"SELECT id, fp FROM {DOCS}",
    f"SELECT id::int2, fp FROM {DOCS}",
    f"SELECT id::int4, fp FROM {DOCS} ORDER BY random()",
    f"SELECT -id, fp FROM {DOCS}",
    f"SELECT id, NULL::simhash64 FROM {DOCS}",
    f"SELECT NULL::int8, fp FROM {DOCS}",
    f"SELECT 1, fp FROM {DOCS}",
    f"SELECT 9223372036854775807, fp FROM {DOCS} LIMIT 1",
    f"SELECT id, fp FROM {DOCS} UNION ALL SELECT id + 1000000, fp FROM {DOCS}",
    f"SELECT id, fp FROM {DOCS} FOR UPDATE",
    f"TABLE {DOCS}",
    "VALUES (1::int8, '1'::simhash64), (2, '3'), (3, NULL)",
    "SELECT i::int8, i::int8::simhash64 FROM generate_series(1, 3000) i",
    "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 50) SELECT i, i::int8::simhash64 FROM r",
    "SELECT generate_series(1, 3)::int8, '7'::simhash64",
    # recursion: the query runs simhash_find_all and simhash_clusters itself
    f"SELECT id1, id2::simhash64 FROM simhash_find_all('SELECT id, fp FROM {DOCS}', 5)",
    f"SELECT id, cluster_id::simhash64 FROM simhash_clusters('SELECT id, fp FROM {DOCS}', 5, NULL, true)",
    # data-modifying statements that return rows (on a scratch table)
    "INSERT INTO pg_temp.hostile_scratch VALUES (1, '1') RETURNING id, fp",
    "WITH gone AS (DELETE FROM pg_temp.hostile_scratch RETURNING id, fp) SELECT * FROM gone",
    # wrong shapes and types
    f"SELECT id FROM {DOCS}", f"SELECT id, fp, fp FROM {DOCS}", f"SELECT fp, id FROM {DOCS}",
    f"SELECT id, fp::bigint FROM {DOCS}", f"SELECT id::text, fp FROM {DOCS}", f"SELECT id::numeric, fp FROM {DOCS}",
    f"SELECT id, fp::text FROM {DOCS}", f"SELECT ROW(id, fp) FROM {DOCS}", f"SELECT id::oid, fp FROM {DOCS}",
    # not one row-returning statement
    "", "   ", "-- a comment", ";", f"SELECT id, fp FROM {DOCS}; SELECT 1", "SELEC id, fp",
    f"SELECT id, fp FROM {DOCS} WHERE id = $1", "SELECT id, fp FROM no_such_table",
    f"SELECT id, fp FROM {DOCS} WHERE 1 / (id - id) = 1",
    "CREATE TABLE hostile_created (id int)", f"DROP TABLE {DOCS}", f"TRUNCATE {DOCS}", "VACUUM",
    "BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT s", "SHOW work_mem", f"EXPLAIN SELECT id, fp FROM {DOCS}",
    f"DECLARE c CURSOR FOR SELECT id, fp FROM {DOCS}", "CLOSE ALL",
    f"COPY {DOCS} TO STDOUT", f"SELECT id, fp INTO pg_temp.hostile_into FROM {DOCS}", "CALL no_such_procedure()",
    "LISTEN hostile", "SET work_mem = '64kB'", "DISCARD ALL",
    # cursors: a holdable one of the session, moved by the query itself
    "FETCH ALL FROM hostile_cursor", "FETCH BACKWARD ALL FROM hostile_cursor", "MOVE ALL IN hostile_cursor",
    "FETCH ALL FROM no_such_cursor", "EXECUTE no_such_statement",
]
value_rows = st.tuples(st.integers(-3, 3), st.one_of(st.none(), st.sampled_from([0, 1, 2, 3, 2**64 - 1])))
values_queries = st.lists(value_rows, max_size=12).map(
    lambda rows: "VALUES " + ", ".join(f"({i}::int8, {'NULL' if h is None else repr(str(h))}::simhash64)" for i, h in rows)
    if rows else "SELECT 1::int8, '1'::simhash64 WHERE false"
)
queries = typed(st.one_of(st.none(), st.sampled_from(QUERIES), values_queries), "text")

# ---------- how each object is called ----------


def function(name: str, *args: st.SearchStrategy[Sql], set_returning: bool = False) -> st.SearchStrategy[Sql]:
    head = f"SELECT count(*) FROM {name}(" if set_returning else f"SELECT {name}("
    return st.tuples(*args).map(lambda values: Sql(head) + join(values) + Sql(")"))


def operator(symbol: str, left: st.SearchStrategy[Sql], right: st.SearchStrategy[Sql]) -> st.SearchStrategy[Sql]:
    return st.tuples(left, right).map(lambda ab: Sql("SELECT ") + ab[0] + Sql(f" {symbol} ") + ab[1])


def cast(value: st.SearchStrategy[Sql], target: str) -> st.SearchStrategy[Sql]:
    return value.map(lambda v: Sql("SELECT (") + v + Sql(f")::{target}"))


def aggregate(name: str, *arrays: st.SearchStrategy[Sql]) -> st.SearchStrategy[Sql]:
    """The aggregate over the zipped elements of arrays (shorter ones padded with NULL)."""
    columns = [f"c{i}" for i in range(len(arrays))]
    return st.tuples(*arrays).map(
        lambda values: Sql(f"SELECT {name}({', '.join(columns)}) FROM unnest(") + join(values)
        + Sql(f") AS u({', '.join(columns)})")
    )


table_fingerprints = typed(st.one_of(st.integers(0, 2**64 - 1).map(str), st.sampled_from(["0", "1", "3"])), "simhash64")
radii = typed(st.one_of(st.sampled_from(INT32_EDGES), st.integers(0, 8)), "int4")

# How the server itself calls the internal-taking support functions.
index_scans = st.one_of(
    balls.map(lambda ball: Sql(f"SELECT count(*) FROM {DOCS} WHERE fp <@ ") + ball),
    st.tuples(fingerprints, radii).map(
        lambda qk: Sql(f"SELECT count(*) FROM {DOCS} WHERE hamming_within(fp, ") + join(qk) + Sql(")")
    ),
    st.tuples(fingerprints, radii).map(
        lambda qk: Sql(f"SELECT count(*) FROM {DOCS} WHERE hamming_within(") + join(qk[:1]) + Sql(", fp, ") + qk[1] + Sql(")")
    ),
)
estimates = st.one_of(
    balls.map(lambda ball: Sql(f"EXPLAIN SELECT * FROM {DOCS} WHERE fp <@ ") + ball),
    radii.map(lambda k: Sql(f"EXPLAIN SELECT * FROM {DOCS} a JOIN {DOCS} b ON a.fp <@ ROW(b.fp, ") + k
              + Sql(")::simhash64_ball")),
    radii.map(lambda k: Sql(f"EXPLAIN SELECT * FROM {DOCS} a JOIN {DOCS} b ON hamming_within(a.fp, b.fp, ") + k + Sql(")")),
)
orderings = st.sampled_from([
    Sql(f"SELECT fp FROM {DOCS} ORDER BY fp DESC LIMIT 5"),
    Sql(f"SELECT count(DISTINCT fp) FROM {DOCS}"),
    Sql(f"SELECT fp, count(*) FROM {DOCS} GROUP BY fp"),
    Sql(f"SELECT count(*) FROM {DOCS} a JOIN {DOCS} b USING (fp)"),
])


class RawFingerprint(bytes):
    """Bytes sent as a binary simhash64 parameter: the server hands them to simhash64_recv."""


binary_round_trips = st.one_of(
    st.binary(max_size=12).map(lambda raw: Sql("SELECT %b::simhash64", (RawFingerprint(raw),), binary=True)),
    fingerprints.map(lambda fp: Sql("SELECT ", binary=True) + fp),
)
agg_unweighted = aggregate("simhash_agg", bigint_arrays)
agg_weighted = aggregate("simhash_agg", bigint_arrays, float_arrays)

index_options = st.one_of(st.sampled_from([v for v in INT32_EDGES if v is not None]), st.integers(0, 17))
names = st.one_of(st.just("fp"), st.sampled_from(["id", "nope", "FP", 'fp"; DROP TABLE x; --', "", "a" * 70]))
relations = typed(
    st.one_of(st.none(), st.sampled_from([DOCS, "pg_temp.hostile_scratch", "pg_class", "pg_temp.no_such_table"])),
    "regclass",
)
column_names = typed(names, "name")
index_relations = typed(
    st.one_of(st.none(), st.sampled_from(["pg_temp.hostile_mih_fp_idx", "pg_temp.hostile_docs_fp_idx", DOCS,
                                          "pg_class", "pg_class_oid_index", "pg_temp.no_such_index"])),
    "regclass",
)
id_column_names = typed(st.one_of(st.just("id"), names), "name")
# (id, id) edges for simhash_components, and the hostile queries
edge_queries = typed(
    st.one_of(
        st.sampled_from([f"SELECT id, -id FROM {DOCS}", f"SELECT id, id % 7 FROM {DOCS}", "SELECT 1, NULL::int8",
                         "SELECT i::int8, (i / 2)::int2 FROM generate_series(1, 3000) i"]),
        st.sampled_from(QUERIES),
    ),
    "text",
)
# (part, batch) rows for the buckets' search: well made, cut short, overlong
# varints, wrong columns, and the hostile queries
BATCH_QUERIES = [
    f"SELECT (b).part, (b).batch FROM (SELECT simhash_partition_batches('SELECT id, fp FROM {DOCS}', 3, 100, 2) AS b) s",
    "SELECT 0, '\\x01'::bytea", "SELECT -1, ''::bytea", "SELECT 0, NULL::bytea", "SELECT NULL::int, ''::bytea",
    "SELECT 2147483647, '\\x000000000000000001'::bytea", "SELECT 0, '\\x0000000000000000ffffffffffffffffffffff01'::bytea",
    "SELECT 0::int2, ''::bytea", "SELECT 0, ''::text", "SELECT 0",
]
batch_queries = typed(st.one_of(st.none(), st.sampled_from(BATCH_QUERIES), st.sampled_from(QUERIES)), "text")
# names of intermediate results: made of the allowed characters or not (paths); no NUL
# or lone surrogate, which the driver refuses before the server sees them
result_names = typed(
    st.one_of(st.none(), st.lists(st.one_of(st.none(), st.sampled_from(["r_0", "", "../x", "a/b", "x" * 300]),
                                            st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"),
                                                    max_size=20)),
                                  max_size=3)),
    "text[]",
)
rows_of = st.one_of(
    st.just(f"NULL::{DOCS}"),
    st.sampled_from(["NULL::int", "NULL::simhash64", "NULL::pg_temp.hostile_scratch", "NULL::record"]),
)

CALLS: dict[str, st.SearchStrategy[Sql]] = {
    # the type: text I/O, binary I/O, casts
    "function simhash64_in(cstring)": function("simhash64_in", cstrings),
    "function simhash64_out(simhash64)": function("simhash64_out", fingerprints),
    "function simhash64_recv(internal)": binary_round_trips,
    "function simhash64_send(simhash64)": binary_round_trips,
    "function simhash64(bytea)": function("simhash64", byteas),
    "function bytea(simhash64)": function("bytea", fingerprints),
    "function simhash64(bit)": function("simhash64", bit_strings),
    'function "bit"(simhash64)': function('"bit"', fingerprints),
    "function simhash64_to_hex(simhash64)": function("simhash64_to_hex", fingerprints),
    "cast from bigint to simhash64": cast(int8s, "simhash64"),
    "function simhash64(smallint)": function("simhash64", int2s),
    "function simhash64(integer)": function("simhash64", int4s),
    "function simhash64(numeric)": function("simhash64", numerics),
    "cast from smallint to simhash64": cast(int2s, "simhash64"),
    "cast from integer to simhash64": cast(int4s, "simhash64"),
    "cast from numeric to simhash64": cast(numerics, "simhash64"),
    "cast from simhash64 to bigint": cast(fingerprints, "bigint"),
    "cast from bytea to simhash64": cast(byteas, "simhash64"),
    "cast from simhash64 to bytea": cast(fingerprints, "bytea"),
    "cast from bit to simhash64": cast(bit_strings, "simhash64"),
    "cast from simhash64 to bit": cast(fingerprints, "bit(64)"),
    # comparison, btree, hash
    **{f"function simhash64_{name}(simhash64,simhash64)": function(f"simhash64_{name}", fingerprints, fingerprints)
       for name in ["eq", "ne", "lt", "le", "gt", "ge", "cmp", "larger", "smaller"]},
    **{f"operator {op}(simhash64,simhash64)": operator(op, fingerprints, fingerprints)
       for op in ["=", "<>", "<", "<=", ">", ">=", "<~>"]},
    "function simhash64_sortsupport(internal)": orderings,
    "function simhash64_hash(simhash64)": function("simhash64_hash", fingerprints),
    "function simhash64_hash_extended(simhash64,bigint)": function("simhash64_hash_extended", fingerprints, int8s),
    "function min(simhash64)": aggregate("min", fingerprint_arrays),
    "function max(simhash64)": aggregate("max", fingerprint_arrays),
    # distance
    "function hamming_distance(simhash64,simhash64)": function("hamming_distance", fingerprints, fingerprints),
    "function hamming_within(simhash64,simhash64,integer)": function("hamming_within", fingerprints, fingerprints, int4s),
    # computing fingerprints
    "function simhash(bigint[])": function("simhash", bigint_arrays),
    "function simhash(bigint[],double precision[])": function("simhash", bigint_arrays, float_arrays),
    "function simhash(text,integer)": function("simhash", texts, shingle_sizes),
    "function simhash_tokens(text)": function("simhash_tokens", texts),
    "function simhash_shingles(text,integer)": function("simhash_shingles", texts, shingle_sizes),
    "function simhash_feature_hash(text)": function("simhash_feature_hash", texts),
    "function simhash_v2(text)": function("simhash_v2", texts),
    "function simhash_v2_tokens(text)": function("simhash_v2_tokens", texts),
    "function simhash_v2_features(text)": function("simhash_v2_features", texts),
    "function simhash_v3(text)": function("simhash_v3", texts),
    "function simhash_v3_tokens(text)": function("simhash_v3_tokens", texts),
    "function simhash_v3_features(text)": function("simhash_v3_features", texts, set_returning=True),
    "function simhash_agg(bigint)": agg_unweighted,
    "function simhash_agg(bigint,double precision)": agg_weighted,
    **{f"function simhash_agg_{part}": agg_unweighted for part in
       ["transfn(internal,bigint)", "combinefn(internal,internal)", "serialfn(internal)",
        "deserialfn(bytea,internal)", "finalfn(internal)"]},
    **{f"function simhash_wagg_{part}": agg_weighted for part in
       ["transfn(internal,bigint,double precision)", "combinefn(internal,internal)", "serialfn(internal)",
        "deserialfn(bytea,internal)", "finalfn(internal)"]},
    # find_all and clusters
    "function simhash_find_all(text,integer,integer,integer)":
        function("simhash_find_all", queries, int4s, int4s, int4s, set_returning=True),
    "function simhash_find_all(simhash64[],integer,integer)":
        function("simhash_find_all", st.one_of(fingerprint_arrays, near_arrays), int4s, int4s, set_returning=True),
    "function simhash_clusters(text,integer,integer,boolean,integer)":
        function("simhash_clusters", queries, int4s, int4s, bools, int4s, set_returning=True),
    "function simhash_clusters(simhash64[],integer,integer,boolean)":
        function("simhash_clusters", st.one_of(fingerprint_arrays, near_arrays), int4s, int4s, bools, set_returning=True),
    # the index and the planner
    "function hamming_ball(simhash64,integer)": function("hamming_ball", fingerprints, int4s),
    "function simhash64_in_ball(simhash64,simhash64_ball)": function("simhash64_in_ball", fingerprints, balls),
    "operator <@(simhash64,simhash64_ball)": operator("<@", fingerprints, balls),
    "function simhash64_ball_restrict(internal,oid,internal,integer)": estimates,
    "function simhash64_ball_joinsel(internal,oid,internal,smallint,internal)": estimates,
    "function hamming_within_support(internal)": st.one_of(index_scans, estimates),
    # ANALYZE of a fingerprint column (pair distances), then an estimate from it
    "function simhash64_analyze(internal)": st.one_of(
        st.sampled_from([Sql(f"ANALYZE {DOCS}"), Sql("ANALYZE pg_temp.hostile_scratch"),
                         Sql("ANALYZE pg_temp.hostile_mih_scoped (fp)"), Sql("ANALYZE pg_temp.hostile_mih")]),
        st.tuples(fingerprints, int4s).map(
            lambda qk: Sql(f"EXPLAIN SELECT * FROM {DOCS} WHERE fp <~> ") + qk[0] + Sql(" <= ") + qk[1]),
    ),
    "function simhash64_gin_extract_value(simhash64,internal,internal)":
        table_fingerprints.map(lambda fp: Sql(f"INSERT INTO {DOCS} (id, fp) VALUES (nextval('pg_temp.hostile_ids'), ")
                               + fp + Sql(")")),
    "function simhash64_gin_extract_query(simhash64_ball,internal,smallint,internal,internal,internal,internal)": index_scans,
    "function simhash64_gin_consistent(internal,smallint,simhash64_ball,integer,internal,internal,internal,internal)": index_scans,
    "function simhash64_gin_triconsistent(internal,smallint,simhash64_ball,integer,internal,internal,internal)": index_scans,
    "function simhash64_gin_options(internal)": st.tuples(index_options, index_options).map(
        lambda bm: Sql(f"CREATE INDEX ON pg_temp.hostile_scratch USING gin "
                       f"(fp simhash64_ops (blocks = {bm[0]}, max_distance = {bm[1]}))")
    ),
    # the simhash_mih access method: builds with hostile options and column
    # shapes, inserts and scans with hostile values, scoped ones with hostile
    # scope values of every width (pg_temp.hostile_mih has an index of its
    # own, pg_temp.hostile_mih_scoped one on (domain, n, fp))
    "function simhash_mih_handler(internal)": st.one_of(
        index_options.map(lambda runs: Sql(f"CREATE INDEX ON pg_temp.hostile_scratch USING simhash_mih (fp)"
                                           f" WITH (runs = {runs})")),
        st.sampled_from(["fp, id", "id", "id, fp, fp", "(fp::bigint), fp", "id, (id::text), (id::int4), fp",
                         "(NULL::text), fp", "fp DESC", "id, fp) WHERE (id > 5"]).map(
            lambda columns: Sql(f"CREATE INDEX ON pg_temp.hostile_scratch USING simhash_mih ({columns})")),
        balls.map(lambda ball: Sql("SELECT count(*) FROM pg_temp.hostile_mih WHERE fp <@ ") + ball),
        st.tuples(fingerprints, radii).map(
            lambda qk: Sql("SELECT count(*) FROM pg_temp.hostile_mih WHERE hamming_within(fp, ") + join(qk) + Sql(")")),
        table_fingerprints.map(lambda fp: Sql("INSERT INTO pg_temp.hostile_mih (fp) VALUES (") + fp + Sql(")")),
        st.tuples(texts, st.one_of(int2s, int4s, int8s), balls).map(
            lambda a: Sql("SELECT count(*) FROM pg_temp.hostile_mih_scoped WHERE domain = ") + a[0]
            + Sql(" AND n = ") + a[1] + Sql(" AND fp <@ ") + a[2]),
        st.tuples(texts, int8s, table_fingerprints).map(
            lambda a: Sql("INSERT INTO pg_temp.hostile_mih_scoped VALUES (") + join(a) + Sql(")")),
    ),
    "function simhash_mih_check(regclass,boolean)": function("simhash_mih_check", index_relations, bools),
    "function simhash_mih_stats(regclass)": function("simhash_mih_stats", index_relations),
    # concurrent dedupe: advisory locks (texts include NULL, the scope-less case)
    "function simhash_lock_near(simhash64,integer,text)": function("simhash_lock_near", fingerprints, int4s, texts),
    "function simhash_lock_near_batch(simhash64[],integer,text)":
        function("simhash_lock_near_batch", st.one_of(fingerprint_arrays, near_arrays), int4s, texts),
    # find_all and clusters across Citus (on this server without it: the single-node path)
    "function simhash_partition_key(simhash64,integer,integer)":
        function("simhash_partition_key", fingerprints, int4s, int4s),
    "function simhash_find_all_part(text,integer,integer)":
        function("simhash_find_all_part", queries, int4s, int4s, set_returning=True),
    "function simhash_components(text)": function("simhash_components", edge_queries, set_returning=True),
    "function simhash_partition_rows(regclass,name,name,integer,text)":
        function("simhash_partition_rows", relations, id_column_names, column_names, int4s, texts),
    "function simhash_partition_batches(text,integer,bigint,integer)":
        function("simhash_partition_batches", queries, int4s, int8s, int4s, set_returning=True),
    "function simhash_prepare_results(text[],integer,integer)":
        function("simhash_prepare_results", result_names, int4s, int4s),
    "function simhash_write_shard(regclass,name,name,integer,bigint,integer,text)":
        function("simhash_write_shard", relations, id_column_names, column_names, int4s, int8s, int4s, texts),
    "function simhash_find_all_batches(text,integer,bigint,text[])":
        function("simhash_find_all_batches", batch_queries, int4s, int8s, result_names, set_returning=True),
    "function simhash_clusters_batches(text,integer,bigint,text[])":
        function("simhash_clusters_batches", batch_queries, int4s, int8s, result_names, set_returning=True),
    "function simhash_unpack_pairs(bytea)": function("simhash_unpack_pairs", byteas, set_returning=True),
    "function simhash_find_all_distributed(regclass,name,name,integer)":
        function("simhash_find_all_distributed", relations, id_column_names, column_names, int4s, set_returning=True),
    "function simhash_clusters_distributed(regclass,name,name,integer,boolean)":
        function("simhash_clusters_distributed", relations, id_column_names, column_names, int4s, bools,
                 set_returning=True),
    # nearest-neighbour distances and their histogram (the near-duplicate report);
    # scope columns include NULL (no scope), a missing one and injection attempts
    "function simhash_nearest_distances(regclass,name,name,name,integer,integer)":
        function("simhash_nearest_distances", relations, id_column_names, column_names,
                 st.one_of(st.just(Sql("NULL")), id_column_names), int4s, int4s, set_returning=True),
    "function simhash_nn_histogram(regclass,name,name,name,integer,integer)":
        function("simhash_nn_histogram", relations, id_column_names, column_names,
                 st.one_of(st.just(Sql("NULL")), id_column_names), int4s, int4s, set_returning=True),
    "function hamming_nearest(anyelement,name,simhash64,integer,integer)":
        st.tuples(rows_of, names, fingerprints, int4s, int4s).map(
            lambda a: Sql(f"SELECT count(*) FROM hamming_nearest({a[0]}, %s::name, ", (a[1],)) + join(a[2:]) + Sql(")")
        ),
}


# ---------- the tests ----------

EXTENSION_OBJECTS = """
SELECT pg_describe_object(d.classid, d.objid, 0), p.oid IS NOT NULL AND 'internal'::regtype = ANY (p.proargtypes)
FROM pg_depend d
JOIN pg_extension e ON e.oid = d.refobjid
LEFT JOIN pg_proc p ON d.classid = 'pg_proc'::regclass AND p.oid = d.objid
WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e' AND e.extname = 'simhash'
  AND d.classid IN ('pg_proc'::regclass, 'pg_operator'::regclass, 'pg_cast'::regclass, 'pg_aggregate'::regclass)
"""

EXAMPLES = 100


def near_duplicate_rows(n: int) -> list[tuple[int, int]]:
    """Fingerprints in a few tight groups, so searches within a few bits match."""
    centres = [0, 2**64 - 1, 0x0123456789ABCDEF, 0xF0F0F0F0F0F0F0F0]
    return [(i, centres[i % 4] ^ (1 << (i * 7 % 64)) ^ (1 << (i * 13 % 64))) for i in range(1, n + 1)]


@pytest.fixture(scope="module")
def server(shared_db: psycopg.Connection):
    """shared_db with session-private (temporary) tables, a GIN index the planner
    must use, and a statement timeout in case a hostile input runs long."""
    conn = shared_db
    for statement in [
        "SET statement_timeout = '10s'",
        "SET enable_seqscan = off",
        "CREATE TEMP SEQUENCE hostile_ids START 100000",
        "CREATE TEMP TABLE hostile_docs (id bigint PRIMARY KEY, fp simhash64)",
        "CREATE TEMP TABLE hostile_scratch (id bigint, fp simhash64)",
        "CREATE TEMP TABLE hostile_mih (fp simhash64)",
        "CREATE TEMP TABLE hostile_mih_scoped (domain text, n bigint, fp simhash64)",
        "SET simhash.mih_pending_limit = 50",
        f"DECLARE hostile_cursor CURSOR WITH HOLD FOR SELECT id, fp FROM {DOCS}",
    ]:
        conn.execute(statement)
    with conn.cursor() as cur:
        cur.executemany(f"INSERT INTO {DOCS} VALUES (%s, %s::text::simhash64)",
                        [(i, str(fp)) for i, fp in near_duplicate_rows(300)])
    conn.execute(f"CREATE INDEX ON {DOCS} USING gin (fp simhash64_ops)")
    conn.execute(f"INSERT INTO pg_temp.hostile_mih SELECT fp FROM {DOCS}")
    conn.execute("CREATE INDEX ON pg_temp.hostile_mih USING simhash_mih (fp)")
    conn.execute(f"INSERT INTO pg_temp.hostile_mih_scoped SELECT 'site' || id % 5, id % 3, fp FROM {DOCS}")
    conn.execute("CREATE INDEX ON pg_temp.hostile_mih_scoped USING simhash_mih (domain, n, fp)")
    conn.execute(f"ANALYZE {DOCS}")
    oid = conn.execute("SELECT 'simhash64'::regtype::oid").fetchone()[0]
    dumper = type("RawFingerprintDumper", (psycopg.adapt.Dumper,),
                  {"format": psycopg.pq.Format.BINARY, "oid": oid, "dump": lambda self, obj: bytes(obj)})
    conn.adapters.register_dumper(RawFingerprint, dumper)
    yield Server(conn)
    for statement in ["CLOSE hostile_cursor",
                      "DROP TABLE pg_temp.hostile_docs, pg_temp.hostile_scratch, pg_temp.hostile_mih_scoped",
                      "DROP SEQUENCE pg_temp.hostile_ids", "RESET statement_timeout", "RESET enable_seqscan"]:
        conn.execute(statement)


def test_every_object_has_a_strategy(shared_db: psycopg.Connection) -> None:
    objects = {name for name, _ in shared_db.execute(EXTENSION_OBJECTS)}
    assert sorted(objects - CALLS.keys()) == [], "new extension objects need hostile inputs in CALLS"
    assert sorted(CALLS.keys() - objects) == [], "CALLS names objects the extension no longer has"


def test_internal_functions_are_not_callable(shared_db: psycopg.Connection) -> None:
    """Only the server can pass an `internal` value: SQL cannot even name one,
    so those functions are reached only through the paths CALLS exercises."""
    internal = [name for name, takes_internal in shared_db.execute(EXTENSION_OBJECTS) if takes_internal]
    assert len(internal) >= 15
    for name in internal:
        function, args = name.removeprefix("function ").split("(", 1)
        nulls = ", ".join(f"NULL::{arg}" for arg in args.rstrip(")").split(","))
        # 15+: "cannot cast type unknown to internal"; 14: "cannot accept a value of type internal"
        with pytest.raises((psycopg.errors.CannotCoerce, psycopg.errors.FeatureNotSupported)):
            shared_db.execute(f"SELECT {function}({nulls})")


@pytest.mark.parametrize("name", sorted(CALLS))
def test_hostile_call(server: Server, name: str) -> None:
    @settings(max_examples=EXAMPLES, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(CALLS[name])
    def check(sql: Sql) -> None:
        run_hostile(server, sql)

    check()


def test_find_all_calling_itself_stops_at_the_stack_limit(server: Server) -> None:
    """A query that runs simhash_find_all on a query that runs it again, without end."""
    server.conn.execute("""
        CREATE FUNCTION pg_temp.hostile_recursion() RETURNS TABLE (id bigint, fp simhash64)
        LANGUAGE plpgsql AS $$
        BEGIN
            RETURN QUERY SELECT f.id1, f.id2::simhash64
                         FROM simhash_find_all('SELECT * FROM pg_temp.hostile_recursion()') f;
        END $$""")
    try:
        assert run_hostile(server, Sql("SELECT * FROM pg_temp.hostile_recursion()")) == "54001"
    finally:
        server.conn.execute("DROP FUNCTION pg_temp.hostile_recursion()")


def test_parallel_aggregates_match_serial(db: psycopg.Connection) -> None:
    """Parallel workers serialize and combine the vote states: same result,
    and a bad weight in a worker is the same clean ERROR."""
    db.execute("""CREATE TABLE features AS
                  SELECT g % 50 AS doc, hashtextextended(g::text, 0) AS h, (g % 7) - 2.5 AS w
                  FROM generate_series(1, 200000) g""")
    db.execute("ANALYZE features")
    query = "SELECT doc, simhash_agg(h)::text, simhash_agg(h, w)::text FROM features GROUP BY doc ORDER BY doc"
    serial = db.execute(query).fetchall()
    for setting in ["parallel_setup_cost = 0", "parallel_tuple_cost = 0", "min_parallel_table_scan_size = 0",
                    "max_parallel_workers_per_gather = 2", "enable_hashagg = off"]:
        db.execute(f"SET {setting}")
    plan = "\n".join(row[0] for row in db.execute(f"EXPLAIN {query}"))
    assert "Partial GroupAggregate" in plan or "Partial HashAggregate" in plan
    assert db.execute(query).fetchall() == serial
    server = Server(db)
    db.execute("UPDATE features SET w = 'NaN' WHERE h % 1000 = 7")
    assert run_hostile(server, Sql(query)) == "22023"


BALL_ALTERATIONS = [
    "ALTER TYPE simhash64_ball ALTER ATTRIBUTE radius TYPE bigint",
    "ALTER TYPE simhash64_ball ALTER ATTRIBUTE radius TYPE text",
    "ALTER TYPE simhash64_ball ALTER ATTRIBUTE center TYPE text",
    "ALTER TYPE simhash64_ball ALTER ATTRIBUTE center TYPE bigint",
    "ALTER TYPE simhash64_ball DROP ATTRIBUTE radius",
    "ALTER TYPE simhash64_ball DROP ATTRIBUTE center",
    "ALTER TYPE simhash64_ball ADD ATTRIBUTE extra int",
    "ALTER TYPE simhash64_ball DROP ATTRIBUTE radius, ADD ATTRIBUTE radius int",
]
BALL_QUERIES = [
    "SELECT count(*) FROM docs WHERE fp <@ hamming_ball('1', 3)",
    "SELECT count(*) FROM docs WHERE fp <@ '(1,3)'",
    "SELECT count(*) FROM docs WHERE fp <@ '(1)'",
    "SELECT count(*) FROM docs WHERE hamming_within(fp, '1', 3)",
    "SELECT count(*) FROM docs WHERE hamming_within(fp, '1', 10)",
    "SELECT count(*) FROM docs a JOIN docs b ON a.fp <@ hamming_ball(b.fp, 2)",
    "SELECT '1'::simhash64 <@ hamming_ball('3', 1)",
    "EXPLAIN SELECT * FROM docs WHERE fp <@ '(1,3)'",
    "SELECT * FROM hamming_nearest(NULL::docs, 'fp', '1', 5)",
]


@pytest.mark.parametrize("alteration", BALL_ALTERATIONS)
def test_altered_ball_type(db: psycopg.Connection, alteration: str) -> None:
    """The extension's owner can ALTER its composite type: the index, the
    operator and the planner refuse the new layout cleanly or still work."""
    db.execute("CREATE TABLE docs (id int, fp simhash64)")
    db.execute("INSERT INTO docs SELECT i, (i * 1000003)::bigint::simhash64 FROM generate_series(1, 500) i")
    db.execute("CREATE INDEX ON docs USING gin (fp)")
    db.execute("SET enable_seqscan = off")
    server = Server(db)
    with db.transaction(force_rollback=True):
        db.execute(alteration)
        for query in BALL_QUERIES:
            run_hostile(server, Sql(query))


def test_renamed_fingerprint_type(db: psycopg.Connection) -> None:
    server = Server(db)
    db.execute("ALTER TYPE simhash64 RENAME TO renamed_fp")
    assert run_hostile(server, Sql("SELECT * FROM simhash_find_all('SELECT 1, NULL::renamed_fp')")) == "42704"
    assert run_hostile(server, Sql("SELECT * FROM simhash_clusters(ARRAY['1'::renamed_fp])")) == "ok"


@pytest.mark.parametrize("ddl", ["DROP EXTENSION simhash CASCADE", "ALTER EXTENSION simhash SET SCHEMA elsewhere"])
def test_query_changing_the_extension_under_find_all(db: psycopg.Connection, ddl: str) -> None:
    """The query simhash_find_all runs drops or moves the extension itself."""
    db.execute("CREATE SCHEMA elsewhere")
    db.execute("CREATE TABLE docs AS SELECT g::int8 AS id, (g % 5)::int8::simhash64 AS fp FROM generate_series(1, 100) g")
    db.execute(f"CREATE FUNCTION hostile_ddl() RETURNS bool LANGUAGE plpgsql AS $$ BEGIN {ddl}; RETURN true; END $$")
    server = Server(db)
    run_hostile(server, Sql("SELECT count(*) FROM simhash_find_all('SELECT id, fp FROM docs WHERE hostile_ddl()', 3)"))
    run_hostile(server, Sql("SELECT count(*) FROM simhash_clusters('SELECT id, fp FROM docs WHERE hostile_ddl()', 3)"))


# ---------- databases in other encodings ----------

# Words each encoding can hold, mixed with raw bytes (most not valid text there).
ENCODED_WORDS = {
    "LATIN1": ["Ärger", "über", "ÉCOLE", "naïve", "café", "ÿ", "word", "×÷", "\u00a0"],
    "EUC_JP": ["日本語", "ひらがな", "カタカナ", "漢字テスト", "ｶﾀｶﾅ", "word", "Ａ"],
    "SQL_ASCII": ["Ärger", "日本語", "word", "🙂", "naïve"],
}
PYTHON_CODECS = {"LATIN1": "latin-1", "EUC_JP": "euc_jp", "SQL_ASCII": "utf-8"}


@pytest.fixture(scope="module")
def encoded_dbs(postgresql_proc):
    """A database per encoding (C locale, from template0) with the extension."""
    server = dict(host=postgresql_proc.host, port=postgresql_proc.port, user=postgresql_proc.user)
    conns = {}
    with psycopg.connect(dbname="postgres", autocommit=True, **server) as admin:
        for encoding in ENCODED_WORDS:
            name = f"hostile_{encoding.lower()}"
            admin.execute(f"CREATE DATABASE {name} ENCODING '{encoding}' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0")
            conns[encoding] = psycopg.connect(dbname=name, autocommit=True, client_encoding="UTF8", **server)
            conns[encoding].execute("CREATE EXTENSION simhash")
        yield conns
        for encoding, conn in conns.items():
            conn.close()
            admin.execute(f"DROP DATABASE hostile_{encoding.lower()}")


def encoded_texts(encoding: str) -> st.SearchStrategy[bytes]:
    codec = PYTHON_CODECS[encoding]
    pieces = st.one_of(
        st.sampled_from(ENCODED_WORDS[encoding]).map(lambda word: word.encode(codec)),
        st.sampled_from([b" ", b", ", b"-", b"\t", b"A", b"z9"]),
        st.binary(min_size=1, max_size=3),
    )
    return st.lists(pieces, max_size=30).map(lambda parts: b"".join(parts).replace(b"\x00", b""))


TEXT_FUNCTIONS = """
SELECT convert_to(t, 'UTF8'), simhash(t, %(s)s)::text, simhash_feature_hash(t),
       ARRAY(SELECT convert_to(f, 'UTF8') FROM unnest(simhash_shingles(t, %(s)s)) f),
       ARRAY(SELECT convert_to(f, 'UTF8') FROM unnest(simhash_tokens(t)) f),
       simhash_v2(t)::text, ARRAY(SELECT convert_to(f, 'UTF8') FROM unnest(simhash_v2_features(t)) f)
FROM (SELECT convert_from(%(raw)s, current_setting('server_encoding')) AS t) x
"""


@pytest.mark.parametrize("encoding", sorted(ENCODED_WORDS))
def test_text_functions_in_other_encodings(encoded_dbs, shared_db: psycopg.Connection, encoding: str) -> None:
    """The same text gives the same fingerprint, features and hash in any
    database encoding; bytes that are not text there are a clean ERROR."""
    conn = encoded_dbs[encoding]
    server = Server(conn)

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(encoded_texts(encoding), st.sampled_from([1, 2, 3, 2**31 - 1]))
    def check(raw: bytes, size: int) -> None:
        sql = Sql(TEXT_FUNCTIONS, ({"raw": raw, "s": size},))
        try:
            row = conn.execute(sql.text, sql.params[0]).fetchone()
        except psycopg.Error as error:
            # Not text in this encoding, or (SQL_ASCII) not UTF-8: a clean ERROR.
            assert error.sqlstate in ("22021", "22P05"), f"{error.sqlstate} on {raw!r}: {error}"
            server.assert_survived(sql)
            return
        utf8, fingerprint, feature_hash, shingles, tokens, fingerprint_v2, features_v2 = row
        text = utf8.decode("utf-8")
        expected = shared_db.execute(
            "SELECT simhash(%(t)s, %(s)s)::text, simhash_feature_hash(%(t)s), simhash_shingles(%(t)s, %(s)s), "
            "simhash_tokens(%(t)s), simhash_v2(%(t)s)::text, simhash_v2_features(%(t)s)",
            {"t": text, "s": size}).fetchone()
        assert (fingerprint, feature_hash, [f.decode() for f in shingles], [f.decode() for f in tokens],
                fingerprint_v2, [f.decode() for f in features_v2]) == expected

    check()
