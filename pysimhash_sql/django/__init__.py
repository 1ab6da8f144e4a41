"""Django support (the ``[django]`` extra; docs/django.md): the ``SimhashField``
model field and its ``hamming_within`` lookup, ``HammingDistance`` and
``Simhash`` database functions, ``SimhashMihIndex`` / ``SimhashGinIndex`` for
``Meta.indexes``, the ``SimhashExtension()`` migration operation, and
near-duplicate work over querysets (near_duplicates, find_all, clusters,
insert_unless_near_duplicate).  Django 4.2 and later, psycopg 3 or psycopg2.
"""

from . import fields, functions, indexes, operations, queries
from .fields import *  # noqa: F403
from .functions import *  # noqa: F403
from .indexes import *  # noqa: F403
from .operations import *  # noqa: F403
from .queries import *  # noqa: F403

__all__ = [*fields.__all__, *functions.__all__, *indexes.__all__, *operations.__all__, *queries.__all__]
