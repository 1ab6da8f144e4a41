"""The command line's options, parsed once into one typed, frozen object
(``Settings``) that every command reads: no command rewrites its options; a
value a command derives (the back end, a table's columns of a report on
files) is its own, or a copy made with ``dataclasses.replace``."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, fields


@dataclass(frozen=True)
class Settings:
    """Every command's options (argparse's ``dest`` names); a command's
    options it does not take keep their defaults."""

    run: str = ""  # "module:function" of the command
    # find-all, find-clusters
    input: str = "-"
    output: str = "-"
    distance: int | None = 3
    blocks: int | None = None
    # documents
    sources: tuple[str, ...] = ()
    id_field: str = "id"
    text_field: str = "text"
    spec_version: int | None = None
    shingle_size: int | None = None
    hidden: bool = False
    verbose: bool = False
    encoding: str = "auto"
    format: str = "csv"
    jobs: int | None = None  # fingerprint, ingest, refingerprint, dedupe
    # the database
    dsn: str | None = None
    table: str = "documents"
    backend: str = "auto"
    id_column: str = "id"
    fingerprint_column: str = "fingerprint"
    label: str | None = None
    workers: int | None = None
    # ingest
    fingerprints: str = "server"
    batch_size: int = 1000
    index: str | None = None
    # refingerprint
    column: str = "fingerprint"
    text_column: str | None = None
    to: int | None = None
    keep_old: bool = False
    drop_kept: bool = False
    # dedupe
    keep: str = "first"
    mark: bool = False
    removed: str | None = None
    strict: bool = False
    # nearest
    query_fingerprint: str | None = None
    query_file: str | None = None
    query_id: int | None = None
    count: int = 10
    # clusters, report
    singletons: bool = False
    scope: str | None = None
    sample_size: int = 2000
    max_distance: int = 16

    @classmethod
    def parsed(cls, namespace: argparse.Namespace) -> Settings:
        """The options argparse parsed (every one a field: a new option needs its field)."""
        values = vars(namespace)
        unknown = values.keys() - {f.name for f in fields(cls)}
        if unknown:
            raise TypeError(f"options without a Settings field: {', '.join(sorted(unknown))}")
        if isinstance(values.get("sources"), list):
            values = {**values, "sources": tuple(values["sources"])}
        return cls(**values)
