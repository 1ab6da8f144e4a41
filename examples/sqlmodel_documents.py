"""SQLModel: pysimhash_sql.sqlalchemy's column type, comparator, index and
queries on a SQLModel model (SQLModel models are SQLAlchemy tables).  Run it
against a database where the simhash extension is available:

    python examples/sqlmodel_documents.py postgresql+psycopg:///documents

(tests/package/test_sqlmodel_example.py runs ``store_and_query``.)"""

from __future__ import annotations

import sys

from sqlalchemy import Column, create_engine, func
from sqlmodel import Field, Session, SQLModel, select, text

from pysimhash_sql.queries import find_all, near_duplicates
from pysimhash_sql.sqlalchemy import SimHash64, simhash_index


class Document(SQLModel, table=True):
    __table_args__ = (simhash_index("document_fingerprint_idx", "fingerprint"),)  # simhash_mih

    id: int | None = Field(default=None, primary_key=True)
    body: str
    # an int in 0 .. 2**64-1 on the Python side, simhash64 in the table
    fingerprint: int = Field(sa_column=Column(SimHash64(text_spec=3), nullable=False))  # simhash_v3


def store_and_query(engine, bodies: list[str], max_distance: int = 3) -> dict:
    """Creates the extension and the table, stores the bodies (fingerprints
    computed by the server), and returns each document's near-duplicates and
    every near pair."""
    with engine.begin() as conn:
        conn.execute(text("CREATE EXTENSION IF NOT EXISTS simhash"))
    SQLModel.metadata.create_all(engine, tables=[Document.__table__])
    with Session(engine) as session:
        session.add_all(Document(body=body, fingerprint=func.simhash_v3(body)) for body in bodies)
        session.commit()
        documents = session.exec(select(Document).order_by(Document.id)).all()
        near = {d.id: [(other.id, distance) for other, distance in
                       session.exec(near_duplicates(Document.fingerprint, d.fingerprint, max_distance))]
                for d in documents}
        pairs = session.exec(find_all(select(Document.id, Document.fingerprint), max_distance)).all()
        return {"fingerprints": {d.id: d.fingerprint for d in documents}, "near": near, "pairs": pairs}


if __name__ == "__main__":
    result = store_and_query(create_engine(sys.argv[1]), [
        "The quick brown fox jumps over the lazy dog by the river",
        "The quick brown fox jumps over the lazy dog by the river!",
        "Fingerprints find near-duplicate documents inside PostgreSQL",
    ])
    print(result["pairs"])
