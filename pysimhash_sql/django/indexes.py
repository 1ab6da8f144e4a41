"""Near-duplicate indexes for ``Meta.indexes``: ``SimhashMihIndex`` (the
extension's access method, docs/index.md's choice for every table and radius)
and ``SimhashGinIndex`` (the GIN operator class simhash64_ops).  Scope columns
(a crawler's ``domain``) go before the fingerprint in ``fields``; the
fingerprint is the last field."""

from __future__ import annotations

import copy
from typing import Any

from django.contrib.postgres.indexes import PostgresIndex

from ..index_kinds import GIN, MIH, index_params, opclass_clause

__all__ = ["SimhashGinIndex", "SimhashMihIndex"]


class _SimhashIndex(PostgresIndex):
    method = ""

    def deconstruct(self):
        _path, args, kwargs = super().deconstruct()
        kwargs.update(self.options())
        return f"pysimhash_sql.django.{type(self).__name__}", args, kwargs

    def options(self) -> dict[str, Any]:
        """The constructor's own arguments, as given (deconstruct writes them)."""
        return {}

    def create_sql(self, model, schema_editor, using: str = "", **kwargs: Any):
        return super().create_sql(model, schema_editor, using=using or self.method, **kwargs)


class SimhashMihIndex(_SimhashIndex):
    """``USING simhash_mih (scope…, fp)``; ``runs=`` its option (docs/index.md)."""

    suffix = "mih"
    method = MIH

    def __init__(self, *expressions: Any, runs: int | None = None, **kwargs: Any) -> None:
        self.runs = index_params(runs=runs).get("runs")
        super().__init__(*expressions, **kwargs)

    def options(self) -> dict[str, Any]:
        return {} if self.runs is None else {"runs": self.runs}

    def get_with_params(self) -> list[str]:
        return [] if self.runs is None else [f"runs = {self.runs}"]


class SimhashGinIndex(_SimhashIndex):
    """``USING gin (scope…, fp simhash64_ops (blocks = …, max_distance = …))``
    with ``fastupdate`` off unless asked (docs/crawling.md); scope columns
    need ``CREATE EXTENSION btree_gin`` (django.contrib.postgres's
    ``BtreeGinExtension()`` operation)."""

    suffix = "gin"
    method = GIN

    def __init__(self, *expressions: Any, blocks: int | None = None, max_distance: int | None = None,
                 fastupdate: bool = False, **kwargs: Any) -> None:
        self.params = index_params(blocks=blocks, max_distance=max_distance)
        self.fastupdate = bool(fastupdate)
        super().__init__(*expressions, **kwargs)
        if not self.fields:
            raise ValueError("SimhashGinIndex takes fields=[scope..., fingerprint], not expressions")

    def options(self) -> dict[str, Any]:
        return {**self.params, **({"fastupdate": True} if self.fastupdate else {})}

    def get_with_params(self) -> list[str]:
        return [f"fastupdate = {'on' if self.fastupdate else 'off'}"]

    def create_sql(self, model, schema_editor, using: str = "", **kwargs: Any):
        # The operator class on the fingerprint only (the last field); not an
        # attribute of the index itself, so that migrations do not write it.
        with_opclass = copy.copy(self)
        with_opclass.opclasses = ("",) * (len(self.fields) - 1) + (opclass_clause(self.params),)
        return super(SimhashGinIndex, with_opclass).create_sql(model, schema_editor, using, **kwargs)
