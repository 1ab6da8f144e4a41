"""refingerprint: a table's fingerprint column moved to another text spec
version online (docs/cli.md, "Moving a table to text spec version 3").

While the application keeps reading and writing the table:

1. prepare: a shadow column ``<column>_v<N>`` of the column's type, and a
   trigger that keeps it in step with the text of every row inserted or
   updated from then on: with the extension it computes the fingerprint
   (``simhash_v3(text)``); on the plain back end, which has no fingerprint in
   SQL, it empties it, and the command computes it here;
2. fill: primary-key batches, one transaction each (a progress line each);
3. indexes: every index on the column made again on the shadow column, of the
   same kind and options, with CREATE INDEX CONCURRENTLY; a UNIQUE
   constraint's as a unique index (a new fingerprint two rows share: a
   UserError naming it, the half-made index dropped);
4. swap: one short transaction takes the table's lock, fills the few rows
   still empty, drops the old column (and its indexes and constraints) and
   the trigger, renames the shadow column and its indexes to the old names,
   makes each UNIQUE constraint again from its index (ADD CONSTRAINT ...
   USING INDEX), restores NOT NULL and records the version as the column's
   comment (text_spec.comment).  Any other constraint on the column (CHECK,
   a foreign key, the primary key) is refused before anything changes.
   With ``--keep-old`` the old column is kept instead, renamed
   ``<column>_v<old version>`` with its version as its comment, nullable, its
   indexes and UNIQUE constraints dropped, and the trigger stays to keep it
   in step with the text (the rollback: the same command with ``--to <old version>``, which finds
   it as its shadow column, docs/cli.md); ``--drop-kept`` drops it and the
   trigger.

Every step is idempotent and finds its work in the catalog, so a run that was
interrupted (Ctrl-C, a lost connection, a server restart) is resumed by
running the same command again.  Until the swap nothing the application sees
has changed; after it, the column holds the new version: deploy the
application's side of the move (``SimHash64(text_spec=3)``, ``simhash_v3``)
with it.
"""

from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass

from .. import hashing, text_spec
from ..backends import Backend, MissingFunction, holding
from .database import column_spec, connect, database_backend, require_table, table_identifier
from .errors import UserError
from .fingerprint import jobs_of

try:
    import psycopg
    from psycopg import sql
except ImportError:  # connect() says so
    psycopg = None

TRIGGER = text_spec.REFINGERPRINT_TRIGGER
# The swap waits this long for the table's lock at a time, so that it never
# queues the application's queries behind it for longer; then tries again.
LOCK_TIMEOUT = "2s"
LOCK_ATTEMPTS = 30
# Passes over the rows still empty (plain back end: rows writers wrote while it
# filled); the swap fingerprints what is left under the table's lock.
FILL_PASSES = 3
# A batch that deadlocks with a writer (it locks rows in key order) is run again.
BATCH_ATTEMPTS = 5

COLUMNS = """SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, a.attgenerated <> '',
                    a.atthasdef, a.attnum
             FROM pg_attribute a WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped"""
PRIMARY_KEY = """SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid
                 AND a.attnum = ANY (i.indkey) WHERE i.indrelid = %s::regclass AND i.indisprimary"""
# The indexes that use a column (as a key, in an expression or a predicate),
# with the UNIQUE constraint an index is the index of (its name, DEFERRABLE,
# INITIALLY DEFERRED): such an index depends on its constraint, not on the column.
INDEXES_ON = """SELECT c.relname, pg_get_indexdef(c.oid), i.indisvalid, con.conname, con.condeferrable,
                       con.condeferred
                FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid
                LEFT JOIN pg_constraint con ON con.conindid = c.oid AND con.conrelid = i.indrelid
                     AND con.contype = 'u'
                WHERE c.oid IN (SELECT d.objid FROM pg_depend d WHERE d.classid = 'pg_class'::regclass
                                AND d.refclassid = 'pg_class'::regclass AND d.refobjid = %(table)s::regclass
                                AND d.refobjsubid = %(column)s
                                UNION SELECT conindid FROM pg_constraint WHERE conrelid = %(table)s::regclass
                                AND contype = 'u' AND %(column)s = ANY (conkey))
                ORDER BY c.relname"""
# The constraints on a column, or that refer to it from a table (a foreign key),
# but UNIQUE constraints (moved with their indexes) and NOT NULL (restored by the swap).
CONSTRAINTS_ON = """SELECT conname, contype::text, nullif(conrelid, %(table)s::regclass)::regclass::text
                    FROM pg_constraint
                    WHERE contype NOT IN ('u', 'n')
                    AND ((conrelid = %(table)s::regclass AND %(column)s = ANY (conkey))
                         OR (confrelid = %(table)s::regclass AND %(column)s = ANY (confkey)))
                    ORDER BY conname"""
CONSTRAINT_KINDS = {"p": "primary key", "f": "foreign key", "c": "CHECK constraint", "x": "exclusion constraint",
                    "t": "constraint trigger"}
# The views that use a column (their rewrite rules depend on it).
VIEWS_ON = """SELECT DISTINCT r.ev_class::regclass::text FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
              WHERE d.classid = 'pg_rewrite'::regclass AND d.refobjid = %s::regclass AND d.refobjsubid = %s
              ORDER BY 1"""

# The trigger function: the server's fingerprint of the new text, or (plain
# back end) an empty shadow wherever the text is new, for this command to fill.
COMPUTE_BODY = "BEGIN NEW.{shadow} := {function}(NEW.{text}); RETURN NEW; END"
EMPTY_BODY = ("BEGIN IF TG_OP = 'INSERT' OR NEW.{text} IS DISTINCT FROM OLD.{text} THEN NEW.{shadow} := NULL; "
              "END IF; RETURN NEW; END")


@dataclass
class MovedIndex:
    """An index on the column, and its twin on the shadow column."""

    name: str
    new_name: str
    constraint: str | None  # the UNIQUE constraint whose index it is (named as it), None for an index alone
    timing: str = ""  # the constraint's DEFERRABLE, INITIALLY DEFERRED


@dataclass
class Move:
    """What one run moves: names quoted for SQL, and how fingerprints are made."""

    table: sql.Composable
    regclass: str
    key: sql.Identifier
    text: sql.Identifier
    column: str
    shadow: str
    schema: sql.Identifier  # the table's: its indexes' and the trigger function's
    function_name: sql.Composable
    server: sql.Composable | None  # the SQL fingerprint function, None: computed here (plain back end)
    column_type: str  # simhash64, or bigint (the plain back end's: signed)
    backend: Backend  # the database's (--backend, or detected)
    version: int
    not_null: bool
    old_version: int  # the column's before the move
    keep_old: bool  # --keep-old: the old column kept as shadow_name(column, old_version)
    jobs: int | None  # --jobs: the cores fingerprints computed here take (None: every one)


def say(message: str) -> None:
    print(f"pysimhash-sql refingerprint: {message}", file=sys.stderr, flush=True)


shadow_name = text_spec.version_column_name


def columns_of(conn, regclass: str) -> dict[str, tuple]:
    return {row[0]: row[1:] for row in conn.execute(COLUMNS, (regclass,))}


def plan(conn, args) -> Move | None:
    """The move, checked; None when the column already holds the version."""
    require_table(conn, args.table)
    regclass = table_identifier(args.table).as_string(conn)
    columns = columns_of(conn, regclass)
    for option, name in (("--column", args.column), ("--text-column", args.text_column)):
        if name not in columns:
            raise UserError(f"{option}: table {args.table} has no column {name}")
    column_type, not_null, generated, has_default, _ = columns[args.column]
    if generated or has_default:
        raise UserError(f"{args.table}.{args.column} is a generated column or has a default: make it a plain "
                        "column first (its fingerprints would not follow the move)")
    keys = [name for (name,) in conn.execute(PRIMARY_KEY, (regclass,))]
    if len(keys) != 1:
        raise UserError(f"table {args.table} needs a one-column primary key to be moved in batches")
    current = column_spec(conn, args.table, args.column)
    shadow = shadow_name(args.column, args.to)
    if current == args.to and shadow not in columns:
        say(f"{args.table}.{args.column} holds text spec version {args.to} fingerprints already: nothing to do")
        return None
    kept = shadow_name(args.column, current)
    if args.keep_old:
        if kept in columns:
            raise UserError(f"--keep-old: table {args.table} has a column {kept} already (kept by an earlier move?): "
                            "drop or rename it first")
        check_no_views(conn, regclass, args.column, columns[args.column][4])
    check_constraints(conn, regclass, args.column, columns[args.column][4])
    backend = database_backend(conn, args, args.column, creating=True)
    server = server_function(conn, args.to, backend)
    schema, function_name = trigger_function(conn, regclass)
    return Move(table=table_identifier(args.table), regclass=regclass, key=sql.Identifier(keys[0]),
                text=sql.Identifier(args.text_column), column=args.column, shadow=shadow, schema=schema,
                function_name=function_name, server=server, column_type=column_type, backend=backend, version=args.to,
                not_null=not_null, old_version=current, keep_old=args.keep_old, jobs=jobs_of(args))


def trigger_function(conn, regclass: str) -> tuple[sql.Identifier, sql.Composable]:
    """The table's schema, and the name of its trigger's function (one per table, by its oid)."""
    oid, schema = conn.execute("SELECT c.oid, n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                               "WHERE c.oid = %s::regclass", (regclass,)).fetchone()
    schema = sql.Identifier(schema)
    return schema, sql.SQL("{}.{}").format(schema, sql.Identifier(f"{TRIGGER}_{oid}"))


def server_function(conn, version: int, backend: Backend) -> sql.Composable | None:
    """The back end's SQL fingerprint function of ``version``,
    schema-qualified; None: computed here (the plain back end)."""
    try:
        # of a text first (simhash(text) has a second parameter, with a default)
        found = backend.fingerprint_function(lambda query, params: conn.execute(query, params).fetchone(), version)
    except MissingFunction as e:
        raise UserError(f"{e}, or move with --backend plain (its fingerprints computed here)") from None
    return None if found is None else sql.Identifier(*found)


def prepare(conn, move: Move) -> None:
    """The shadow column and the trigger that keeps it in step (again, if there)."""
    with conn.transaction():
        conn.execute(sql.SQL("ALTER TABLE {} ADD COLUMN IF NOT EXISTS {} {}").format(
            move.table, sql.Identifier(move.shadow), sql.SQL(move.column_type)))
        keep_in_step(conn, move, move.shadow, move.server)


def keep_in_step(conn, move: Move, column: str, server: sql.Composable | None, *, guard: bool = False) -> None:
    """The trigger that keeps ``column`` in step with the text of the rows
    inserted or updated: ``server``'s fingerprint of it, or (None: the plain
    back end) emptied for the command to fill.  ``guard``: it also depends on
    the column (the one --keep-old kept), so that a plain DROP COLUMN is
    refused rather than leave a trigger that fails every write (--drop-kept
    drops both)."""
    body = COMPUTE_BODY if server is not None else EMPTY_BODY
    body_sql = sql.SQL(body).format(shadow=sql.Identifier(column), text=move.text,
                                    function=server or sql.SQL("")).as_string(conn)
    columns = sql.SQL(", ").join([move.text, sql.Identifier(column)] if guard else [move.text])
    conn.execute(sql.SQL("CREATE OR REPLACE FUNCTION {}() RETURNS trigger LANGUAGE plpgsql AS {}").format(
        move.function_name, sql.Literal(body_sql)))
    conn.execute(sql.SQL("DROP TRIGGER IF EXISTS {} ON {}").format(sql.Identifier(TRIGGER), move.table))
    conn.execute(sql.SQL("CREATE TRIGGER {} BEFORE INSERT OR UPDATE OF {} ON {} FOR EACH ROW "
                         "EXECUTE FUNCTION {}()").format(sql.Identifier(TRIGGER), columns, move.table,
                                                         move.function_name))


def empty_rows(conn, move: Move) -> int:
    return conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE {} IS NULL AND {} IS NOT NULL").format(
        move.table, sql.Identifier(move.shadow), move.text)).fetchone()[0]


def fill_batch(conn, move: Move, after, size: int):
    """Fills the next batch of empty rows after key ``after`` (None: the first);
    returns the batch's last key, None when there are no more."""
    shadow = sql.Identifier(move.shadow)
    bound = sql.SQL("") if after is None else sql.SQL("AND {} > %(after)s").format(move.key)
    params = {"after": after, "size": size}
    if move.server is not None:
        query = sql.SQL("""WITH batch AS (SELECT {key} FROM {table} WHERE {shadow} IS NULL {bound}
                                          ORDER BY {key} LIMIT %(size)s),
                                moved AS (UPDATE {table} t SET {shadow} = {function}(t.{text}) FROM batch
                                          WHERE t.{key} = batch.{key})
                           SELECT max({key}) FROM batch""").format(
            key=move.key, table=move.table, shadow=shadow, bound=bound, function=move.server, text=move.text)
        with conn.transaction():
            return conn.execute(query, params).fetchone()[0]
    rows = conn.execute(sql.SQL("SELECT {key}, {text}, xmin::text FROM {table} WHERE {shadow} IS NULL {bound} "
                                "ORDER BY {key} LIMIT %(size)s").format(
        key=move.key, text=move.text, table=move.table, shadow=shadow, bound=bound), params).fetchall()
    if not rows:
        return None
    store_computed(conn, move, rows)
    return rows[-1][0]


def store_computed(conn, move: Move, rows: list[tuple]) -> None:
    """Writes the fingerprints of (key, text, xmin) rows computed here, in
    one statement, each only if its row is still the version read (a row a
    writer changed since is left empty by the trigger, for a later pass)."""
    rows = [row for row in rows if row[1] is not None]
    if rows:
        conn.execute(sql.SQL("UPDATE {table} t SET {shadow} = d.fp::{type} FROM unnest(%s, %s::text[], %s::text[]) "
                             "AS d(key, fp, x) WHERE t.{key} = d.key AND t.xmin = d.x::xid").format(
            table=move.table, shadow=sql.Identifier(move.shadow), key=move.key, type=sql.SQL(move.column_type)),
            ([key for key, _, _ in rows], fingerprints_of(move, [text for _, text, _ in rows]),
             [xmin for _, _, xmin in rows]))


def fingerprints_of(move: Move, texts: list[str]) -> list[str]:
    """The texts' fingerprints in the column's text form (bigint's: signed),
    computed on move.jobs cores."""
    column = holding(move.column_type)
    return [str(column.to_column(int(fp))) for fp in hashing.fingerprints(texts, version=move.version, jobs=move.jobs)]


def fill(conn, move: Move, batch_size: int) -> None:
    """Every row's shadow fingerprint, batch by batch, with a progress line a
    batch (at most one a second); passes again over rows a writer emptied."""
    todo = empty_rows(conn, move)
    started, shown = time.monotonic(), 0.0
    say(f"filling {move.shadow}: {todo} rows to fingerprint with text spec version {move.version}")
    for fill_pass in range(1, FILL_PASSES + 1):
        if fill_pass > 1:  # the plain back end: the rows writers emptied meanwhile
            todo = empty_rows(conn, move)
            say(f"pass {fill_pass}: {todo} rows written meanwhile")
            if todo == 0:
                break
        after, done = None, 0
        while True:
            for attempt in range(BATCH_ATTEMPTS):
                try:
                    last = fill_batch(conn, move, after, batch_size)
                    break
                except (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure):
                    if attempt == BATCH_ATTEMPTS - 1:
                        raise
            if last is None:
                break
            after = last
            done += batch_size
            now = time.monotonic()
            if now - shown >= 1 and fill_pass == 1:
                shown = now
                rate = done / max(now - started, 1e-9)
                say(f"{min(done, todo)}/{todo} rows ({100 * min(done, todo) // max(todo, 1)} %), "
                    f"{rate:,.0f} rows/s")
        if move.server is not None:
            break
    say(f"filled {move.shadow} in {time.monotonic() - started:.1f} s")


def shadow_index_sql(definition: str, new_name: str, column: str, shadow: str) -> str:
    """An index's definition (pg_get_indexdef) made again on the shadow column,
    concurrently, under a new name."""
    head, sep, rest = definition.partition(" ON ")
    head = re.sub(r"^CREATE (UNIQUE )?INDEX ", r"CREATE \1INDEX CONCURRENTLY ", head)
    head = head[: head.rindex(" ") + 1] + new_name
    quoted = column if re.fullmatch(r"[a-z_][a-z0-9_$]*", column) else f'"{column.replace(chr(34), chr(34) * 2)}"'
    rest = re.sub(r'(?<![\w"$])' + re.escape(quoted) + r'(?![\w"$])', shadow.replace("\\", "\\\\"), rest)
    return head + sep + rest


def check_constraints(conn, regclass: str, column: str, attnum: int) -> None:
    """A constraint on the column that the move would lose or that would
    stop it: UserError naming it, before anything is changed.  UNIQUE
    constraints are moved (indexes), NOT NULL restored (swap); a CHECK
    constraint would be dropped with the old column, a foreign key to it
    refuses the drop, and the rest hold the column where it is."""
    for name, kind, table in conn.execute(CONSTRAINTS_ON, {"table": regclass, "column": attnum}):
        of = "" if table is None else f" of table {table}"
        raise UserError(f"{CONSTRAINT_KINDS.get(kind, 'constraint')} {name}{of} uses {column}: refingerprint moves "
                        "indexes and UNIQUE constraints only; drop it first (and make it again after the move)")


def unique_violation(error: psycopg.errors.UniqueViolation, move: Move) -> UserError:
    """A unique index or UNIQUE constraint that the new version's
    fingerprints break (two rows with the same one, on the shadow column's
    twin of it): UserError naming it, and the rows."""
    name = (error.diag.constraint_name or "").removesuffix(f"_v{move.version}")
    detail = (error.diag.message_detail or str(error)).strip().rstrip(".")
    return UserError(f"unique index {name} cannot hold on text spec version {move.version} fingerprints: {detail} "
                     "(rows with different old fingerprints and the same new one). The application's column is "
                     "unchanged: make the rows distinct, or drop the unique index or constraint, then run the same "
                     "command again")


def indexes(conn, move: Move) -> list[MovedIndex]:
    """The indexes on the column made again on the shadow column (concurrently;
    one left invalid by an interruption is dropped and made again), a UNIQUE
    constraint's as a unique index for the swap to make the constraint of."""
    columns = columns_of(conn, move.regclass)
    old = conn.execute(INDEXES_ON, {"table": move.regclass, "column": columns[move.column][4]}).fetchall()
    made = {row[0]: row[2] for row in conn.execute(INDEXES_ON, {"table": move.regclass,
                                                               "column": columns[move.shadow][4]})}
    moved = []
    for name, definition, _, constraint, deferrable, deferred in old:
        new_name = shadow_name(name, move.version)
        if made.get(new_name) is False:
            drop_index_concurrently(conn, move, new_name)
        if made.get(new_name) is not True:
            say(f"index {new_name}: CREATE INDEX CONCURRENTLY, as {name}")
            started = time.monotonic()
            try:
                conn.execute(shadow_index_sql(definition, sql.Identifier(new_name).as_string(conn),
                                              move.column, sql.Identifier(move.shadow).as_string(conn)))
            except psycopg.errors.UniqueViolation:
                # invalid, but still checked by every write: not left behind
                drop_index_concurrently(conn, move, new_name)
                raise
            say(f"index {new_name}: made in {time.monotonic() - started:.1f} s")
        timing = (" DEFERRABLE" if deferrable else "") + (" INITIALLY DEFERRED" if deferred else "")
        moved.append(MovedIndex(name, new_name, constraint, timing))
    return moved


def drop_index_concurrently(conn, move: Move, name: str) -> None:
    conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}.{}").format(move.schema, sql.Identifier(name)))


def swap(conn, move: Move, moved: list[MovedIndex]) -> None:
    """The short transaction that makes the shadow column the column."""
    column, shadow = sql.Identifier(move.column), sql.Identifier(move.shadow)
    for attempt in range(LOCK_ATTEMPTS):
        try:
            with conn.transaction():
                conn.execute(sql.SQL("SET LOCAL lock_timeout = {}").format(sql.Literal(LOCK_TIMEOUT)))
                conn.execute(sql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE").format(move.table))
                conn.execute("SET LOCAL lock_timeout = 0")
                catch_up(conn, move)
                attnum = columns_of(conn, move.regclass)[move.column][4]
                check_constraints(conn, move.regclass, move.column, attnum)  # one made since the plan
                conn.execute(sql.SQL("DROP TRIGGER {} ON {}").format(sql.Identifier(TRIGGER), move.table))
                if move.keep_old:
                    keep_old_column(conn, move, moved)
                else:
                    conn.execute(sql.SQL("DROP FUNCTION {}()").format(move.function_name))
                    conn.execute(sql.SQL("ALTER TABLE {} DROP COLUMN {}").format(move.table, column))
                conn.execute(sql.SQL("ALTER TABLE {} RENAME COLUMN {} TO {}").format(move.table, shadow, column))
                if move.not_null:
                    conn.execute(sql.SQL("ALTER TABLE {} ALTER COLUMN {} SET NOT NULL").format(move.table, column))
                for index in moved:
                    if index.constraint is not None:  # the index is renamed to the constraint's name
                        conn.execute(sql.SQL("ALTER TABLE {} ADD CONSTRAINT {} UNIQUE USING INDEX {}" + index.timing)
                                     .format(move.table, sql.Identifier(index.constraint),
                                             sql.Identifier(index.new_name)))
                    else:
                        conn.execute(sql.SQL("ALTER INDEX {}.{} RENAME TO {}").format(
                            move.schema, sql.Identifier(index.new_name), sql.Identifier(index.name)))
                conn.execute(text_spec.comment_on_column_sql(move.table.as_string(conn), column.as_string(conn),
                                                             move.version))
            return
        except psycopg.errors.LockNotAvailable:
            say(f"waiting for the table's lock (attempt {attempt + 1} of {LOCK_ATTEMPTS})")
    raise UserError(f"could not take {move.regclass}'s lock for the swap: run the same command again when the "
                    "table is less busy (the work done so far is kept)")


def check_no_views(conn, regclass: str, column: str, attnum: int) -> None:
    """--keep-old renames the old column, and a view follows a column it uses
    through a rename: it would go on showing the old version.  UserError."""
    views = [name for (name,) in conn.execute(VIEWS_ON, (regclass, attnum))]
    if views:
        raise UserError(f"--keep-old: view {', '.join(views)} uses {column}, and would show the kept old "
                        "fingerprints after the swap: drop the view first (and make it again after), or move "
                        "without --keep-old")


def keep_old_column(conn, move: Move, moved: list[MovedIndex]) -> None:
    """In the swap, --keep-old: the old column renamed to its version's name,
    nullable (new rows' values come from the trigger, or none on the plain
    back end), its version as its comment, its indexes and UNIQUE constraints
    dropped (the moved column has them now; a rollback makes them again,
    concurrently), and kept in step by the trigger."""
    kept = shadow_name(move.column, move.old_version)
    check_no_views(conn, move.regclass, move.column, columns_of(conn, move.regclass)[move.column][4])
    for index in moved:
        if index.constraint is not None:
            conn.execute(sql.SQL("ALTER TABLE {} DROP CONSTRAINT {}").format(move.table,
                                                                             sql.Identifier(index.constraint)))
        else:
            conn.execute(sql.SQL("DROP INDEX {}.{}").format(move.schema, sql.Identifier(index.name)))
    conn.execute(sql.SQL("ALTER TABLE {} RENAME COLUMN {} TO {}").format(
        move.table, sql.Identifier(move.column), sql.Identifier(kept)))
    conn.execute(sql.SQL("ALTER TABLE {} ALTER COLUMN {} DROP NOT NULL").format(move.table, sql.Identifier(kept)))
    conn.execute(text_spec.comment_on_column_sql(move.table.as_string(conn), sql.Identifier(kept).as_string(conn),
                                                 move.old_version))
    server = server_function(conn, move.old_version, move.backend)
    keep_in_step(conn, move, kept, server, guard=True)


def catch_up(conn, move: Move) -> None:
    """Under the table's lock: the rows still empty (only the plain back end
    leaves any: the rows written since its last pass)."""
    shadow = sql.Identifier(move.shadow)
    if move.server is not None:
        conn.execute(sql.SQL("UPDATE {table} SET {shadow} = {function}({text}) WHERE {shadow} IS NULL "
                             "AND {text} IS NOT NULL").format(table=move.table, shadow=shadow,
                                                               function=move.server, text=move.text))
        return
    store_computed(conn, move, conn.execute(sql.SQL(
        "SELECT {key}, {text}, xmin::text FROM {table} WHERE {shadow} IS NULL AND {text} IS NOT NULL").format(
        key=move.key, text=move.text, table=move.table, shadow=shadow)).fetchall())


def drop_kept(conn, args) -> None:
    """--drop-kept: the column --keep-old kept (a ``<column>_v<N>`` whose
    comment records version N: a shadow column of a move under way has none)
    and the trigger that keeps it in step, in one transaction."""
    require_table(conn, args.table)
    regclass = table_identifier(args.table).as_string(conn)
    columns = columns_of(conn, regclass)
    kept = [name for name in (shadow_name(args.column, version) for version in text_spec.TEXT_SPEC_VERSIONS)
            if name in columns and text_spec.spec_of_comment(
                conn.execute(text_spec.COLUMN_COMMENT_SQL, (regclass, name)).fetchone()[0]) is not None]
    if not kept:
        say(f"table {args.table} keeps no old fingerprints of {args.column}: nothing to do")
        return
    _, function_name = trigger_function(conn, regclass)
    table = table_identifier(args.table)
    with conn.transaction():
        conn.execute(sql.SQL("DROP TRIGGER IF EXISTS {} ON {}").format(sql.Identifier(TRIGGER), table))
        conn.execute(sql.SQL("DROP FUNCTION IF EXISTS {}()").format(function_name))
        for name in kept:
            conn.execute(sql.SQL("ALTER TABLE {} DROP COLUMN {}").format(table, sql.Identifier(name)))
    say(f"dropped {', '.join(kept)} and the trigger that kept it in step")


def refingerprint_command(args) -> None:
    if args.batch_size < 1:
        raise UserError(f"--batch-size must be at least 1, got {args.batch_size}")
    with connect(args.dsn) as conn:
        conn.execute("SET application_name = 'pysimhash-sql refingerprint'")
        if args.drop_kept:
            drop_kept(conn, args)
            return
        move = plan(conn, args)
        if move is None:
            return
        prepare(conn, move)
        try:
            fill(conn, move, args.batch_size)  # (a resumed run: into the shadow's unique index)
            moved = indexes(conn, move)
            swap(conn, move, moved)  # (the rows still empty)
        except psycopg.errors.UniqueViolation as error:
            raise unique_violation(error, move) from None
        say(f"{args.table}.{args.column} holds text spec version {move.version} fingerprints now "
            f"(recorded as its comment); {len(moved)} index(es) moved")
        if move.keep_old:
            say(f"the version {move.old_version} fingerprints are kept in {shadow_name(move.column, move.old_version)} "
                f"(kept in step by a trigger, without an index): roll back with --to {move.old_version}; "
                "once sure, drop them with --drop-kept")
