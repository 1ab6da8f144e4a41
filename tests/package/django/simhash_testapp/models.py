"""The models the Django tests share: pages with a simhash_mih index (and an
unnamed one, named by Django), with a GIN one, and with a scoped simhash_mih
index (domain, fp)."""

from django.db import models

from pysimhash_sql.django import SimhashField, SimhashGinIndex, SimhashMihIndex


class Page(models.Model):
    domain = models.TextField(default="")
    body = models.TextField(default="")
    fp = SimhashField(null=True, blank=True)

    class Meta:
        indexes = [SimhashMihIndex(fields=["fp"], name="page_fp_mih", runs=4)]


class GinPage(models.Model):
    fp = SimhashField(null=True)

    class Meta:
        indexes = [SimhashGinIndex(fields=["fp"], name="ginpage_fp_gin", blocks=10, max_distance=8)]


class ScopedPage(models.Model):
    domain = models.TextField()
    fp = SimhashField()

    class Meta:
        indexes = [SimhashMihIndex(fields=["domain", "fp"])]
