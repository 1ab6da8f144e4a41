"""``SimhashExtension()``: the migration operation that creates the extension
(``CREATE EXTENSION IF NOT EXISTS simhash``; backwards, ``DROP EXTENSION``),
as django.contrib.postgres's ``CreateExtension`` does for others."""

from __future__ import annotations

from django.contrib.postgres.operations import CreateExtension

__all__ = ["SimhashExtension"]


class SimhashExtension(CreateExtension):
    def __init__(self) -> None:
        self.name = "simhash"
