"""Models as table rows: a Keras ``.keras`` file packed by ``streaming_tar`` into
``{start, offset, value}`` rows, saved like any table (usually to Delta), and loaded back.

Any Delta reader can rebuild the file: sort the rows on ``start`` and untar the values.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Iterable, Iterator, Mapping

from .errors import MLSQLError
from . import config
from .storage import delta, rows as file_rows, stored as stored_models, streaming_tar



def rows_from_model_file(data: bytes, name: str = "model.keras") -> list[dict]:
    """A model file's bytes as streaming_tar rows."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_bytes(data)
        return list(streaming_tar.build_rows_from_file(path))


def model_from_rows(rows: Iterable[Mapping], what: str = "model rows", unsafe: bool = False):
    """Rebuild and load the Keras model stored in streaming_tar rows. A model whose file carries
    Python code is refused unless ``unsafe`` (see ``refuse_python_code``)."""
    import keras  # heavy: TensorFlow

    with model_file(rows, what) as path:
        refuse_python_code(path, what, unsafe)
        try:
            return keras.models.load_model(path, safe_mode=not unsafe)
        except Exception as exc:  # noqa: BLE001 - any loader failure is the same user-facing problem
            raise MLSQLError(f"{what} hold a file that Keras cannot load as a model: {exc}") from exc


def model_from_bytes(data: bytes, unsafe: bool = False):
    return model_from_rows(rows_from_model_file(data), unsafe=unsafe)


@contextlib.contextmanager
def model_file(rows: Iterable[Mapping], what: str = "model rows") -> Iterator[Path]:
    """The model file (``.keras``, ``.h5`` or a Keras model folder) the rows hold, unpacked into a
    temporary folder that is gone after the ``with``."""
    with tempfile.TemporaryDirectory() as tmp:
        try:
            top = streaming_tar.save_rows_as_file(rows, tmp)
        except (ValueError, KeyError, OSError, EOFError) as exc:
            raise MLSQLError(f"{what} do not hold a model archive: {exc}") from exc
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        candidates = [p for p in files if p.suffix in (".keras", ".h5")] or ([top] if top.is_dir() else [])
        if not candidates:
            raise MLSQLError(f"{what} hold no .keras model file (found: {', '.join(p.name for p in files) or 'nothing'})")
        yield candidates[0]


def refuse_python_code(path: Path, what: str, unsafe: bool) -> None:
    """Refuse a model whose configuration carries Python bytecode (a ``Lambda`` layer's lambda, or
    any other serialized lambda), which would run as soon as Keras rebuilds the model.

    Keras's own ``safe_mode`` refuses these too, but a process-wide
    ``keras.config.enable_unsafe_deserialization()`` (one line in any Python cell) silently overrides
    ``safe_mode=True`` for ``.keras`` files, and Keras before 3.11.3 ignored it for ``.h5`` files; this
    check reads the configuration itself and holds whatever Keras is told."""
    if unsafe:
        return
    places = python_code_in(_model_config(path))
    if places:
        raise MLSQLError(
            f"{what} hold a model with Python code in it ({', '.join(places)}): loading it would run that "
            f"code. If you trust whoever wrote the table, load it with unsafe=\"true\" "
            f"(register/predict ... where unsafe=\"true\"; mlsql_ray.models.load_model(..., unsafe=True))")


def python_code_in(config) -> list[str]:
    """Where a Keras model configuration holds serialized Python code: Keras 3 writes a lambda as
    ``{"class_name": "__lambda__", ...}``, tf.keras 2 as ``"function_type": "lambda"``."""
    found: dict[str, None] = {}

    def walk(node, owner: str) -> None:
        if isinstance(node, dict):
            if (node.get("class_name") == "__lambda__" or node.get("function_type") == "lambda"
                    or node.get("output_shape_type") == "lambda"):
                found[owner] = None
            inner = node.get("config")
            if isinstance(node.get("class_name"), str) and isinstance(inner, dict) and isinstance(inner.get("name"), str):
                owner = f"{node['class_name']} layer {inner['name']!r}"
            for value in node.values():
                walk(value, owner)
        elif isinstance(node, list):
            for value in node:
                walk(value, owner)

    walk(config, "the model's configuration")
    return list(found)


def _model_config(path: Path):
    """The model's configuration as JSON data: ``config.json`` of a ``.keras`` zip or folder, the
    ``model_config`` attribute of an ``.h5`` file; None when it cannot be read (Keras will then
    fail to load the file too)."""
    try:
        if path.is_dir():
            return json.loads((path / "config.json").read_text())
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                return json.loads(archive.read("config.json"))
        import h5py  # heavy: h5py

        with h5py.File(path, "r") as h5:
            text = h5.attrs.get("model_config")
            return json.loads(text) if text is not None else None
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return None


def load_model(table: str, warehouse: str | os.PathLike | None = None, version: int | None = None,
               unsafe: bool = False):
    """The Keras model saved in Delta table ``table`` (``db.name``), at ``version`` or the latest.
    ``unsafe=True`` also loads a model that carries Python code (a ``Lambda`` layer), running it."""
    _, rows = stored_rows(config.warehouse(warehouse), table, {} if version is None else {"version": str(version)})
    label = f"Delta table {table}" + (f" version {version}" if version is not None else "")
    return model_from_rows(rows.to_pylist(), label, unsafe)


def stored_rows(warehouse, table: str, options: dict):
    """(version, rows) of the Keras model in Delta table ``table`` of ``warehouse``, read by the
    one reader of stored models (``storage.stored``), for ``load_model`` and ``register``/``predict
    ... as tf`` (``options``: its ``version``, ``mode="path"``)."""
    stored = stored_models.read(delta.table_path(warehouse, table, options), table, options)
    stored_models.refuse_other(stored, stored_models.KERAS)
    return stored.version, file_rows.model_rows(stored.rows, table)
