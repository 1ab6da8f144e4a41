"""The two near-duplicate index kinds (docs/index.md, "Which index"), named
once for the SQLAlchemy helper, the Alembic operations and the CLI: the GIN
operator class simhash64_ops and the extension's access method simhash_mih.
Needs nothing but Python."""

from __future__ import annotations

OPCLASS = "simhash64_ops"
GIN = "gin"
MIH = "simhash_mih"
INDEX_METHODS = (GIN, MIH)
