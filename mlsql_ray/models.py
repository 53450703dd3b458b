"""Models as table rows: a Keras ``.keras`` file packed by ``streaming_tar`` into
``{start, offset, value}`` rows, saved like any table (usually to Delta), and loaded back.

Any Delta reader can rebuild the file: sort the rows on ``start`` and untar the values.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Iterable, Mapping

from .errors import MLSQLError
from .storage import rows as file_rows, streaming_tar



def rows_from_model_file(data: bytes, name: str = "model.keras") -> list[dict]:
    """A model file's bytes as streaming_tar rows."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_bytes(data)
        return list(streaming_tar.build_rows_from_file(path))


def model_from_rows(rows: Iterable[Mapping], what: str = "model rows"):
    """Rebuild and load the Keras model stored in streaming_tar rows."""
    import keras

    with tempfile.TemporaryDirectory() as tmp:
        try:
            top = streaming_tar.save_rows_as_file(rows, tmp)
        except (ValueError, KeyError, OSError, EOFError) as exc:
            raise MLSQLError(f"{what} do not hold a model archive: {exc}") from exc
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        candidates = [p for p in files if p.suffix in (".keras", ".h5")] or ([top] if top.is_dir() else [])
        if not candidates:
            raise MLSQLError(f"{what} hold no .keras model file (found: {', '.join(p.name for p in files) or 'nothing'})")
        try:
            return keras.models.load_model(candidates[0])
        except Exception as exc:  # noqa: BLE001 - any loader failure is the same user-facing problem
            raise MLSQLError(f"{what} hold a file that Keras cannot load as a model: {exc}") from exc


def model_from_bytes(data: bytes):
    return model_from_rows(rows_from_model_file(data))


def load_model(table: str, warehouse: str | os.PathLike | None = None, version: int | None = None):
    """The Keras model saved in Delta table ``table`` (``db.name``), at ``version`` or the latest."""
    from . import config
    from .storage import delta

    root = config.warehouse(warehouse)
    options = {} if version is None else {"version": str(version)}
    path = delta.table_path(root, table, {})
    rows = file_rows.model_rows(delta.open_table(path, table, options).to_pyarrow_table(), table)
    label = f"Delta table {table}" + (f" version {version}" if version is not None else "")
    return model_from_rows(rows.to_pylist(), label)
