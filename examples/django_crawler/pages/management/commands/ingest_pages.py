"""`manage.py ingest_pages DIR`: every DIR/<site>/<path>.html page stored
unless its site already has a near-duplicate of it (the lock, check and
insert of pysimhash_sql.django.insert_unless_near_duplicate: safe to run
several at once); pages with no text to fingerprint are reported and skipped."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from lxml import html as lxml_html

from pages.models import Page
from pysimhash_sql.django import insert_unless_near_duplicate
from pysimhash_sql.html import simhash_html


class Command(BaseCommand):
    help = "Store the HTML pages of DIR/<site>/..., skipping near-duplicates within each site"

    def add_arguments(self, parser) -> None:
        parser.add_argument("directory", type=Path)
        parser.add_argument("--max-distance", type=int, default=3, help="bits: near-duplicates (default 3)")

    def handle(self, directory: Path, max_distance: int, **options) -> None:
        if not directory.is_dir():
            raise CommandError(f"{directory} is not a directory")
        counts = {"stored": 0, "near-duplicates": 0, "without text": 0}
        for path in sorted(directory.glob("*/**/*.html")):
            domain = path.relative_to(directory).parts[0]
            url = f"https://{domain}/{path.relative_to(directory / domain).as_posix()}"
            data = path.read_bytes()
            fingerprint = simhash_html(data, url)
            if fingerprint is None:
                counts["without text"] += 1
                self.stderr.write(f"skipped {url}: no text to fingerprint")
                continue
            title = lxml_html.fromstring(data).findtext(".//title") or ""
            stored = insert_unless_near_duplicate(
                Page, {"url": url, "domain": domain, "title": title.strip(), "fingerprint": fingerprint},
                fingerprint="fingerprint", scope="domain", max_distance=max_distance)
            counts["stored" if stored.inserted else "near-duplicates"] += 1
            if not stored.inserted:
                self.stdout.write(f"near-duplicate {url} of page {stored.pk}")
        self.stdout.write(", ".join(f"{count} {what}" for what, count in counts.items()))
