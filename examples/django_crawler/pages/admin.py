"""The admin: pages with their fingerprint in hex, and on a page's own screen
its near-duplicates on every site (through page_fingerprint_mih)."""

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from pysimhash_sql.django import near_duplicates
from pysimhash_sql.fingerprint import to_hex

from .models import Page

NEAR = 3  # bits: what the admin lists as a near-duplicate


@admin.register(Page)
class PageAdmin(admin.ModelAdmin):
    list_display = ["url", "domain", "fingerprint_hex", "fetched_at"]
    list_filter = ["domain"]
    search_fields = ["url", "title"]
    readonly_fields = ["near_duplicates"]

    @admin.display(description="fingerprint", ordering="fingerprint")
    def fingerprint_hex(self, page: Page) -> str:
        return to_hex(page.fingerprint)

    @admin.display(description=f"near-duplicates (within {NEAR} bits, every site)")
    def near_duplicates(self, page: Page) -> str:
        others = near_duplicates(Page.objects.exclude(pk=page.pk), "fingerprint", page.fingerprint, NEAR)
        if not others:
            return "none"
        return format_html("<ul>{}</ul>", format_html_join(
            "", '<li><a href="{}">{}</a> ({} bits)</li>',
            ((reverse("admin:pages_page_change", args=[other.pk]), other.url, other.distance) for other in others)))
