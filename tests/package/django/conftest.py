"""Django for the tests of pysimhash_sql.django: settings from
simhash_test_settings, the test database on the suite's server through the
plugin's fixture (pytest-django), and the driver.

SIMHASH_DJANGO_DRIVER=psycopg2 runs the same tests on psycopg2 (scripts/test.sh
runs them so): Django takes psycopg 3 whenever it can import it, and the
suite's own fixtures need psycopg 3, so Django's backend is imported here with
psycopg hidden, and psycopg put back after."""

from __future__ import annotations

import os
import sys

import django
import pytest
from django.conf import settings

import simhash_test_settings

DRIVER = os.environ.get("SIMHASH_DJANGO_DRIVER", "psycopg")


def _import_backend(driver: str) -> None:
    hidden = {name: sys.modules.pop(name) for name in list(sys.modules) if name.split(".")[0] == "psycopg"}
    if driver == "psycopg2":
        sys.modules["psycopg"] = None  # an import of psycopg fails: Django falls back to psycopg2
    try:
        import django.db.backends.postgresql.base  # noqa: F401
    finally:
        sys.modules.pop("psycopg", None)
        sys.modules.update(hidden)


if not settings.configured:
    _import_backend(DRIVER)
    settings.configure(**{name: getattr(simhash_test_settings, name)
                          for name in dir(simhash_test_settings) if name.isupper()})
    # The apps now: in a run of the whole suite this file is read during
    # collection, after pytest-django's own setup has passed.
    django.setup()


@pytest.fixture(scope="session")
def django_db_modify_db_settings(simhash_django_db_settings):
    pass
