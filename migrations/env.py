"""Alembic environment: the models in models.py beside this file, the database
from SIMHASH_DATABASE_URL or the ini file's sqlalchemy.url."""

from __future__ import annotations

import importlib.util
import os
import sys
from logging.config import fileConfig
from pathlib import Path

from alembic import context
from sqlalchemy import create_engine

from pysimhash_sql.alembic import render_item  # (1) SimHash64 columns render with their import
from pysimhash_sql.backends import set_backend

config = context.config
if config.config_file_name is not None and config.attributes.get("configure_logging", True):
    fileConfig(config.config_file_name, disable_existing_loggers=False)


def load_models():
    """models.py next to this file, loaded by path (no sys.path changes)."""
    spec = importlib.util.spec_from_file_location("migrations_models", Path(__file__).with_name("models.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # annotations are resolved through it
    spec.loader.exec_module(module)
    return module


target_metadata = load_models().Base.metadata
CONFIGURE = dict(
    target_metadata=target_metadata,
    render_item=render_item,
    # (2) our comparators: the extension, simhash index operations and parameters
    autogenerate_plugins=["alembic.autogenerate.*", "pysimhash_sql"],
)


def database_url() -> str:
    return os.environ.get("SIMHASH_DATABASE_URL") or config.get_main_option("sqlalchemy.url")


def simhash_backend() -> str | None:
    """(3) on a server without the extension (docs/managed.md): "plain"."""
    return os.environ.get("SIMHASH_BACKEND") or config.get_main_option("simhash_backend")


if context.is_offline_mode():  # alembic upgrade --sql: the SQL of the named back end
    context.configure(url=database_url(), literal_binds=True, **CONFIGURE)
    if backend := simhash_backend():
        set_backend(context.get_context().dialect, backend)
    with context.begin_transaction():
        context.run_migrations()
else:
    engine = create_engine(database_url())
    if backend := simhash_backend():
        set_backend(engine, backend)
    with engine.connect() as connection:
        context.configure(connection=connection, **CONFIGURE)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()
