"""A crawler's pages: one row per stored page, its fingerprint the simhash of
its main content (pysimhash_sql.html), indexed twice: per site (the check at
ingest) and across sites (the admin's near-duplicates of a page)."""

from django.db import models

from pysimhash_sql.django import SimhashField, SimhashMihIndex


class Page(models.Model):
    url = models.URLField(unique=True, max_length=2000)
    domain = models.CharField(max_length=253)
    title = models.TextField(blank=True)
    fingerprint = SimhashField(text_spec=3)  # text spec version 3: simhash_html's default
    fetched_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            SimhashMihIndex(fields=["domain", "fingerprint"], name="page_domain_fingerprint_mih"),
            SimhashMihIndex(fields=["fingerprint"], name="page_fingerprint_mih"),
        ]

    def __str__(self) -> str:
        return self.url
