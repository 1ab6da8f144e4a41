"""examples/django_crawler, from `migrate` on an empty database (no extension:
its migration creates it): ingest_pages stores each article once per site and
skips the refetches, the admin lists a page's near-duplicates on other sites,
makemigrations finds nothing to do, and the migrations run back to zero.  The
project runs in a process of its own (its settings are not the tests')."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import psycopg
import pytest
from conftest import DRIVER
from toolbox import ROOT
from toolbox.web_pages import article_page, nav_only_page

EXAMPLE = ROOT / "examples" / "django_crawler"

# What runs inside the example project: its commands, then its admin through Django's test client.
SCRIPT = r"""
import io, json, sys
import django
django.setup()
from django.core.management import call_command
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import setup_test_environment
from pages.models import Page

call_command("migrate", stdout=io.StringIO())
out = io.StringIO()
call_command("ingest_pages", sys.argv[1], stdout=out, stderr=io.StringIO())
call_command("ingest_pages", sys.argv[1], stdout=io.StringIO(), stderr=io.StringIO())  # all stored already
call_command("makemigrations", "--check", "--dry-run", stdout=io.StringIO())
setup_test_environment()
client = Client()
client.force_login(User.objects.create_superuser("admin", "admin@example.org", "x"))
first = Page.objects.get(url="https://site-a.example/orchard/0.html")
change = client.get(f"/admin/pages/page/{first.pk}/change/").content.decode()
listing = client.get("/admin/pages/page/").content.decode()
pages = sorted(Page.objects.values_list("url", flat=True))
call_command("migrate", "pages", "zero", stdout=io.StringIO())
with connection.cursor() as cursor:
    cursor.execute("SELECT count(*) FROM pg_extension WHERE extname = 'simhash'")
    extension_after_zero = cursor.fetchone()[0]
print(json.dumps({"summary": out.getvalue().splitlines()[-1], "pages": pages, "change": change,
                  "listing": listing, "fingerprint": f"{first.fingerprint:016x}",
                  "extension_after_zero": extension_after_zero}))
"""


@pytest.mark.skipif(DRIVER != "psycopg", reason="the example's process takes Django's default driver")
def test_the_example_crawler_from_an_empty_database(simhash_postgresql_proc, tmp_path) -> None:
    site = {"site-a.example": ["harbour", "library", "orchard"], "site-b.example": ["orchard"]}
    for domain, keys in site.items():
        for key in keys:
            for fetch in range(3):  # the same article fetched three times, with a crawler's noise
                path = tmp_path / domain / key / f"{fetch}.html"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(article_page(key, fetch)[1])
    (tmp_path / "site-a.example" / "nav.html").write_text(nav_only_page("news"))
    server = simhash_postgresql_proc
    with psycopg.connect(server.dsn(), autocommit=True) as admin:
        admin.execute("CREATE DATABASE crawler_example TEMPLATE template0")
    try:
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "crawler.settings", "PGHOST": server.host,
               "PGPORT": str(server.port), "PGUSER": server.user, "PGDATABASE": "crawler_example"}
        run = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], cwd=EXAMPLE, env=env,
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
    finally:
        with psycopg.connect(server.dsn(), autocommit=True) as admin:
            admin.execute("DROP DATABASE crawler_example WITH (FORCE)")
    result = json.loads(run.stdout.splitlines()[-1])
    assert result["pages"] == ["https://site-a.example/harbour/0.html", "https://site-a.example/library/0.html",
                               "https://site-a.example/orchard/0.html", "https://site-b.example/orchard/0.html"]
    assert result["summary"] == "4 stored, 8 near-duplicates, 1 without text"
    assert "https://site-b.example/orchard/0.html</a> (0 bits)" in result["change"]
    assert "https://site-a.example/harbour/0.html" not in result["change"]
    assert result["fingerprint"] in result["listing"]
    assert result["extension_after_zero"] == 0
