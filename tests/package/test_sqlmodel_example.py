"""examples/sqlmodel_documents.py: pysimhash_sql.sqlalchemy's type, index and
queries on a SQLModel model, against brute force; fingerprints on both
sides of 2**63 come back as the ints stored."""

from __future__ import annotations

import importlib.util

from sqlalchemy import text
from sqlmodel import Session, select
from toolbox import ROOT, brute_force_pairs, distance

from pysimhash_sql import hashing

spec = importlib.util.spec_from_file_location("sqlmodel_documents", ROOT / "examples" / "sqlmodel_documents.py")
example = importlib.util.module_from_spec(spec)
spec.loader.exec_module(example)

BODIES = [f"Article {n % 7}: the harbour board publishes a new ferry timetable for spring{'!' * (n % 2)}"
          for n in range(20)] + ["Volunteers replant the old orchard behind the school", ""] + [
    "The lighthouse keeper logs every passing ship"]  # a version 3 fingerprint of 2**63 or more


def test_sqlmodel_model_with_simhash(simhash_engine) -> None:
    result = example.store_and_query(simhash_engine, BODIES)
    fingerprints = result["fingerprints"]
    assert sorted(fingerprints.values()) == sorted(hashing.simhash_v3(body) for body in BODIES)
    assert any(fp >= 2**63 for fp in fingerprints.values()) and any(fp < 2**63 for fp in fingerprints.values())
    assert [tuple(p) for p in sorted(result["pairs"])] == brute_force_pairs(fingerprints.items(), 3)
    for pk, near in result["near"].items():
        assert sorted(near) == sorted((other, distance(fp, fingerprints[pk])) for other, fp in fingerprints.items()
                                      if distance(fp, fingerprints[pk]) <= 3)
    with Session(simhash_engine) as session:
        edge = example.Document(body="edge", fingerprint=2**64 - 1)
        session.add(edge)
        session.commit()
        assert session.exec(select(example.Document.fingerprint).where(example.Document.body == "edge")).one() == 2**64 - 1
        method = session.exec(text("SELECT amname FROM pg_class JOIN pg_am ON pg_am.oid = relam"
                                   " WHERE relname = 'document_fingerprint_idx'")).one()[0]
    assert method == "simhash_mih"
