"""report: one self-contained HTML file to choose a near-duplicate threshold by looking.

The numbers come from the database: simhash_nearest_distances (SQL 1.2) gives,
for a sample of the table's rows (every row up to --sample-size), the nearest
other row within --max-distance bits, by index radius queries; simhash_clusters
gives the clusters at the chosen threshold.  Python only draws: a histogram of
the nearest distances (overall and for the largest scopes), sample pairs at
each distance with a word diff of their texts, the largest clusters, and a
suggested threshold (the valley of the histogram), labelled as a suggestion.

Files (the sources `fingerprint` reads) are fingerprinted here and loaded into
a temporary table of the database named by --dsn, with a simhash_mih index.
Without the extension (the plain back end, docs/managed.md) the same sample's
nearest rows and the clusters are computed here from the table's rows, read
once (plain_nearest_distances): the same numbers.
Everything from the data (texts, names, scope values) is HTML-escaped; the
charts are plotly's, its JavaScript inlined (no network needed to open the file).
"""

from __future__ import annotations

import difflib
import html
import re
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, replace

import numpy as np

from .. import plain
from .._find_all import id_clusters, id_pairs, popcount
from ..backends import Backend
from .database import connect, database_backend, require_function, require_table, table_identifier
from .documents import Reading, read_documents
from .fingerprint import fingerprinter
from .errors import UserError
from .output import open_output, progress

try:
    from psycopg import sql
except ImportError:  # connect() says what is missing
    sql = None

PAIRS_PER_DISTANCE = 3
LARGEST_SCOPES = 6
LARGEST_CLUSTERS = 10
MEMBERS_SHOWN = 5
DIFF_TOKENS = 4000  # words (and spaces) of each text diffed; the rest is cut, and said so
EXCERPT = 160  # characters of a cluster member's text shown
FILES_TABLE = "simhash_report_documents"


def esc(value) -> str:
    return html.escape(str(value), quote=True)


# -- the numbers ----------------------------------------------------------------------

@dataclass
class Nearest:
    """Each sampled row's nearest other row (None: none within max_distance)."""

    rows: list[tuple[int, int | None, int | None, str | None]]  # id, nearest_id, distance, scope
    total: int  # rows in the table
    max_distance: int
    seconds: float
    indexed: bool
    plain: bool = False  # computed here (the plain back end), not by simhash_nearest_distances

    def histogram(self, scope: object = all) -> list[int]:
        """Sampled rows per nearest distance 0..max_distance, then those with none within it."""
        counts = [0] * (self.max_distance + 2)
        for _, _, distance, row_scope in self.rows:
            if scope is all or row_scope == scope:
                counts[self.max_distance + 1 if distance is None else distance] += 1
        return counts

    def largest_scopes(self) -> list[str | None]:
        sizes = Counter(row[3] for row in self.rows)
        return [scope for scope, _ in sizes.most_common(LARGEST_SCOPES)]

    def pairs(self) -> dict[int, list[tuple[int, int]]]:
        """A few (id, nearest id) pairs per distance, each pair once."""
        found: dict[int, list[tuple[int, int]]] = defaultdict(list)
        seen = set()
        for row_id, nearest_id, distance, _ in self.rows:
            key = (min(row_id, nearest_id or 0), max(row_id, nearest_id or 0))
            if distance is not None and len(found[distance]) < PAIRS_PER_DISTANCE and key not in seen:
                seen.add(key)
                found[distance].append((row_id, nearest_id))
        return found


@dataclass
class Suggestion:
    threshold: int
    reason: str


def suggest(counts: list[int]) -> Suggestion:
    """The valley between the near-duplicates (small distances) and the
    unrelated documents (the large ones): the threshold just below the
    distance fewest sampled rows have their nearest neighbour at."""
    within = counts[:-1]
    if sum(within[1:]) == 0:
        dupes = f" ({within[0]} exact duplicates)" if within[0] else ""
        return Suggestion(3, f"no sampled document has a neighbour 1..{len(within) - 1} bits away{dupes}: "
                             "nothing to separate, so the customary 3 bits for 64-bit fingerprints")
    # the unrelated documents' bump: the most common distance from 4 bits on (or "farther")
    far = max(range(4, len(counts)), key=lambda d: (counts[d], d)) if len(counts) > 4 else len(counts) - 1
    # the valley: the least populated distance between, counting its neighbours too (one empty
    # distance among busy ones is noise; a run of empty ones is a gap)
    smoothed = [sum(counts[max(d - 1, 0):d + 2]) for d in range(len(counts))]
    valley = min(range(1, max(far, 2)), key=lambda d: (smoothed[d], counts[d], d))
    peak = max(range(0, valley), key=lambda d: (counts[d], -d))
    far_label = "farther than the chart" if far == len(counts) - 1 else f"{far} bits"
    between = f"between the near-duplicates' peak at {peak} bits and the unrelated documents' at {far_label}"
    if counts[valley] == 0:
        low = high = valley
        while low > 1 and counts[low - 1] == 0:
            low -= 1
        while high + 1 < len(within) and counts[high + 1] == 0:
            high += 1
        gap = f"{low} bits" if low == high else f"{low}..{high} bits"
        return Suggestion(low - 1, f"the valley of the distribution: no sampled document has its nearest neighbour "
                                   f"{gap} away, {between}; any threshold from {low - 1} to {high} finds the same pairs")
    return Suggestion(valley, f"the valley of the distribution: fewest sampled documents ({counts[valley]}) have "
                              f"their nearest neighbour {valley} bits away (and few at the distances beside it), "
                              f"{between}")


def has_index(conn, table: str, column: str) -> bool:
    """Whether an index of the table covers the fingerprint column (its radius queries use it)."""
    return conn.execute(
        "SELECT EXISTS (SELECT FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
        "AND a.attnum = ANY (i.indkey) WHERE i.indrelid = %s::regclass AND a.attname = %s)",
        (table_identifier(table).as_string(conn), column)).fetchone()[0]


def nearest_distances(conn, table: str, args) -> Nearest:
    regclass = table_identifier(table).as_string(conn)
    total = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(table_identifier(table))).fetchone()[0]
    started = time.perf_counter()
    rows = conn.execute("SELECT id, nearest_id, distance, scope FROM simhash_nearest_distances(%s::regclass, %s, %s, "
                        "%s, %s, %s)", (regclass, args.id_column, args.fingerprint_column, args.scope,
                                        args.sample_size, args.max_distance)).fetchall()
    return Nearest(rows, total, args.max_distance, time.perf_counter() - started,
                   has_index(conn, table, args.fingerprint_column))


# The plain back end (docs/managed.md): simhash_nearest_distances's sample,
# the same SQL on a bigint column; every row then comes to the client once
# (ids, fingerprints and, with --scope, a number per scope value), and the
# nearest rows and the clusters are computed here with numpy, equal to the
# extension's (same sample, same ties: the smallest distance, then id).
PLAIN_SAMPLE = ("SELECT {id}::bigint, {fp}::bigint, {scope} FROM {table} WHERE {id} IS NOT NULL AND {fp} IS NOT NULL "
                "ORDER BY hashint8({id}::bigint), {id} LIMIT %s")
PLAIN_ROWS = ("SELECT {id}::bigint, {fp}::bigint, dense_rank() OVER (ORDER BY {scope} COLLATE \"C\")::bigint "
              "FROM {table} WHERE {id} IS NOT NULL AND {fp} IS NOT NULL")


@dataclass
class PlainRows:
    """Every row of the table with a fingerprint: ids, fingerprints, scope numbers (one per scope value)."""

    ids: object
    fps: object
    scopes: object


def plain_nearest_distances(conn, table: str, args) -> tuple[Nearest, PlainRows]:
    names = dict(id=sql.Identifier(args.id_column), fp=sql.Identifier(args.fingerprint_column),
                 table=table_identifier(table),
                 scope=sql.SQL("{}::text").format(sql.Identifier(args.scope)) if args.scope else sql.SQL("NULL::text"))
    total = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(table_identifier(table))).fetchone()[0]
    started = time.perf_counter()
    sample = [(row_id, scope) for row_id, _, scope in
              conn.execute(sql.SQL(PLAIN_SAMPLE).format(**names), (args.sample_size,)).fetchall()]
    try:
        ids, fps, scopes = plain.stream_rows(plain.binary_execute(conn),
                                             sql.SQL(PLAIN_ROWS).format(**names).as_string(conn), columns=3)
    except ValueError as e:
        raise UserError(f"{table}.{args.id_column}: {e}") from None
    order = np.lexsort((ids, scopes))  # rows by scope, then id: ties go to the smallest id
    ids, fps, scopes = ids[order], fps[order], scopes[order]
    by_id = np.argsort(ids)
    rows = []
    for row_id, scope in sample:
        own = int(by_id[np.searchsorted(ids, row_id, sorter=by_id)])
        lo, hi = np.searchsorted(scopes, scopes[own], "left"), np.searchsorted(scopes, scopes[own], "right")
        distances = popcount(fps[lo:hi] ^ fps[own]).astype(np.int16)
        distances[own - lo] = 65  # not itself
        nearest = int(distances.min())
        if nearest <= args.max_distance:
            rows.append((row_id, int(ids[lo + int(np.argmax(distances == nearest))]), nearest, scope))
        else:
            rows.append((row_id, None, None, scope))
    return (Nearest(rows, total, args.max_distance, time.perf_counter() - started,
                    has_index(conn, table, args.fingerprint_column), plain=True),
            PlainRows(ids, fps, scopes))


def plain_largest_clusters(rows: PlainRows, threshold: int) -> tuple[list[tuple[int, list[int]]], Counter]:
    """largest_clusters on the rows streamed here: simhash_clusters's components (numpy's find_all)."""
    members = defaultdict(list)
    for member, cluster in id_clusters(id_pairs(rows.ids, rows.fps, threshold)):
        members[cluster].append(member)
    ranked = sorted(members.items(), key=lambda item: (-len(item[1]), item[0]))[:LARGEST_CLUSTERS]
    largest = [(len(ids), sorted(ids)[:MEMBERS_SHOWN]) for _, ids in ranked]
    return largest, Counter(len(ids) for ids in members.values())


def texts_of(conn, table: str, args, ids: set[int]) -> dict[int, str]:
    if not args.text_column or not ids:
        return {}
    query = sql.SQL("SELECT {id}::bigint, {text}::text FROM {table} WHERE {id} = ANY(%s)").format(
        id=sql.Identifier(args.id_column), text=sql.Identifier(args.text_column), table=table_identifier(table))
    return dict(conn.execute(query, (sorted(ids),)).fetchall())


# One pass of simhash_clusters: the largest clusters (clusters NULL, a few members
# each), then how many clusters have each size (members NULL).
CLUSTERS = """
WITH c AS (SELECT cluster_id, count(*) AS size, (array_agg(id ORDER BY id))[1:%s] AS members
           FROM simhash_clusters(%s, %s) GROUP BY cluster_id)
(SELECT NULL::bigint, size, members FROM c ORDER BY size DESC, cluster_id LIMIT %s)
UNION ALL
SELECT count(*), size, NULL FROM c GROUP BY size
"""


def largest_clusters(conn, table: str, args, threshold: int) -> tuple[list[tuple[int, list[int]]], Counter]:
    """The largest clusters at the threshold (their ids) and how many clusters have each size."""
    rows = sql.SQL("SELECT {id}::bigint, {fp}::simhash64 FROM {table}").format(
        id=sql.Identifier(args.id_column), fp=sql.Identifier(args.fingerprint_column),
        table=table_identifier(table)).as_string(conn)
    found = conn.execute(CLUSTERS, (MEMBERS_SHOWN, rows, threshold, LARGEST_CLUSTERS)).fetchall()
    largest = [(size, members) for clusters, size, members in found if clusters is None]
    return largest, Counter({size: clusters for clusters, size, _ in found if clusters is not None})


class ServerNumbers:
    """The report's numbers from the extension's SQL functions."""

    @staticmethod
    def check(conn) -> None:
        require_function(conn, "simhash_nearest_distances(regclass,name,name,name,integer,integer)", "1.2")

    @staticmethod
    def index_files(conn) -> None:
        conn.execute(f"CREATE INDEX ON {FILES_TABLE} USING simhash_mih (fingerprint)")

    @staticmethod
    def nearest(conn, table: str, args) -> tuple[Nearest, None]:
        return nearest_distances(conn, table, args), None

    @staticmethod
    def clusters(conn, table: str, args, threshold: int, rows: None):
        return largest_clusters(conn, table, args, threshold)


class ClientNumbers:
    """The plain back end's: the table's rows read once, the numbers computed here."""

    @staticmethod
    def check(conn) -> None:
        pass

    @staticmethod
    def index_files(conn) -> None:
        pass  # the rows are read whole: no index serves

    @staticmethod
    def nearest(conn, table: str, args) -> tuple[Nearest, PlainRows]:
        return plain_nearest_distances(conn, table, args)

    @staticmethod
    def clusters(conn, table: str, args, threshold: int, rows: PlainRows):
        return plain_largest_clusters(rows, threshold)


def numbers_of(backend: Backend):
    """Where a back end's report numbers come from."""
    return backend.pick(ServerNumbers, ClientNumbers)


# -- the page -------------------------------------------------------------------------

TOKEN = re.compile(r"\s+|[^\s]+")


def word_diff(a: str, b: str) -> tuple[str, str]:
    """The two texts as HTML, the words only one has marked (<del> left, <ins> right)."""
    ta, tb = TOKEN.findall(a), TOKEN.findall(b)
    cut = len(ta) > DIFF_TOKENS or len(tb) > DIFF_TOKENS
    ta, tb = ta[:DIFF_TOKENS], tb[:DIFF_TOKENS]
    left, right = [], []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes():
        a_part, b_part = esc("".join(ta[i1:i2])), esc("".join(tb[j1:j2]))
        if op == "equal":
            left.append(a_part)
            right.append(b_part)
        else:
            if a_part:
                left.append(f"<del>{a_part}</del>")
            if b_part:
                right.append(f"<ins>{b_part}</ins>")
    note = '<p class="cut">(the texts are longer: their first words are compared)</p>' if cut else ""
    return "".join(left) + note, "".join(right) + note


STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; }
.suggestion { background: #fff8e1; border-left: 5px solid #f0a500; padding: .8em 1em; }
.method, .cut, .muted { color: #666; font-size: .9em; }
.pair { display: grid; grid-template-columns: 1fr 1fr; gap: 1em; margin: 1em 0 2em; }
.pair > div { background: #fafafa; border: 1px solid #e3e3e3; padding: .6em; max-height: 22em; overflow: auto;
              white-space: pre-wrap; font-size: .85em; }
.pair h4 { margin: 0 0 .4em; font-size: 1em; grid-column: span 2; }
del { background: #ffd6d6; text-decoration: none; } ins { background: #d4f7d4; text-decoration: none; }
table { border-collapse: collapse; } td, th { border: 1px solid #ddd; padding: .3em .6em; vertical-align: top; }
"""


def histogram_figure(nearest: Nearest, suggestion: Suggestion):
    import plotly.graph_objects as go

    labels = [str(d) for d in range(nearest.max_distance + 1)] + [f">{nearest.max_distance}"]
    figure = go.Figure()
    overall = nearest.histogram()
    figure.add_bar(x=labels, y=overall, name="all sampled documents")
    figure.add_vline(x=suggestion.threshold + 0.5, line_dash="dash", line_color="#f0a500",
                     annotation_text=f"suggested: {suggestion.threshold} bits")
    figure.update_layout(title="Distance to the nearest other document (bits)", xaxis_title="bits",
                         yaxis_title="documents", bargap=0.1, height=420, margin=dict(t=60, b=40))
    return figure


def scopes_figure(nearest: Nearest):
    import plotly.graph_objects as go

    labels = [str(d) for d in range(nearest.max_distance + 1)] + [f">{nearest.max_distance}"]
    figure = go.Figure()
    for scope in nearest.largest_scopes():
        counts = nearest.histogram(scope)
        share = [c / max(sum(counts), 1) for c in counts]
        # escaped: plotly renders trace names through its own small HTML subset
        figure.add_bar(x=labels, y=share, name=esc("(no scope)" if scope is None else scope)[:60])
    figure.update_layout(title="Per scope (the largest): share of its sampled documents", barmode="group",
                         xaxis_title="bits", yaxis_title="share", yaxis_tickformat=".0%", height=420,
                         margin=dict(t=60, b=40))
    return figure


def chart(figure, div_id: str) -> str:
    return figure.to_html(full_html=False, include_plotlyjs=False, div_id=div_id,
                          config={"displaylogo": False, "responsive": True})


def pairs_section(nearest: Nearest, texts: dict[int, str], names: dict[int, str]) -> str:
    pairs = nearest.pairs()
    if not pairs:
        return "<p>No sampled document has another within the chart's distance: no pairs to show.</p>"
    parts = []
    for distance in sorted(pairs):
        parts.append(f'<h3 id="d{distance}">{distance} bit{"s" * (distance != 1)} apart</h3>')
        for a, b in pairs[distance]:
            if a in texts and b in texts:
                left, right = word_diff(texts[a], texts[b])
            else:
                left = right = '<span class="muted">(no text: give --text-column)</span>'
            parts.append(f'<div class="pair"><h4>{esc(names.get(a, a))} &harr; {esc(names.get(b, b))}</h4>'
                         f'<div class="text-a">{left}</div><div class="text-b">{right}</div></div>')
    return "\n".join(parts)


def clusters_section(threshold: int, largest, sizes: Counter, texts: dict[int, str], names: dict[int, str]) -> str:
    if not largest:
        return f"<p>No two documents are within {threshold} bits: no clusters.</p>"
    rows = "".join(f"<tr><td>{size}</td><td>{count}</td></tr>" for size, count in sorted(sizes.items(), reverse=True))
    members = "".join(
        f"<tr><td>{size}</td><td><ul>"
        + "".join(f"<li><b>{esc(names.get(m, m))}</b> {esc(texts.get(m, '')[:EXCERPT])}</li>" for m in ids)
        + "</ul></td></tr>" for size, ids in largest)
    return (f"<p>Clusters of documents linked by pairs within {threshold} bits (simhash_clusters, every row of "
            f"the table).</p><table><tr><th>cluster size</th><th>clusters</th></tr>{rows}</table>"
            f"<h3>The largest</h3><table><tr><th>size</th><th>members (the first {MEMBERS_SHOWN})</th></tr>"
            f"{members}</table>")


def page(title: str, nearest: Nearest, suggestion: Suggestion, chosen: int, parts: dict[str, str]) -> str:
    from plotly.offline import get_plotlyjs

    sampled = len(nearest.rows)
    how = ("every row" if sampled >= nearest.total else
           f"a sample of {sampled} of the {nearest.total} rows (the first in the order of hashint8(id))")
    index = ("through the fingerprint column's index" if nearest.indexed else
             "by sequential scans (the fingerprint column has no index: CREATE INDEX ... USING simhash_mih "
             "makes this fast)")
    search = f"simhash_nearest_distances: radius queries {index}"
    if nearest.plain:
        search = "the plain back end, without the extension: every row read once, the distances computed here"
    chosen_note = ("the suggested one" if chosen == suggestion.threshold else "chosen with --distance")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{STYLE}</style>
<script>{get_plotlyjs()}</script>
</head><body>
<h1>{esc(title)}</h1>
<div class="suggestion" id="suggestion"><b>Suggested threshold (a suggestion, not a rule): {suggestion.threshold} bits.</b>
Reason: {esc(suggestion.reason)}.  Look at the pairs below at and around it before you choose.</div>
<p class="method" id="method">Method: for {how}, the nearest other document within {nearest.max_distance} bits
({search}, {nearest.seconds:.2f} s); "&gt;{nearest.max_distance}" counts the
documents with none that near.  Clusters are computed at {chosen} bits ({chosen_note}).</p>
<h2>Distance to the nearest document</h2>
{parts['histogram']}
{parts['scopes']}
<h2>What each distance looks like</h2>
<p>For each distance, a few documents and their nearest neighbour; the words only one of them has are marked.</p>
{parts['pairs']}
<h2>Clusters at {chosen} bits</h2>
{parts['clusters']}
</body></html>
"""


# -- the command ----------------------------------------------------------------------

def load_files(conn, args, backend: Backend):
    """The sources' documents, fingerprinted here, in a temporary table with a
    simhash_mih index (on the plain back end: a bigint column, no index); the
    table's name, and the settings that read it."""
    if args.scope:
        raise UserError("--scope is a column of --table; files have none")
    fingerprint = fingerprinter(args)
    documents, total = read_documents(args.sources, args.id_field, args.text_field, Reading(args.hidden, args.encoding))
    conn.execute(f"CREATE TEMP TABLE {FILES_TABLE} (id bigint GENERATED ALWAYS AS IDENTITY, name text, "
                 f"body text, fingerprint {backend.column_type})")
    with conn.cursor().copy(f"COPY {FILES_TABLE} (name, body, fingerprint) FROM STDIN") as copy:
        for doc in progress(documents, "doc", total):
            copy.write_row((doc.name, doc.text.replace("\x00", ""), backend.to_column(fingerprint(doc.text))))
    numbers_of(backend).index_files(conn)
    conn.execute(f"ANALYZE {FILES_TABLE}")
    return f"pg_temp.{FILES_TABLE}", replace(args, id_column="id", fingerprint_column="fingerprint",
                                             text_column="body", label="name")


def column_exists(conn, table: str, column: str) -> bool:
    return conn.execute("SELECT EXISTS (SELECT FROM pg_attribute WHERE attrelid = %s::regclass AND attname = %s "
                        "AND attnum > 0 AND NOT attisdropped)",
                        (table_identifier(table).as_string(conn), column)).fetchone()[0]


def report_command(args) -> None:
    if args.sample_size < 1:
        raise UserError(f"--sample-size must be at least 1, got {args.sample_size}")
    if not 0 <= args.max_distance <= 64:
        raise UserError(f"--max-distance must be 0..64, got {args.max_distance}")
    if args.distance is not None and args.distance < 0:
        raise UserError(f"--distance must be at least 0, got {args.distance}")
    try:
        import plotly  # noqa: F401
    except ImportError:
        raise UserError("report needs plotly: pip install 'pysimhash-sql[report]'") from None
    with connect(args.dsn) as conn:
        backend = database_backend(conn, args, None if args.sources else args.fingerprint_column,
                                   creating=bool(args.sources))
        numbers = numbers_of(backend)
        if args.sources:
            for statement in backend.prepare_sql():
                conn.execute(statement)
        numbers.check(conn)
        if args.sources:
            table, args = load_files(conn, args, backend)
        else:
            table = args.table
            require_table(conn, table)
            if args.text_column is None and column_exists(conn, table, "body"):
                args = replace(args, text_column="body")  # as ingest makes it
            for option, column in (("--text-column", args.text_column), ("--scope", args.scope),
                                   ("--label", args.label), ("--id-column", args.id_column),
                                   ("--fingerprint-column", args.fingerprint_column)):
                if column and not column_exists(conn, table, column):
                    raise UserError(f"{option} {column}: table {table} has no such column")
        nearest, rows = numbers.nearest(conn, table, args)
        suggestion = suggest(nearest.histogram())
        chosen = suggestion.threshold if args.distance is None else args.distance
        largest, sizes = numbers.clusters(conn, table, args, chosen, rows)
        pair_ids = {i for pairs in nearest.pairs().values() for pair in pairs for i in pair}
        shown = pair_ids | {m for _, members in largest for m in members}
        texts = texts_of(conn, table, args, shown)
        names = {}
        if args.label:
            label_args = type("LabelArgs", (), {"id_column": args.id_column, "text_column": args.label})
            names = texts_of(conn, table, label_args, shown)
    parts = {
        "histogram": chart(histogram_figure(nearest, suggestion), "histogram"),
        "scopes": chart(scopes_figure(nearest), "scopes") if args.scope and nearest.rows else "",
        "pairs": pairs_section(nearest, texts, names),
        "clusters": clusters_section(chosen, largest, sizes, texts, names),
    }
    title = f"Near-duplicates in {', '.join(args.sources) if args.sources else table}"
    with open_output(args.output) as out:
        out.write(page(title, nearest, suggestion, chosen, parts))
