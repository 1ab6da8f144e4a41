"""Database functions: ``HammingDistance`` and ``Simhash``."""

from __future__ import annotations

from typing import Any

from django.db.models import Func, IntegerField

from ..text_spec import check_shingle_size, check_version, sql_function
from .fields import FingerprintValue, SimhashField, check_comparable

__all__ = ["HammingDistance", "Simhash"]


def _fingerprint(value: Any) -> Any:
    """A field name (Func makes it an F()) or an expression as it is, any
    other value a fingerprint constant (text forms: FingerprintValue("0x…"))."""
    if isinstance(value, str) or hasattr(value, "resolve_expression"):
        return value
    return FingerprintValue(value)


class HammingDistance(Func):
    """``a <~> b``: the number of differing bits, an integer, for ``annotate``
    and ``order_by``.  Each argument is a field name, an expression, or a
    fingerprint int (or bytes).  The operator, not the function
    ``hamming_distance(a, b)`` (the same value): a simhash_mih index orders
    by it, so ``order_by(HammingDistance("fp", q))[:n]`` is its ordering scan
    (docs/index.md, "The n most similar rows")."""

    template = "(%(expressions)s)"
    arg_joiner = " <~> "
    arity = 2
    output_field = IntegerField()

    def __init__(self, a: Any, b: Any, **extra: Any) -> None:
        super().__init__(_fingerprint(a), _fingerprint(b), **extra)

    def as_sql(self, compiler, connection, **extra: Any):
        check_comparable(*self.get_source_expressions())  # two declared versions that differ: ValueError
        return super().as_sql(compiler, connection, **extra)


class Simhash(Func):
    """``simhash(text)``, or ``simhash(text, shingle_size)``: the fingerprint
    of a text column (or expression) computed by the server
    (docs/fingerprint-spec.md), bit-for-bit pysimhash_sql.hashing.simhash's:
    text spec version 1, as SQL's name says.  ``version=N``: the SQL function
    of version N (text_spec.SQL_FUNCTIONS: ``version=3`` is ``simhash_v3(text)``,
    hashing.simhash_v3, what a ``SimhashField(text_spec=3)`` holds: the latest,
    which new models declare).  Its output field carries the version, so a
    field of another one refuses it."""

    function = "simhash"
    output_field = SimhashField(text_spec=1)

    def __init__(self, expression: Any, shingle_size: int | None = None, *, version: int = 1,
                 **extra: Any) -> None:
        check_shingle_size(shingle_size, check_version(version))
        arguments = [expression] if shingle_size is None else [expression, int(shingle_size)]
        super().__init__(*arguments, function=sql_function(version),
                         output_field=SimhashField(text_spec=version), **extra)
