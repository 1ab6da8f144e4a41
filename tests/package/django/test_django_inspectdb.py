"""inspectdb with the app installed (pysimhash_sql/django/management/commands/inspectdb.py):
simhash64 columns come out as SimhashField with the text spec version their
comment records, and the module it writes runs as a model (reading and
refusing values by that version); a bigint column with the comment (the plain
back end, on a database without the extension) stays a BigIntegerField, said so."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.db import connection, connections
from django.test.utils import isolate_apps

from pysimhash_sql import hashing

pytestmark = pytest.mark.django_db
TEXT = "Near-duplicate detection in every language: 近似重复检测。"
SIGNED_NOTE = ("# text spec version 2 fingerprints as a signed bigint (the plain back end): SimhashField needs "
               "the simhash extension's simhash64.")


def inspected(table: str, database: str = "default") -> list[str]:
    out = io.StringIO()
    call_command("inspectdb", table, database=database, stdout=out)
    return out.getvalue().splitlines()


def test_simhash64_columns_are_simhash_fields_of_their_version() -> None:
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE crawled (id bigint PRIMARY KEY, body text, fp simhash64 NOT NULL, "
                       "fp_v1 simhash64, bare simhash64, legacy bigint, other bigint)")
        for column, comment in (("fp", "simhash text spec 2"), ("fp_v1", "simhash text spec 1"),
                                ("legacy", "simhash text spec 2"), ("other", "a counter")):
            cursor.execute(f"COMMENT ON COLUMN crawled.{column} IS '{comment}'")
    lines = inspected("crawled")
    assert lines[lines.index("from django.db import models") + 1] == "import pysimhash_sql.django"
    fields = [line.strip() for line in lines if " = " in line and "db_table" not in line and "managed" not in line]
    assert fields == [
        "id = models.BigIntegerField(primary_key=True)",
        "body = models.TextField(blank=True, null=True)",
        "fp = pysimhash_sql.django.SimhashField(text_spec=2)",
        "fp_v1 = pysimhash_sql.django.SimhashField(text_spec=1, blank=True, null=True)",
        "bare = pysimhash_sql.django.SimhashField(blank=True, null=True)",
        "legacy = models.BigIntegerField(blank=True, null=True, db_comment='simhash text spec 2')  " + SIGNED_NOTE,
        "other = models.BigIntegerField(blank=True, null=True, db_comment='a counter')",
    ]

    # The module as written is a working model of the table: its fields read and check by their versions.
    with isolate_apps("simhash_testapp"):
        namespace = {"__name__": "simhash_testapp.inspected"}
        exec("\n".join(lines), namespace)
        crawled = namespace["Crawled"]
        crawled.objects.create(id=1, body=TEXT, fp=hashing.simhash_v2(TEXT), fp_v1=hashing.simhash(TEXT),
                               bare=2**64 - 1)
        row = crawled.objects.get()
        assert (row.fp, row.fp_v1, row.bare) == (hashing.simhash_v2(TEXT), hashing.simhash(TEXT), 2**64 - 1)
        assert (row.fp.text_spec, row.fp_v1.text_spec) == (2, 1)
        assert crawled.objects.filter(fp__hamming_within=(hashing.simhash_v2(TEXT), 0)).count() == 1
        with pytest.raises(ValueError, match="Crawled.fp holds text spec version 2 fingerprints, but this value "
                                             "was computed with version 1"):
            crawled.objects.filter(fp__hamming_within=(hashing.simhash(TEXT), 3)).count()
        assert crawled._meta.get_field("fp").db_comment == "simhash text spec 2"


def test_a_plain_bigint_column_stays_a_bigint(plain_database) -> None:
    """On a database without the extension (no simhash64 type) the plain
    back end's bigint column with the comment: a BigIntegerField and the note
    (SimhashField would refuse half of its values, the negative ones)."""
    alias = "simhash_plain"
    default = connections["default"]
    plain = type(default)({**default.settings_dict, "NAME": plain_database}, alias)
    connections[alias] = plain
    try:
        with plain.cursor() as cursor:
            cursor.execute("CREATE TABLE documents (id bigint PRIMARY KEY, fingerprint bigint NOT NULL)")
            cursor.execute("COMMENT ON COLUMN documents.fingerprint IS 'simhash text spec 2'")
        lines = inspected("documents", alias)
    finally:
        plain.close()
        del connections[alias]
    assert "import pysimhash_sql.django" not in lines
    assert "    fingerprint = models.BigIntegerField(db_comment='simhash text spec 2')  " + SIGNED_NOTE in lines
