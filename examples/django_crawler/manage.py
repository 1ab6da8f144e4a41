#!/usr/bin/env python
"""The example crawler's manage.py (docs/django.md): `python manage.py migrate`,
then `python manage.py ingest_pages DIR`."""

import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crawler.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
