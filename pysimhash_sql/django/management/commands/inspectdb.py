"""``manage.py inspectdb`` that knows fingerprint columns (the app in
INSTALLED_APPS: pysimhash_sql/django/apps.py), as django.contrib.gis's own
inspectdb knows geometry columns: Django's command, with each column's field
type read here first.

- A ``simhash64`` column is ``pysimhash_sql.django.SimhashField(text_spec=N)``,
  N the text spec version its comment records (text_spec.comment; Django's
  own inspectdb would guess a TextField); without the comment,
  ``SimhashField()`` (undeclared, as a field written before versions).
  The module starts with ``import pysimhash_sql.django`` then, so it runs as written.
- A ``bigint`` column whose comment records a version holds the plain back
  end's fingerprints (docs/managed.md: the bits as a signed bigint), which
  SimhashField (simhash64, 0 .. 2**64-1) cannot read or write: it stays a
  ``BigIntegerField``, with a note that says so.
"""

from __future__ import annotations

from django.core.management.commands.inspectdb import Command as InspectDBCommand

from ....text_spec import comment as spec_comment
from ....text_spec import TEXT_SPEC_VERSIONS, spec_of_comment

FIELD = "pysimhash_sql.django.SimhashField"
IMPORT = "import pysimhash_sql.django"
# Django's note for a type it does not know, which a simhash64 column no longer is.
GUESS_NOTE = "This field type is a guess."
TYPE_NAME = "SELECT typname FROM pg_type WHERE oid = %s"
FINGERPRINT_TYPE = "simhash64"


class Command(InspectDBCommand):
    help = (InspectDBCommand.help + " simhash64 columns become pysimhash_sql.django.SimhashField, with the text "
            "spec version their comment records.")

    _type_names: dict[int, str | None]

    def handle_inspection(self, options):
        self._type_names = {}
        lines = list(super().handle_inspection(options))
        if any(FIELD + "(" in line for line in lines):
            header = next((n for n, line in enumerate(lines) if line.startswith("from ") and "import models" in line),
                          -1)
            lines.insert(header + 1, IMPORT)
        yield from (self.without_default_comment(line) for line in lines)

    @staticmethod
    def without_default_comment(line: str) -> str:
        """A SimhashField(text_spec=N)'s line without ``db_comment`` when it is
        the one the field writes itself (Django's inspectdb adds every
        column's comment): the field as a model declares it."""
        for version in TEXT_SPEC_VERSIONS:
            if f"{FIELD}(text_spec={version}," in line or f"{FIELD}(text_spec={version})" in line:
                return line.replace(f", db_comment={spec_comment(version)!r}", "")
        return line

    def get_field_type(self, connection, table_name, row):
        field_type, params, notes = super().get_field_type(connection, table_name, row)
        if connection.vendor != "postgresql":
            return field_type, params, notes
        version = spec_of_comment(getattr(row, "comment", None))
        if self.type_name(connection, row.type_code) == FINGERPRINT_TYPE:
            notes = [note for note in notes if note != GUESS_NOTE]
            return FIELD, {**params, **({} if version is None else {"text_spec": version})}, notes
        if version is not None and field_type == "BigIntegerField":
            notes.append(f"text spec version {version} fingerprints as a signed bigint (the plain back end): "
                         "SimhashField needs the simhash extension's simhash64.")
        return field_type, params, notes

    def type_name(self, connection, type_code: int) -> str | None:
        """The name of the type of OID ``type_code`` (once per type and run)."""
        names = self._type_names
        if type_code not in names:
            with connection.cursor() as cursor:
                cursor.execute(TYPE_NAME, [type_code])
                row = cursor.fetchone()
            names[type_code] = row[0] if row else None
        return names[type_code]
