"""Migrations: makemigrations writes the indexes (and reads them back equal:
a second makemigrations finds no change), a changed option is a change, and
the app's migration runs backwards (the extension dropped) and forwards (the
extension created by SimhashExtension) with the indexes as declared."""

from __future__ import annotations

import io

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import connection
from django.db.migrations.autodetector import MigrationAutodetector
from django.db.migrations.graph import MigrationGraph
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.questioner import MigrationQuestioner
from django.db.migrations.state import ProjectState
from django.db.migrations.writer import MigrationWriter

from simhash_testapp.models import Page

from pysimhash_sql.django import SimhashGinIndex, SimhashMihIndex

APP = "simhash_testapp"


def _changes(from_state: ProjectState, to_state: ProjectState) -> dict:
    questioner = MigrationQuestioner(specified_apps={APP})  # an initial migration is wanted
    return MigrationAutodetector(from_state, to_state, questioner).changes(graph=MigrationGraph())


def test_makemigrations_writes_the_indexes() -> None:
    (migration,) = _changes(ProjectState(), ProjectState.from_apps(apps))[APP]
    text = MigrationWriter(migration).as_string()
    assert "pysimhash_sql.django.SimhashMihIndex(fields=['fp'], name='page_fp_mih', runs=4)" in text
    assert "pysimhash_sql.django.SimhashGinIndex(blocks=10, fields=['fp'], max_distance=8, name='ginpage_fp_gin')" in text
    assert "pysimhash_sql.django.SimhashMihIndex(fields=['domain', 'fp'], name=" in text
    assert "pysimhash_sql.django.SimhashField(blank=True, null=True)" in text
    namespace: dict = {}
    exec(compile(text, "migration", "exec"), namespace)  # what it wrote imports and builds the same indexes
    written = {op.name: op.options["indexes"] for op in namespace["Migration"].operations}
    assert written == {model.__name__: model._meta.indexes for model in apps.get_app_config(APP).get_models()}


@pytest.mark.django_db
def test_a_second_makemigrations_finds_no_change() -> None:
    call_command("makemigrations", APP, "--check", "--dry-run", stdout=io.StringIO())  # SystemExit(1) on a change


@pytest.mark.parametrize("new_index", [SimhashMihIndex(fields=["fp"], name="page_fp_mih", runs=2),
                                       SimhashMihIndex(fields=["domain", "fp"], name="page_fp_mih"),
                                       SimhashGinIndex(fields=["fp"], name="page_fp_mih")], ids=repr)
def test_a_changed_index_is_a_change(new_index) -> None:
    state = MigrationLoader(None, ignore_no_migrations=True).project_state()
    changed = state.clone()
    changed.models[APP, "page"].options["indexes"] = [new_index]
    (migration,) = _changes(state, changed)[APP]
    assert [type(op).__name__ for op in migration.operations] == ["RemoveIndex", "AddIndex"]


def _indexes() -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename LIKE %s AND indexdef NOT LIKE %s",
                       [f"{APP}%", "%UNIQUE%"])
        return dict(cursor.fetchall())


def _has_extension() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_extension WHERE extname = 'simhash'")
        return cursor.fetchone()[0] == 1


@pytest.mark.django_db(transaction=True)
def test_migrate_backwards_and_forwards() -> None:
    before = _indexes()
    assert "USING simhash_mih (fp) WITH (runs='4')" in before["page_fp_mih"]
    assert "USING gin (fp simhash64_ops (blocks='10', max_distance='8')) WITH (fastupdate=off)" in before["ginpage_fp_gin"]
    (scoped,) = [definition for name, definition in before.items() if name.endswith("_mih") and "domain" in definition]
    assert "USING simhash_mih (domain, fp)" in scoped
    call_command("migrate", APP, "zero", stdout=io.StringIO())
    assert _indexes() == {} and not _has_extension()
    call_command("migrate", APP, stdout=io.StringIO())
    assert _has_extension() and _indexes() == before


@pytest.mark.django_db
def test_a_scoped_gin_index_is_made_and_used() -> None:
    """SimhashGinIndex with a scope column: the operator class on the
    fingerprint only, btree_gin's for the scope (its extension first)."""
    index = SimhashGinIndex(fields=["domain", "fp"], name="page_domain_fp_gin", max_distance=4)
    with connection.cursor() as cursor:
        cursor.execute("CREATE EXTENSION IF NOT EXISTS btree_gin")
    with connection.schema_editor() as editor:
        editor.add_index(Page, index)
        editor.remove_index(Page, Page._meta.indexes[0])  # the model's own, which the planner would take
    assert "USING gin (domain, fp simhash64_ops (max_distance='4')) WITH (fastupdate=off)" in _indexes()[index.name]
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
    plan = Page.objects.filter(domain="example.org", fp__hamming_within=(2**63, 4)).explain()
    assert f"Index Scan on {index.name}" in plan, plan
