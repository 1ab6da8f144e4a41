"""The ``SimhashField`` model field, its form field, the fingerprint constant
and the ``hamming_within`` lookup.

Values travel as the server's text form (unsigned decimal) cast to
``simhash64`` where the type is not known from a column, and come back through
``int()``: the same on psycopg 3 and psycopg2, with or without the drivers'
adapters registered (pysimhash_sql.psycopg's loaders return ints already).
The conversions are pysimhash_sql.fingerprint's, shared with every driver.
"""

from __future__ import annotations

import operator
from typing import Any

from django import forms
from django.core import exceptions
from django.db import models
from django.db.models import Lookup, Value
from django.db.models.expressions import ExpressionList

from ..fingerprint import coerce_fingerprint, from_hex, to_hex
from ..text_spec import check_columns, check_spec, check_version, tagged
from ..text_spec import comment as spec_comment

__all__ = ["FingerprintValue", "HammingWithin", "SimhashField", "SimhashFormField", "check_radius"]

MAX_RADIUS = 64
"""The largest Hamming radius there is (64 bits); hamming_within takes 0 .. 64."""


def check_radius(k: Any, what: str = "max_distance") -> int:
    """``k`` as an int in 0 .. 64, else ValueError naming ``what``."""
    try:
        radius = operator.index(k) if not isinstance(k, bool) else None
    except TypeError:
        radius = None
    if radius is None or not 0 <= radius <= MAX_RADIUS:
        raise ValueError(f"{what} must be an int in 0 .. {MAX_RADIUS}, not {k!r}")
    return radius


class SimhashFormField(forms.CharField):
    """A fingerprint in a form: shown and typed as 16 hex digits (``0x`` before
    them is accepted too)."""

    default_error_messages = {"invalid": "Enter a simhash64 fingerprint: 1 to 16 hex digits."}

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            return to_hex(value)
        return value

    def to_python(self, value: Any) -> int | None:
        value = super().to_python(value)
        if value in self.empty_values:
            return None
        try:
            return from_hex(value)
        except ValueError:
            raise exceptions.ValidationError(self.error_messages["invalid"], code="invalid") from None


class SimhashField(models.Field):
    """A ``simhash64`` column: Python ``int`` in 0 .. 2**64-1.  Also takes the
    fingerprint's decimal text, ``0x`` and hex digits, or its 8 bytes
    (big-endian, the binary form); anything else is a ValidationError in
    ``full_clean()``, forms and fixtures, and a ValueError naming the field
    when saved or used in a query.

    ``text_spec``: the text fingerprint spec version the column holds
    (pysimhash_sql/text_spec.py); new models declare
    ``TEXT_SPEC_VERSION_LATEST``.  Its migration records it as the column's
    comment (``db_comment``), where the CLI reads it; a value computed with
    another version (``hashing.simhash`` is version 1, ``simhash_v2`` and
    ``Simhash(..., version=2)`` version 2, ``simhash_v3`` and
    ``Simhash(..., version=3)`` version 3) is a ValueError naming the field
    and both versions; plain ints are taken as they are.  None (the
    default): undeclared, no check."""

    description = "A 64-bit simhash fingerprint (simhash64)"
    empty_strings_allowed = False
    default_error_messages = {"invalid": "%(field)s: “%(value)s” is not a simhash64 fingerprint (%(reason)s)."}

    def __init__(self, *args: Any, text_spec: int | None = None, **kwargs: Any) -> None:
        self.text_spec = None if text_spec is None else check_version(text_spec, "text_spec")
        if self.text_spec is not None:
            kwargs.setdefault("db_comment", spec_comment(self.text_spec))
        super().__init__(*args, **kwargs)

    def db_type(self, connection) -> str:
        return "simhash64"

    def deconstruct(self):
        name, _path, args, kwargs = super().deconstruct()
        if self.text_spec is not None:
            kwargs["text_spec"] = self.text_spec
            if kwargs.get("db_comment") == spec_comment(self.text_spec):
                del kwargs["db_comment"]
        return name, "pysimhash_sql.django.SimhashField", args, kwargs

    @property
    def label(self) -> str:
        """``Model.field``, as errors name the field."""
        model = getattr(self, "model", None)
        return f"{model.__name__}.{self.name}" if model is not None else str(self.name)

    def checked(self, value: Any) -> int:
        """``value`` as a fingerprint int, else ValueError naming the field."""
        check_spec(value, self.text_spec, self.label)
        try:
            return coerce_fingerprint(value)
        except (TypeError, ValueError) as error:
            raise ValueError(f"{self.label}: {value!r} is not a simhash64 fingerprint ({error})") from None

    def to_python(self, value: Any) -> int | None:
        if value is None:
            return None
        try:
            return coerce_fingerprint(value)
        except (TypeError, ValueError) as error:
            raise exceptions.ValidationError(
                self.error_messages["invalid"], code="invalid",
                params={"field": self.label, "value": value, "reason": str(error)},
            ) from None

    def get_prep_value(self, value: Any) -> int | None:
        value = super().get_prep_value(value)
        return None if value is None else self.checked(value)

    def get_db_prep_value(self, value: Any, connection, prepared: bool = False) -> str | None:
        if not prepared:
            value = self.get_prep_value(value)
        return None if value is None else str(value)

    def from_db_value(self, value: Any, expression, connection) -> int | None:
        if value is None:
            return None
        return int(value) if self.text_spec is None else tagged(int(value), self.text_spec)

    def value_to_string(self, obj: models.Model) -> str | None:
        value = self.value_from_object(obj)
        return None if value is None else str(value)

    def formfield(self, **kwargs: Any):
        return super().formfield(**{"form_class": SimhashFormField, **kwargs})


class FingerprintValue(Value):
    """A fingerprint constant in SQL, ``'…'::simhash64`` (as a parameter):
    typed wherever it stands, so function calls resolve to simhash64's."""

    def __init__(self, value: Any, field: SimhashField | None = None) -> None:
        checked = field.checked(value) if field is not None else coerce_fingerprint(value)
        super().__init__(checked, output_field=SimhashField())

    def as_sql(self, compiler, connection):
        return "%s::simhash64", [str(self.value)]


def spec_of_expression(expression: Any) -> int | None:
    """The text spec version a resolved expression's output field declares
    (a ``SimhashField(text_spec=N)`` column, ``Simhash(..., version=N)``),
    None if none."""
    return getattr(getattr(expression, "_output_field_or_none", None), "text_spec", None)


def check_comparable(a: Any, b: Any) -> None:
    """ValueError when two resolved expressions declare different text spec
    versions: text_spec.check_columns, the SQLAlchemy comparator's check."""
    check_columns(spec_of_expression(a), spec_of_expression(b))


@SimhashField.register_lookup
class HammingWithin(Lookup):
    """``filter(fp__hamming_within=(value, k))``: ``hamming_within(fp, value,
    k)``, the call the extension's planner support turns into an index
    condition on a simhash_mih or GIN index (so the index answers it exactly,
    as in SQL).  ``value`` is a fingerprint in any form the field takes, or an
    expression (``F("other__fp")``, ``OuterRef("fp")``)."""

    lookup_name = "hamming_within"
    prepare_rhs = False

    def get_prep_lookup(self) -> ExpressionList:
        field = self.lhs.output_field
        if not isinstance(self.rhs, (tuple, list)) or len(self.rhs) != 2:
            raise ValueError(f"{getattr(field, 'label', field)}__hamming_within takes (fingerprint, max_distance), "
                             f"not {self.rhs!r}")
        value, k = self.rhs
        if not hasattr(value, "resolve_expression"):
            value = FingerprintValue(value, field if isinstance(field, SimhashField) else None)
        # One expression, so that the query resolves an OuterRef in it (a tuple it would leave alone).
        return ExpressionList(value, Value(check_radius(k)))

    def as_sql(self, compiler, connection):
        lhs_sql, lhs_params = self.process_lhs(compiler, connection)
        center, radius = self.rhs.get_source_expressions()
        check_comparable(self.lhs, center)  # F("other_fp"), OuterRef("fp"), Simhash(...): resolved by now
        center_sql, center_params = compiler.compile(center)
        radius_sql, radius_params = compiler.compile(radius)
        return f"hamming_within({lhs_sql}, {center_sql}, {radius_sql})", [*lhs_params, *center_params, *radius_params]
