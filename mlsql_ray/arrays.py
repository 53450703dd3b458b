"""Arrow columns → numpy without a Python object per row: the one conversion that cells
(``RayContext.to_numpy``), training (``Columns``) and model functions (``predict``) share."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .errors import MLSQLError


def column_to_numpy(column: pa.ChunkedArray | pa.Array, dtype=None):
    """A column as numpy without per-row Python objects: list columns as 2-D arrays.

    Reads the Arrow value buffers with ``np.frombuffer`` rather than pyarrow's ``to_numpy``,
    whose first call imports pandas (about 0.4 s in each fresh Ray worker, far longer than the
    read). With ``dtype`` the values are converted straight into one new array; without, a
    single chunk comes back as a read-only view of the object store, no copy at all.
    """
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    parts = [_chunk_to_numpy(chunk) for chunk in chunks if len(chunk)]
    if not parts:
        return np.empty((0,) * (2 if _list_size(column.type) is not None else 1), dtype=dtype)
    if len({part.shape[1:] for part in parts}) > 1:
        raise MLSQLError(f"the list rows have different lengths ({sorted({p.shape[1] for p in parts})})")
    if len(parts) == 1:
        return parts[0] if dtype is None else parts[0].astype(dtype)
    out = np.empty((sum(len(part) for part in parts), *parts[0].shape[1:]), dtype=dtype or parts[0].dtype)
    np.concatenate(parts, out=out, casting="unsafe")
    return out


def _list_size(kind: pa.DataType) -> int | None:
    """0 for variable-length lists, the length for fixed-size lists, None for other types."""
    if pa.types.is_fixed_size_list(kind):
        return kind.list_size
    return 0 if pa.types.is_list(kind) or pa.types.is_large_list(kind) else None


def _chunk_to_numpy(chunk: pa.Array):
    if chunk.null_count:
        raise MLSQLError("the column has null rows; fill or filter them first")
    size = _list_size(chunk.type)
    values = chunk if size is None else chunk.flatten()
    if size == 0:  # variable-length lists: every row must have the first row's length
        offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int32 if pa.types.is_list(chunk.type) else np.int64,
                                count=len(chunk) + 1, offset=chunk.offset * (4 if pa.types.is_list(chunk.type) else 8))
        lengths = np.diff(offsets)
        if (lengths != lengths[0]).any():
            raise MLSQLError(f"the list rows have different lengths ({lengths.min()} to {lengths.max()})")
        size = int(lengths[0])
    if values.null_count or not (pa.types.is_integer(values.type) or pa.types.is_floating(values.type)):
        flat = values.to_numpy(zero_copy_only=False)  # nulls, booleans, strings: pyarrow's general path
    else:
        kind = np.dtype(values.type.to_pandas_dtype())
        flat = np.frombuffer(values.buffers()[1], dtype=kind, count=len(values), offset=values.offset * kind.itemsize)
    return flat if chunk is values else flat.reshape(len(chunk), size)


def matrix(column: pa.ChunkedArray | pa.Array, dtype=np.float32) -> np.ndarray:
    """A feature column as a writable 2-D ``dtype`` array: list rows as they are, a column of
    numbers as one value per row."""
    values = column_to_numpy(column, dtype)
    return values.reshape(len(values), 1) if values.ndim == 1 else values
