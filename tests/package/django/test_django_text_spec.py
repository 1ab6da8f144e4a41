"""The text spec version in Django (pysimhash_sql/text_spec.py): a
SimhashField that declares its version records it as the column comment and
refuses values of the other one; Simhash(..., version=2) is simhash_v2 and
version=3 simhash_v3 (the default of new models); two
expressions of different versions are never compared."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.models import F, OuterRef, Value
from simhash_testapp.models import Page

from pysimhash_sql import hashing
from pysimhash_sql.django import HammingDistance, Simhash, SimhashField, insert_unless_near_duplicate

pytestmark = pytest.mark.django_db
TEXT = "Near-duplicate detection in every language: 近似重复检测。"


def declared(version: int | None) -> SimhashField:
    field = SimhashField(text_spec=version)
    field.set_attributes_from_name("fp")
    return field


def test_a_declared_field_refuses_the_other_version() -> None:
    field = declared(2)
    assert field.db_comment == "simhash text spec 2"
    assert field.deconstruct()[3] == {"text_spec": 2}  # the comment follows from it: not repeated in migrations
    assert SimhashField(**field.deconstruct()[3]).db_comment == field.db_comment
    assert field.get_prep_value(hashing.simhash_v2(TEXT)) == hashing.simhash_v2(TEXT)
    assert field.get_prep_value(5) == 5  # a plain int: no known version
    with pytest.raises(ValueError, match="fp holds text spec version 2 fingerprints, but this value was computed "
                                         "with version 1"):
        field.get_prep_value(hashing.simhash(TEXT))
    assert declared(None).get_prep_value(hashing.simhash(TEXT)) == hashing.simhash(TEXT)
    assert declared(2).from_db_value("7", None, connection).text_spec == 2
    with pytest.raises(ValueError, match="text_spec: no text fingerprint spec version 4"):
        SimhashField(text_spec=4)


def test_simhash_function_by_version() -> None:
    Page.objects.create(body=TEXT)
    row = Page.objects.annotate(v1=Simhash("body"), v2=Simhash("body", version=2)).values("v1", "v2").get()
    assert (row["v1"], row["v2"]) == (hashing.simhash(TEXT), hashing.simhash_v2(TEXT))
    assert (row["v1"].text_spec, row["v2"].text_spec) == (1, 2)
    with pytest.raises(ValueError, match="shingle_size: a parameter of text spec version 1"):
        Simhash("body", 2, version=2)
    stored = insert_unless_near_duplicate(Page, {"body": TEXT, "fp": Simhash(Value(TEXT), version=2)},
                                          fingerprint="fp")
    assert stored.inserted and Page.objects.get(pk=stored.pk).fp == hashing.simhash_v2(TEXT)


def test_version_3_the_default_in_django() -> None:
    """Simhash(..., version=3) is simhash_v3, bit for bit hashing's and
    simhash_html's default; a SimhashField(text_spec=3), what new models
    declare (TEXT_SPEC_VERSION_LATEST), takes it and refuses version 2;
    Simhash(expr) stays simhash(text), version 1, as SQL's name says."""
    from pysimhash_sql.text_spec import TEXT_SPEC_VERSION_LATEST

    assert TEXT_SPEC_VERSION_LATEST == 3
    Page.objects.create(body=TEXT)
    row = Page.objects.annotate(v3=Simhash("body", version=3), v1=Simhash("body")).values("v3", "v1").get()
    assert (row["v3"], row["v3"].text_spec) == (hashing.fingerprint(TEXT, version=TEXT_SPEC_VERSION_LATEST), 3)
    assert (row["v1"], row["v1"].text_spec) == (hashing.simhash(TEXT), 1)
    field = declared(TEXT_SPEC_VERSION_LATEST)
    assert field.db_comment == "simhash text spec 3" and field.get_prep_value(row["v3"]) == row["v3"]
    with pytest.raises(ValueError, match="holds text spec version 3 fingerprints, but this value was computed "
                                         r"with version 2.*simhash_v3\(text\)"):
        field.get_prep_value(hashing.simhash_v2(TEXT))


def test_two_expressions_of_different_versions_are_refused() -> None:
    """The lookup and HammingDistance compare two expressions: of different
    declared versions, the SQLAlchemy comparator's ValueError (when the query
    is compiled); the same version, or an undeclared side, is answered."""
    Page.objects.create(body=TEXT, fp=hashing.simhash(TEXT))
    pages = Page.objects.annotate(v2=Simhash("body", version=2), v1=Simhash("body"))
    refused = (pages.filter(v2__hamming_within=(Simhash("body"), 3)),
               pages.filter(v2__hamming_within=(F("v1"), 3)),
               pages.annotate(distance=HammingDistance("v2", Simhash("body"))),
               pages.filter(id__in=Page.objects.annotate(v2=Simhash("body", version=2))
                            .filter(v2__hamming_within=(OuterRef("v1"), 3)).values("id")))
    for queryset in refused:
        with pytest.raises(ValueError, match="a text spec version . column compared with a version . one"):
            list(queryset)
    assert pages.filter(v2__hamming_within=(Simhash("body", version=2), 0)).count() == 1
    assert pages.filter(v1__hamming_within=(F("fp"), 0)).annotate(d=HammingDistance("v2", "fp")).count() == 1
