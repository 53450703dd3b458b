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
_CHUNKS_PER_ARRAY = (2**31 - 1) // CHUNK_SIZE  # rows of one binary array: its int32 offsets address < 2 GiB


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
    """``data`` cut into ``CHUNK_SIZE`` rows without copying it: the values of each row are a
    slice of ``data``'s own buffer (copying each chunk twice, by slicing and into Arrow, took about
    half a second of a process's first model save here, where fresh memory is slow to touch).
    Arrow's binary arrays address at most 2 GiB each: larger data becomes several arrays, of
    ``_CHUNKS_PER_ARRAY`` rows."""
    whole, starts = pa.py_buffer(data), range(0, len(data), CHUNK_SIZE)
    arrays = []
    for first in range(0, len(starts), _CHUNKS_PER_ARRAY):
        part = starts[first:first + _CHUNKS_PER_ARRAY]
        base, end = part[0], min(part[-1] + CHUNK_SIZE, len(data))
        offsets = pa.array([s - base for s in part] + [end - base], pa.int32())
        arrays.append(pa.Array.from_buffers(pa.binary(), len(part), [None, offsets.buffers()[1],
                                                                     whole.slice(base, end - base)]))
    return pa.table({
        "start": pa.array(starts, pa.int64()),
        "offset": pa.array([min(CHUNK_SIZE, len(data) - s) for s in starts], pa.int64()),
        "value": pa.chunked_array(arrays, pa.binary()),
    }, schema=FILE_SCHEMA)


def rows_to_bytes(table: pa.Table) -> bytes:
    """The bytes that rows hold, whatever order they come in."""
    return b"".join(table.sort_by("start").column("value").to_pylist())
