"""Bytes as table rows: the one definition of ``{start, offset, value}`` tables.

A file (``--%schema=file``, ``build_result_from_dir``), a model (a ``.keras`` file packed by
``streaming_tar``) and a training checkpoint (an ``.npz``) are all stored as rows of at most
``CHUNK_SIZE`` bytes: ``start`` is the chunk's byte position, ``offset`` its length. Any table
reader can rebuild the bytes by sorting on ``start``. A *model table* is such a table.
"""

from __future__ import annotations

import pyarrow as pa

from ..errors import MLSQLError

CHUNK_SIZE = 64 * 1024
FILE_SCHEMA = pa.schema([("start", pa.int64()), ("offset", pa.int64()), ("value", pa.binary())])
FILE_COLUMNS = tuple(FILE_SCHEMA.names)


def is_file_rows(schema: pa.Schema) -> bool:
    """Whether a table is exactly a file as rows (a cell's file result, a model table)."""
    return set(schema.names) == set(FILE_COLUMNS)


def model_rows(table: pa.Table, name: str) -> pa.Table:
    """The ``start, offset, value`` columns of a table that should hold a model, or a clear
    error naming the table when it does not have them."""
    missing = [c for c in FILE_COLUMNS if c not in table.column_names]
    if missing:
        raise MLSQLError(f"{name} is not a model table: it has no column {missing[0]!r} "
                         f"(a model table has columns {', '.join(FILE_COLUMNS)})")
    return table.select(list(FILE_COLUMNS))


def bytes_to_rows(data: bytes) -> pa.Table:
    """``data`` cut into ``CHUNK_SIZE`` rows."""
    starts = range(0, len(data), CHUNK_SIZE)
    return pa.table({
        "start": pa.array(starts, pa.int64()),
        "offset": pa.array([min(CHUNK_SIZE, len(data) - s) for s in starts], pa.int64()),
        "value": pa.array([data[s:s + CHUNK_SIZE] for s in starts], pa.binary()),
    }, schema=FILE_SCHEMA)


def rows_to_bytes(table: pa.Table) -> bytes:
    """The bytes that rows hold, whatever order they come in."""
    return b"".join(table.sort_by("start").column("value").to_pylist())
