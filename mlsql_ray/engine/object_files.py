"""``load``/``save`` of parquet, csv, json and text at object store URIs (``s3://…``).

DuckDB cannot open a URI itself here (its httpfs extension would download at run time), so:

* parquet loads as a pyarrow dataset over the store's filesystem, scanned lazily by DuckDB as
  any Arrow dataset (hidden ``_``/``.`` names skipped, ``k=v`` folders as Hive partitions);
* csv, json and text are fetched into the session's staging folder and read by the same readers
  as local files, so every option means what it means for a local file;
* a save is written by the same writer into the staging folder, then uploaded. Unlike a local
  save it is not atomic (an object store has no rename): ``overwrite`` uploads the new part
  files first and deletes the old ones after, so a failed upload leaves the old files readable.
  Delta tables are the atomic way to write to object storage.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from pyarrow import fs

from ..errors import MLSQLError, first_line
from ..objectstore import ObjectPath
from .files import write


def _listing(path: ObjectPath) -> list:
    """The visible files at ``path`` (itself if it is a file), as pyarrow FileInfos."""
    store = path.filesystem()
    info = store.get_file_info(path.key)
    if info.type == fs.FileType.File:
        return [info]
    if info.type == fs.FileType.NotFound:
        return []
    found = store.get_file_info(fs.FileSelector(path.key, recursive=True))
    return [f for f in found if f.type == fs.FileType.File
            and not any(part.startswith((".", "_")) for part in f.path[len(path.key) + 1:].split("/"))]


def _store_error(action: str, path: ObjectPath, exc: OSError) -> MLSQLError:
    return MLSQLError(f"cannot {action} {path}: {first_line(exc)}")


def located(path: ObjectPath, fmt: str) -> tuple[list[str], bool]:
    """The visible data files at ``path`` (``bucket/key``, as its filesystem names them) and
    whether their folders are Hive partitions (``k=v``)."""
    try:
        files = _listing(path)
    except OSError as exc:
        raise _store_error(f"load {fmt} from", path, exc) from exc
    if not files:
        raise MLSQLError(f"cannot load {fmt}: no such file or directory (or no data files): {path}")
    hive = any("=" in part for f in files for part in f.path[len(path.key) + 1:].split("/")[:-1])
    return [f.path for f in files], hive


def parquet_dataset(path: ObjectPath):
    """A lazy pyarrow dataset of the parquet files at ``path``."""
    from pyarrow import dataset as ds  # heavy: pyarrow.dataset imports pandas

    files, hive = located(path, "parquet")
    try:
        return ds.dataset(files, filesystem=path.filesystem(), format="parquet", partitioning="hive" if hive else None,
                          partition_base_dir=path.key if hive else None)
    except OSError as exc:
        raise _store_error("load parquet from", path, exc) from exc


def fetch(path: ObjectPath, fmt: str, staging: Path) -> Path:
    """Copy the data files at ``path`` into a fresh folder under ``staging``, keeping their layout
    (Hive folders too); returns the local path that stands for ``path``."""
    try:
        files = _listing(path)
        if not files:
            raise MLSQLError(f"cannot load {fmt}: no such file or directory (or no data files): {path}")
        local = staging / uuid.uuid4().hex / path.name
        store = path.filesystem()
        single = len(files) == 1 and files[0].path == path.key
        for info in files:
            target = local if single else local / info.path[len(path.key) + 1:]
            target.parent.mkdir(parents=True, exist_ok=True)
            fs.copy_files(info.path, str(target), source_filesystem=store, destination_filesystem=fs.LocalFileSystem())
        return local
    except OSError as exc:
        raise _store_error(f"load {fmt} from", path, exc) from exc


def save(con, view: str, fmt: str, path: ObjectPath, mode: str, options: dict[str, str],
         partition_by: tuple[str, ...], staging: Path) -> int | None:
    """Write the named table as part files under ``path``; rows written, None if ignored."""
    try:
        existing = _listing(path)
        present = path.exists()
    except OSError as exc:
        raise _store_error(f"save as {fmt} to", path, exc) from exc
    if present and mode == "errorifexists":
        raise MLSQLError(f"{path} already exists; use save overwrite or save append")
    if present and mode == "ignore":
        return None
    if mode == "append" and path.is_file():
        raise MLSQLError(f"cannot append to {path}: it is a single file, not a folder of part files; "
                         "save to a folder, or load it and save overwrite the union")
    local = staging / uuid.uuid4().hex / "out"
    rows = write(con, view, fmt, local, "overwrite", options, partition_by)
    store = path.filesystem()
    try:
        for file in sorted(p for p in local.rglob("*") if p.is_file()):
            fs.copy_files(str(file), f"{path.key}/{file.relative_to(local).as_posix()}",
                          source_filesystem=fs.LocalFileSystem(), destination_filesystem=store)
        if mode == "overwrite":
            for old in existing:
                store.delete_file(old.path)
    except OSError as exc:
        raise _store_error(f"save as {fmt} to", path, exc) from exc
    return rows


def upload(local: Path, path: ObjectPath, fmt: str) -> None:
    """Put one local file at ``path``: a single object's write is atomic, as a rename is locally."""
    try:
        fs.copy_files(str(local), path.key, source_filesystem=fs.LocalFileSystem(), destination_filesystem=path.filesystem())
    except OSError as exc:
        raise _store_error(f"save as {fmt} to", path, exc) from exc
