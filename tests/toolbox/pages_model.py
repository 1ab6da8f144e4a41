"""A small model shared by tests: pages with a url and a nullable fingerprint
(test_alembic copies this file into a throwaway Alembic project)."""

from __future__ import annotations

from sqlalchemy import BigInteger, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from pysimhash_sql.sqlalchemy import SimHash64


class Base(DeclarativeBase):
    pass


class Page(Base):
    __tablename__ = "pages"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    url: Mapped[str] = mapped_column(Text)
    fp: Mapped[int | None] = mapped_column(SimHash64)
