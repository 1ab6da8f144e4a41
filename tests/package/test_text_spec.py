"""pysimhash_sql/text_spec.py: values that carry their text spec version,
columns that declare theirs, and the refusals where they differ — in the
hashing layer, SQLAlchemy's SimHash64 (both back ends; reflected columns,
Alembic's autogenerate), the queries that compare two columns and the dedupe
helper."""

from __future__ import annotations

import pickle
from types import SimpleNamespace

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import BigInteger, Column, MetaData, Table, Text, column, func, insert, select, text
from sqlalchemy.exc import StatementError

from pysimhash_sql import hashing, text_spec
from pysimhash_sql.alembic import render_item
from pysimhash_sql.dedupe import insert_unless_near_duplicate
from pysimhash_sql.html import simhash_html
from pysimhash_sql.queries import has_near_duplicate, near_duplicate_matches
from pysimhash_sql.sqlalchemy import TEXT_SPEC_VERSION_LATEST, SimHash64, simhash_index

TEXT = "Near-duplicate detection in every language: 近似重复检测。"


def test_values_carry_their_version_and_stay_ints() -> None:
    v1, v2 = hashing.simhash(TEXT), hashing.simhash_v2(TEXT)
    assert (v1.text_spec, v2.text_spec) == (1, 2)
    assert hashing.fingerprint(TEXT, version=1).text_spec == 1 and hashing.fingerprint(TEXT, version=2) == v2
    assert repr(v2) == repr(int(v2)) and str(v2) == str(int(v2)) and isinstance(v2, int)
    assert pickle.loads(pickle.dumps(v2)).text_spec == 2
    assert text_spec.spec_of(v2) == 2 and text_spec.spec_of(int(v2)) is None and text_spec.spec_of("1") is None
    assert type(hashing.compute([1, 2, 3])) is int  # simhash-py's drop-in: untouched
    page = "<html><body><p>" + " ".join(["the harbour board publishes a ferry timetable"] * 5) + "</p></body></html>"
    assert simhash_html(page).text_spec == TEXT_SPEC_VERSION_LATEST == 3
    assert simhash_html(page) == hashing.simhash_v3(simhash_html.__globals__["extract_text"](page))
    assert simhash_html(page, version=2) == hashing.simhash_v2(simhash_html.__globals__["extract_text"](page))
    assert simhash_html(page, version=1) == hashing.simhash(simhash_html.__globals__["extract_text"](page))
    with pytest.raises(ValueError, match="shingle_size: a parameter of text spec version 1"):
        simhash_html(page, None, 3)


def test_check_spec_refuses_the_other_version_only() -> None:
    v1 = hashing.simhash(TEXT)
    with pytest.raises(ValueError, match="docs.fp holds text spec version 2 fingerprints, but this value was "
                                         "computed with version 1"):
        text_spec.check_spec(v1, 2, "docs.fp")
    assert text_spec.check_spec(v1, 1) == v1 and text_spec.check_spec(v1, None) == v1
    assert text_spec.check_spec(int(v1), 2) == v1  # a plain int: no known version
    for bad in (0, 4, True, "2", None):
        with pytest.raises(ValueError, match="text_spec: no text fingerprint spec version"):
            SimHash64(text_spec=bad) if bad is not None else text_spec.check_version(bad, "text_spec")


def test_version_3_is_the_default_of_every_tool() -> None:
    """One home for the default, TEXT_SPEC_VERSION_LATEST: 3, computed in SQL
    by simhash_v3 (extension 1.4); every tool that fingerprints text takes it
    unless told another version."""
    import inspect

    from pysimhash_sql import corpus_dedupe, html
    from pysimhash_sql.cli import build_parser
    from pysimhash_sql.cli.fingerprint import text_spec_of
    from pysimhash_sql.cli.settings import Settings

    assert TEXT_SPEC_VERSION_LATEST == hashing.TEXT_SPEC_VERSION_LATEST == text_spec.TEXT_SPEC_VERSION_LATEST == 3
    assert text_spec.SQL_SPEC_VERSIONS == text_spec.TEXT_SPEC_VERSIONS == (1, 2, 3)
    assert [text_spec.sql_function(v) for v in (1, 2, 3)] == ["simhash", "simhash_v2", "simhash_v3"]
    assert text_spec.SQL_FUNCTIONS_SINCE == {1: "1.0", 2: "1.3", 3: "1.4"}
    v3 = hashing.fingerprint(TEXT, version=3)
    assert v3.text_spec == 3 and SimHash64(text_spec=3).text_spec == 3
    with pytest.raises(ValueError, match=r"computed with version 3.*SQL simhash_v2\(text\)"):
        text_spec.check_spec(v3, 2, "docs.fp")
    # the CLI: every command with --spec-version, and refingerprint's --to
    parser = build_parser()
    for argv in (["fingerprint", "x.txt"], ["ingest", "x.txt"], ["report", "x.txt"], ["dedupe", "x", "-o", "y"]):
        assert text_spec_of(Settings.parsed(parser.parse_args(argv)))[0] == 3, argv
        assert text_spec_of(Settings.parsed(parser.parse_args([*argv, "--spec-version", "2"])))[0] == 2, argv
    assert parser.parse_args(["refingerprint"]).to == 3
    assert parser.parse_args(["fingerprint", "--spec-version", "3", "x.txt"]).spec_version == 3
    with pytest.raises(SystemExit):
        parser.parse_args(["fingerprint", "--spec-version", "4", "x.txt"])
    # Python: html and the corpus dedupe; SQLAlchemy's func.simhash_v3 is typed with its version
    for function in (html.simhash_html, corpus_dedupe.dedupe_records, corpus_dedupe.dedupe_table_indices):
        assert inspect.signature(function).parameters["version"].default == 3, function
    assert func.simhash_v3(column("body")).type.text_spec == 3
    assert func.simhash_v2(column("body")).type.text_spec == 2 and func.simhash(column("body")).type.text_spec == 1


def test_the_message_of_a_missing_function_names_its_extension_version() -> None:
    message = text_spec.missing_function_message(3)
    assert message == ("this database has no simhash_v3(text), text spec version 3: it comes with the simhash "
                       "extension 1.4 (ALTER EXTENSION simhash UPDATE)")
    assert "simhash_v2(text)" in text_spec.missing_function_message(2) and "extension 1.3" in \
        text_spec.missing_function_message(2)


def test_comments_record_the_version() -> None:
    assert text_spec.comment(2) == "simhash text spec 2"
    assert docs_table(2).c.fp.comment == "simhash text spec 2" and docs_table(None).c.fp.comment is None
    own = Column("fp", SimHash64(text_spec=1), comment="ours")
    assert own.comment == "ours"
    autogen = SimpleNamespace(imports=set())
    assert render_item("type", SimHash64(text_spec=2), autogen) == "SimHash64(text_spec=2)"
    assert render_item("type", SimHash64(), autogen) == "SimHash64()"
    assert text_spec.spec_of_comment("ours: simhash text spec 1.") == 1
    assert text_spec.spec_of_comment(None) is None and text_spec.spec_of_comment("fingerprints") is None


def test_refingerprint_columns_are_named_after_another_column() -> None:
    """The columns refingerprint keeps beside another (shadow or kept old):
    <column>_v<version> of a column of the table, cut to 63 bytes like the
    names it makes, and only in a table with its trigger."""
    long = "f" * text_spec.MAX_IDENTIFIER
    cut = text_spec.version_column_name(long, 1)
    assert cut == "f" * 60 + "_v1" and len(cut) == text_spec.MAX_IDENTIFIER
    columns = ["id", "body", "fp", "fp_v1", "fp_v2", "body_v9", "other_v1", long, cut]
    assert text_spec.refingerprint_columns(columns, True) == {"fp_v1", "fp_v2", cut}
    assert text_spec.refingerprint_columns(columns, False) == set()
    assert text_spec.refingerprint_columns(["fp", "fingerprint_v1"], True) == set()


def docs_table(version: int | None) -> Table:
    return Table("docs", MetaData(), Column("id", BigInteger, primary_key=True, autoincrement=True),
                 Column("body", Text), Column("fp", SimHash64(text_spec=version)))


@pytest.mark.parametrize("backend", ["extension", "plain"])
def test_a_declared_column_records_and_checks_its_version(simhash_engine, plain_engine, backend: str) -> None:
    engine = simhash_engine if backend == "extension" else plain_engine
    docs = docs_table(2)
    docs.metadata.create_all(engine)
    v1, v2 = hashing.simhash(TEXT), hashing.simhash_v2(TEXT)
    with engine.begin() as conn:
        assert conn.scalar(text("SELECT col_description('docs'::regclass, 3)")) == "simhash text spec 2"
        assert compare_metadata(MigrationContext.configure(conn), docs.metadata) == []  # autogenerate: no change
        conn.execute(insert(docs), [{"body": TEXT, "fp": v2}, {"body": "x", "fp": 12345}])  # plain ints pass
        with pytest.raises(StatementError, match="holds text spec version 2 fingerprints, but this value was "
                                                 "computed with version 1"):
            conn.execute(insert(docs), [{"body": TEXT, "fp": v1}])
    with engine.connect() as conn:
        stored = conn.scalar(select(docs.c.fp).where(docs.c.fp.within(v2, 3)))
        assert stored == v2 and stored.text_spec == 2  # read back with the column's version
        with pytest.raises(ValueError, match="version 1"):
            docs.c.fp.within(v1, 3)
        with pytest.raises(ValueError, match="version 1"):
            docs.c.fp.hamming_distance(v1)
        v1_docs = docs_table(1)
        with pytest.raises(ValueError, match="holds text spec version 1 fingerprints, but this value was computed "
                                             "with version 2"):
            v1_docs.c.fp.within(stored, 3)  # a value read from a version 2 column
        with pytest.raises(ValueError, match="a text spec version 1 column compared with a version 2 one"):
            v1_docs.c.fp.within(docs.c.fp, 3)
        assert v1_docs.c.fp.within(func.simhash(TEXT), 3) is not None  # an expression of its own version
        assert conn.scalar(select(func.count()).where(docs_table(None).c.fp.within(v1, 64))) == 2  # undeclared


def test_dedupe_refuses_a_fingerprint_of_the_other_version(simhash_engine) -> None:
    docs = docs_table(2)
    docs.metadata.create_all(simhash_engine)
    simhash_index("docs_fp_idx", docs.c.fp).create(simhash_engine)
    with simhash_engine.begin() as conn:
        stored = insert_unless_near_duplicate(conn, docs, {"body": TEXT, "fp": func.simhash_v2(TEXT)}, fingerprint="fp")
        assert stored.inserted
        again = insert_unless_near_duplicate(conn, docs, {"body": TEXT, "fp": hashing.simhash_v2(TEXT)},
                                             fingerprint="fp")
        assert again.id == stored.id and not again.inserted
        for v1 in (func.simhash(TEXT), hashing.simhash(TEXT)):
            with pytest.raises((ValueError, StatementError), match="computed with version 1"):
                insert_unless_near_duplicate(conn, docs, {"body": TEXT, "fp": v1}, fingerprint="fp")


def versioned_docs(metadata: MetaData) -> Table:
    """Columns of each version, and an undeclared one."""
    return Table("docs", metadata, Column("id", BigInteger, primary_key=True, autoincrement=True),
                 Column("body", Text), Column("fp", SimHash64(text_spec=2)), Column("old_fp", SimHash64(text_spec=1)),
                 Column("any_fp", SimHash64()))


def autogenerate_diffs(conn, metadata: MetaData) -> list:
    """What autogenerate (with the package's plugin) finds between the models and the database."""
    plugins = ["alembic.autogenerate.*", "pysimhash_sql"]
    context = MigrationContext.configure(conn, opts={"autogenerate_plugins": plugins})
    return compare_metadata(context, metadata)


@pytest.mark.parametrize("backend", ["extension", "plain"])
def test_reflected_columns_declare_the_version_their_comment_records(simhash_engine, plain_engine,
                                                                     backend: str) -> None:
    engine = simhash_engine if backend == "extension" else plain_engine
    model = MetaData()
    versioned_docs(model)
    model.create_all(engine)
    reflected_all = MetaData()
    reflected_all.reflect(engine)
    undeclared = SimHash64 if backend == "extension" else BigInteger  # plain: a bigint without the comment
    for docs in (Table("docs", MetaData(), autoload_with=engine), reflected_all.tables["docs"]):
        assert (docs.c.fp.type.text_spec, docs.c.old_fp.type.text_spec) == (2, 1)
        assert isinstance(docs.c.any_fp.type, undeclared) and getattr(docs.c.any_fp.type, "text_spec", None) is None
        assert type(docs.c.id.type) is not SimHash64
        with pytest.raises(ValueError, match="holds text spec version 2 fingerprints, but this value was computed "
                                             "with version 1"):
            docs.c.fp.within(hashing.simhash(TEXT), 3)
    with engine.begin() as conn:
        assert autogenerate_diffs(conn, model) == []  # the model's SimHash64(text_spec=N) is what was reflected
        moved = MetaData()
        versioned_docs(moved).c.old_fp.type = SimHash64(text_spec=2)
        moved.tables["docs"].c.old_fp.comment = text_spec.comment(2)
        (diff,), = autogenerate_diffs(conn, moved)  # the model moved to version 2: the comment, from version 1
        assert diff[0] == "modify_comment" and (diff[5], diff[6]) == ("simhash text spec 1", "simhash text spec 2")
        assert diff[4]["existing_type"].text_spec == 1
        conn.execute(insert(docs), [{"body": TEXT, "fp": hashing.simhash_v2(TEXT), "old_fp": hashing.simhash(TEXT)}])
        stored = conn.execute(select(docs.c.fp, docs.c.old_fp)).one()
        assert (stored.fp.text_spec, stored.old_fp.text_spec) == (2, 1)  # values carry the reflected version
        conn.execute(text("COMMENT ON COLUMN docs.any_fp IS 'simhash text spec 9'"))
        with pytest.raises(ValueError, match="the comment of docs.any_fp: no text fingerprint spec version 9"):
            Table("docs", MetaData(), autoload_with=conn)


def test_queries_refuse_two_columns_of_different_versions(simhash_engine) -> None:
    """has_near_duplicate and near_duplicate_matches compare two columns: of
    different declared versions, the comparator's ValueError."""
    docs = versioned_docs(MetaData())
    docs.create(simhash_engine)
    fresh = versioned_docs(MetaData()).to_metadata(MetaData(), name="fresh")
    fresh.create(simhash_engine)
    v1, v2 = hashing.simhash(TEXT), hashing.simhash_v2(TEXT)
    with simhash_engine.begin() as conn:
        conn.execute(insert(docs), [{"body": TEXT, "fp": v2, "old_fp": v1, "any_fp": v2}])
        conn.execute(insert(fresh), [{"body": TEXT, "fp": v2 ^ 1, "old_fp": v1 ^ 1, "any_fp": v1}])
        for query in (has_near_duplicate, near_duplicate_matches):
            for new, stored in ((fresh.c.old_fp, docs.c.fp), (fresh.c.fp, docs.c.old_fp)):
                with pytest.raises(ValueError, match="a text spec version . column compared with a version . one"):
                    query(new, stored, 3)
        # the same version, or an undeclared side: answered
        fresh_rows = select(func.count()).select_from(fresh)
        assert conn.scalar(fresh_rows.where(has_near_duplicate(fresh.c.fp, docs.c.fp, 1))) == 1
        assert conn.scalar(fresh_rows.where(has_near_duplicate(fresh.c.any_fp, docs.c.old_fp, 0))) == 1
        assert len(conn.execute(near_duplicate_matches(fresh.c.old_fp, docs.c.old_fp, 1)).all()) == 1
