"""Which columns of an Arrow table are vectors (``vectors.py``): tables remember it in the Arrow
field metadata ``VECTOR_KEY`` (``dense`` or ``sparse``; engine/vectors.py passes the marks on)."""

from __future__ import annotations

import pyarrow as pa

VECTOR_KEY = b"mlsql.vector"

def marked(table: pa.Table, vectors: dict[str, str]) -> pa.Table:
    """``table`` with its columns named in ``vectors`` (lower-case name → dense or sparse) marked
    as vectors in their field metadata."""
    if not vectors:
        return table
    fields = [f.with_metadata({**(f.metadata or {}), VECTOR_KEY: vectors[f.name.lower()].encode()})
              if f.name.lower() in vectors else f for f in table.schema]
    return table.cast(pa.schema(fields, metadata=table.schema.metadata))


def vector_fields(schema: pa.Schema) -> dict[str, str]:
    """The columns ``marked`` marked: lower-case name → dense or sparse."""
    return {f.name.lower(): f.metadata[VECTOR_KEY].decode() for f in schema if f.metadata and VECTOR_KEY in f.metadata}
