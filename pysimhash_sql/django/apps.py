"""The Django app of pysimhash_sql.django, for what Django finds only in an
installed app: ``INSTALLED_APPS += ["pysimhash_sql.django"]`` gives
``manage.py inspectdb`` the fingerprint columns (management/commands/inspectdb.py).
Fields, lookups, indexes and queries need no app: it has no models."""

from django.apps import AppConfig


class SimhashConfig(AppConfig):
    name = "pysimhash_sql.django"
    label = "pysimhash_sql"  # "django", the package's last name, would read as Django's own
    verbose_name = "pysimhash-sql"
