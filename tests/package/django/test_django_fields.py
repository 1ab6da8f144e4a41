"""SimhashField: the four edge values through every path (create, values(),
bulk_create, update, lookups, aggregates, fixtures, forms), the text and bytes
forms, NULL, and hostile values named by the field."""

from __future__ import annotations

import io
import json

import pytest
from django import forms
from django.core import exceptions, serializers
from django.core.management import call_command
from django.db import connection
from django.db.models import Max, Min
from simhash_testapp.models import Page

from pysimhash_sql import hashing
from pysimhash_sql.django import FingerprintValue, HammingDistance, Simhash, SimhashFormField

EDGES = [0, 2**63 - 1, 2**63, 2**64 - 1]
HOSTILE = [-1, 2**64, 1.5, "0xzz", "abc", "-5", "0x1ffffffffffffffff", b"\x01\x02", True, [1]]

pytestmark = pytest.mark.django_db


def test_the_driver_is_the_one_asked_for() -> None:
    from conftest import DRIVER

    assert connection.Database.__name__ == DRIVER


def test_edge_values_through_every_path() -> None:
    pages = [Page.objects.create(fp=v) for v in EDGES]
    for page, value in zip(pages, EDGES):
        page.refresh_from_db()
        assert page.fp == value and type(page.fp) is int
    assert list(Page.objects.order_by("fp").values_list("fp", flat=True)) == EDGES
    assert [row["fp"] for row in Page.objects.order_by("fp").values("fp")] == EDGES
    assert [Page.objects.get(fp=v).pk for v in EDGES] == [p.pk for p in pages]
    assert Page.objects.filter(fp__in=EDGES[1:3]).count() == 2
    assert Page.objects.filter(fp__gt=2**63 - 1).count() == 2  # simhash64's order is unsigned
    assert Page.objects.aggregate(lo=Min("fp"), hi=Max("fp")) == {"lo": 0, "hi": 2**64 - 1}

    created = Page.objects.bulk_create([Page(fp=v) for v in reversed(EDGES)])
    assert all(page.pk is not None for page in created)
    assert sorted(Page.objects.filter(pk__in=[p.pk for p in created]).values_list("fp", flat=True)) == EDGES

    for value in EDGES:
        Page.objects.filter(pk=pages[0].pk).update(fp=value)
        assert Page.objects.get(pk=pages[0].pk).fp == value
    page = pages[1]
    page.fp = 2**64 - 1
    page.save(update_fields=["fp"])
    assert Page.objects.get(pk=page.pk).fp == 2**64 - 1


def test_text_and_bytes_forms_and_null() -> None:
    forms_of = {"0xffffffffffffffff": 2**64 - 1, "0x8000000000000000": 2**63, "9223372036854775807": 2**63 - 1,
                b"\x80" + bytes(7): 2**63, bytes(8): 0}
    for given, value in forms_of.items():
        assert Page.objects.get(pk=Page.objects.create(fp=given).pk).fp == value
        assert Page.objects.filter(fp=given).exists()
    blank = Page.objects.create(fp=None)
    assert Page.objects.get(pk=blank.pk).fp is None
    assert list(Page.objects.filter(fp__isnull=True).values_list("pk", flat=True)) == [blank.pk]
    assert Page.objects.filter(fp__hamming_within=(0, 64)).count() == len(forms_of)  # NULL is within nothing


def test_database_functions() -> None:
    bodies = ["The quick brown fox jumps over the lazy dog", "The quick brown fox jumped over the lazy dog", ""]
    for body in bodies:
        Page.objects.create(body=body, fp=2**64 - 1)
    Page.objects.update(fp=Simhash("body"))
    assert sorted(Page.objects.values_list("fp", flat=True)) == sorted(hashing.simhash(b) for b in bodies)
    with_two = Page.objects.annotate(fp2=Simhash("body", 2)).values_list("body", "fp2")
    assert sorted(fp for _, fp in with_two) == sorted(hashing.simhash(b, 2) for b in bodies)

    for centre in EDGES:
        rows = Page.objects.annotate(d=HammingDistance("fp", centre)).order_by("d", "pk").values_list("fp", "d")
        assert [d for _, d in rows] == sorted(hashing.hamming_distance(fp, centre) for fp, _ in rows)
        assert all(d == hashing.hamming_distance(fp, centre) for fp, d in rows)
    hex_centre = Page.objects.annotate(d=HammingDistance(FingerprintValue("0xffffffffffffffff"), "fp"))
    assert {d for d in hex_centre.values_list("d", flat=True)} == {
        hashing.hamming_distance(hashing.simhash(b), 2**64 - 1) for b in bodies}


def test_fixtures_round_trip(tmp_path) -> None:
    for value in [*EDGES, None]:
        Page.objects.create(fp=value, domain="example.org")
    expected = list(Page.objects.order_by("pk").values_list("pk", "fp"))
    dump = tmp_path / "pages.json"
    call_command("dumpdata", "simhash_testapp.Page", output=str(dump))
    assert sorted(r["fields"]["fp"] for r in json.loads(dump.read_text()) if r["fields"]["fp"] is not None) == EDGES
    for format in ["xml", "jsonl"]:  # the text forms (value_to_string)
        text = serializers.serialize(format, Page.objects.all())
        assert [o.object.fp for o in serializers.deserialize(format, text)] == [fp for _, fp in expected]
    Page.objects.all().delete()
    call_command("loaddata", str(dump), stdout=io.StringIO())
    assert list(Page.objects.order_by("pk").values_list("pk", "fp")) == expected


def test_form_shows_and_reads_16_hex_digits() -> None:
    form_class = forms.modelform_factory(Page, fields=["fp"])
    assert isinstance(form_class.base_fields["fp"], SimhashFormField)
    page = Page.objects.create(fp=2**63)
    assert 'value="8000000000000000"' in str(form_class(instance=page)["fp"])
    assert 'value="0000000000000000"' in str(form_class(instance=Page(fp=0))["fp"])
    form = form_class({"fp": "ffffffffffffffff"}, instance=page)
    assert form.has_changed()
    form.save()
    assert Page.objects.get(pk=page.pk).fp == 2**64 - 1
    assert not form_class({"fp": "ffffffffffffffff"}, instance=Page.objects.get(pk=page.pk)).has_changed()
    assert form_class({"fp": "0x00ff"}).is_valid()
    assert form_class({"fp": ""}).is_valid()  # null=True, blank=True
    for bad in ["xyz", "1ffffffffffffffff", "-1", "0x"]:
        bound = form_class({"fp": bad})
        assert not bound.is_valid() and "16 hex digits" in str(bound.errors["fp"])


@pytest.mark.parametrize("value", HOSTILE, ids=repr)
def test_hostile_values_name_the_field(value) -> None:
    with pytest.raises(ValueError, match=r"Page\.fp"):
        Page.objects.create(fp=value)
    with pytest.raises(ValueError, match=r"Page\.fp"):
        Page.objects.filter(fp=value).exists()
    with pytest.raises(ValueError, match=r"Page\.fp"):
        Page.objects.filter(fp__hamming_within=(value, 3)).exists()
    with pytest.raises(exceptions.ValidationError) as info:
        Page(fp=value).full_clean()
    assert "fp" in info.value.error_dict and "Page.fp" in str(info.value.error_dict["fp"])
    if not isinstance(value, bytes):  # a fixture cannot hold bytes
        fixture = json.dumps([{"model": "simhash_testapp.page", "pk": 1, "fields": {"fp": value}}])
        with pytest.raises(serializers.base.DeserializationError, match=r"Page\.fp"):
            list(serializers.deserialize("json", fixture))


@pytest.mark.parametrize("rhs", [5, (1,), (1, 2, 3), (1, -1), (1, 65), (1, 2.0), (1, True), (1, "3")], ids=repr)
def test_hostile_lookup_arguments(rhs) -> None:
    with pytest.raises(ValueError, match=r"Page\.fp__hamming_within|max_distance"):
        Page.objects.filter(fp__hamming_within=rhs).exists()
