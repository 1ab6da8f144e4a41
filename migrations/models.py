"""The example schema: documents with a simhash64 fingerprint and its index."""

from __future__ import annotations

from sqlalchemy import BigInteger, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from pysimhash_sql.sqlalchemy import SimHash64, simhash_index


class Base(DeclarativeBase):
    pass


class Document(Base):
    __tablename__ = "documents"
    __table_args__ = (
        simhash_index("documents_fingerprint_idx", "fingerprint"),  # simhash_mih (docs/index.md)
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    url: Mapped[str] = mapped_column(Text, unique=True)
    body: Mapped[str] = mapped_column(Text)
    fingerprint: Mapped[int] = mapped_column(SimHash64(text_spec=3))  # simhash_v3 (docs/fingerprint-spec.md §7, §8)
