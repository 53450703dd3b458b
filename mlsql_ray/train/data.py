"""Training data: what a worker's partition can be, and Arrow columns → numpy without per-row work."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence, Union

import numpy as np
import pyarrow as pa

from ..arrays import matrix
from ..cells.context import DataServer

# A partition: a data server handle (or a list of them), an Arrow table, or (x, y) arrays.
Source = Union[DataServer, list, pa.Table, tuple]


@dataclass(frozen=True)
class Columns:
    """The default way to turn a partition into (x, y): feature column(s) → float32 matrix
    (times ``scale``), label column → ints, or one-hot rows when ``one_hot`` classes are given."""

    features: str | Sequence[str] = "image"
    label: str = "label"
    scale: float | None = None
    one_hot: int | None = None

    def __call__(self, table: pa.Table) -> tuple[np.ndarray, np.ndarray]:
        names = [self.features] if isinstance(self.features, str) else list(self.features)
        for name in names + [self.label]:
            if name not in table.column_names:
                raise ValueError(f"training data has no column {name!r} (columns: {', '.join(table.column_names)})")
        parts = [matrix(table.column(n)) for n in names]
        x = parts[0] if len(parts) == 1 else np.hstack(parts)
        if self.scale is not None:
            x *= np.float32(self.scale)
        y = table.column(self.label).to_numpy(zero_copy_only=False)
        if self.one_hot is not None:
            y = np.eye(self.one_hot, dtype=np.float32)[y.astype(np.int64)]
        return x, y


def load_xy(source: Source, prepare: Callable[[pa.Table], tuple] | None) -> tuple[np.ndarray, np.ndarray]:
    """A worker's (x, y) from whatever its partition is."""
    if isinstance(source, tuple):
        x, y = source
        return np.asarray(x), np.asarray(y)
    if isinstance(source, list):  # several data servers (e.g. a whole validation table)
        table = pa.concat_tables([s.read() for s in source])
    else:
        table = source.read() if isinstance(source, DataServer) else source
    if not isinstance(table, pa.Table):
        raise TypeError(f"a training partition must be a data server, an Arrow table or (x, y), not {type(source).__name__}")
    return (prepare or Columns())(table)


def source_key(source: Source):
    """What identifies a partition across runs without reading it: its data servers' keys;
    None for arrays and tables, which travel by value."""
    if isinstance(source, DataServer):
        return (source.key(),)
    if isinstance(source, list) and source and all(isinstance(s, DataServer) for s in source):
        return tuple(s.key() for s in source)
    return None
