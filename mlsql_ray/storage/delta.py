"""Delta Lake tables in the warehouse: name → path, reads with time travel, writes with the four
save modes, partitionBy and ``idCols`` upserts, and the history/info views behind ``!delta``.

Everything goes through the ``deltalake`` package, so every table is readable by any Delta reader.

A write either commits whole or leaves the table at its version: deltalake commits atomically, a
write that loses a race to another writer fails with a clear "another writer" error (appends are
retried by deltalake itself, an overwrite or merge that read data another writer replaced is
not), and Ctrl-C during a write cancels it before the commit (see ``_interruptible``), or, when
it came too late for that, says which version was committed. Data files an interrupted or killed
write left behind are removed by a later write (``remove_leftovers``) or ``!delta vacuum``.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
from pyarrow import fs

from .. import objectstore
from ..errors import InterruptedAfterCommit, MLSQLError, first_line
from ..objectstore import ObjectPath, delta_options
from ..options import flag
from .paths import real_path, within

# deltalake's allocator (jemalloc) keeps freed pages for 10 s by default: while a big table
# streams through a write, the process then grows with the data as if it held it all. Giving
# them back within a second bounds that; giving them back at once (0 ms) made a 100 M-row save
# take twice as long, most of it in the kernel (munmap). Read when deltalake's library loads:
# it is imported inside this module's functions.
os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:1000,muzzy_decay_ms:0")
# The size at which deltalake starts a new data file. Its own default left a 100 M-row save
# with 119 files and a 550 MB peak; 64 MiB gives 38 files and 470 MB, in the same time.
TARGET_FILE_BYTES = 64 * 2**20

_NAME_PART = re.compile(r"[A-Za-z0-9_]+", re.ASCII)


def table_path(warehouse: Path | ObjectPath, name: str, options: dict[str, str],
               conf: dict[str, str] | None = None) -> Path | ObjectPath:
    """Where ``delta.`db.table``` lives: ``<warehouse>/db/table``; a bare name is in ``default``.

    Name parts are plain ASCII words, and a symbolic link in the warehouse that leads out is
    refused (as ``!fs`` refuses it), so a name can never point outside the warehouse;
    ``mode="path"`` is the explicit way to use any path (an object store URI opens with the
    options of the environment and the session settings ``conf``).
    """
    if options.get("mode") == "path":
        return objectstore.resolve(name, conf) if objectstore.is_uri(name) else Path(name).expanduser()
    parts = name.split(".")
    if len(parts) == 1:
        parts = ["default", parts[0]]
    if len(parts) != 2 or not all(_NAME_PART.fullmatch(p) for p in parts):
        raise MLSQLError(
            f"bad Delta table name {name!r}: use `db.table` or `table`, each part made of "
            "letters, digits and _ (for a path, add where mode=\"path\")"
        )
    path = warehouse.joinpath(*parts)
    if isinstance(path, ObjectPath):  # no links on an object store: the plain name parts keep it inside
        return path
    if not within(path, [warehouse]):
        raise MLSQLError(f"Delta table {name} would be at {real_path(path)}, outside the warehouse {warehouse}: "
                         f"a symbolic link in the warehouse leads out (for a path elsewhere, add where mode=\"path\")")
    return path


def exists(path: Path | ObjectPath) -> bool:
    from deltalake import DeltaTable  # heavy: deltalake

    if isinstance(path, ObjectPath):
        return DeltaTable.is_deltatable(str(path), storage_options=path.storage_options())
    return (path / "_delta_log").is_dir() and DeltaTable.is_deltatable(str(path))


def _opened(path: Path | ObjectPath):
    """The table at ``path`` at its latest version, or None when there is none."""
    from deltalake.exceptions import TableNotFoundError  # heavy: deltalake

    if not isinstance(path, ObjectPath) and not (path / "_delta_log").is_dir():
        return None
    try:
        return delta_table(path)
    except TableNotFoundError:
        return None


def delta_table(path: Path | ObjectPath, **kwargs):
    """deltalake's table at ``path``, opened with the path's storage options (every opening of
    a table goes through here, so a table on object storage opens like a local one)."""
    from deltalake import DeltaTable  # heavy: deltalake

    return DeltaTable(str(path), storage_options=delta_options(path), **kwargs)


def open_table(path: Path, name: str, options: dict[str, str] | None = None):
    """A DeltaTable at the requested version (``version`` or ``timestampAsOf`` option): one read
    of its log (an object store's listing costs a round trip each)."""
    options = options or {}
    version = options.get("version")
    if version is not None:
        if not version.isdigit():
            raise MLSQLError(f"version must be a whole number, not {version!r}")
        try:
            return delta_table(path, version=int(version))
        except Exception as exc:
            latest = _read_log(path, name).version()  # says when there is no table at all
            raise MLSQLError(f"Delta table {name} has no version {version} (latest is {latest})") from exc
    table = _read_log(path, name)
    stamp = options.get("timestampAsOf")
    if stamp is not None:
        table.load_as_version(_version_at(table, name, stamp))
    return table


def _read_log(path: Path, name: str):
    """The table at its latest version; none there is the user's error, and a log deltalake cannot
    read (damaged, or written with features it lacks) is the table's problem, said as such."""
    from deltalake.exceptions import DeltaError  # heavy: deltalake

    try:
        table = _opened(path)
    except (DeltaError, OSError) as exc:
        raise MLSQLError(f"cannot read Delta table {name}: {first_line(exc)}") from exc
    if table is None:
        raise MLSQLError(f"Delta table {name} does not exist (looked in {path})")
    return table


def arrow_dataset(table, path: Path):
    """An opened table (``open_table``) at ``path`` as a pyarrow dataset read through Arrow's own
    local filesystem. deltalake's default reads through a Python filesystem (``PyFileSystem`` over
    its ``DeltaStorageHandler``), so Arrow's I/O threads call into Python; one still at work when
    the interpreter shuts down makes the process abort at exit ("terminate called without an active
    exception", status 134; apache/arrow#39862). On an object store, through Arrow's own
    filesystem of that store."""
    if isinstance(path, ObjectPath):
        return table.to_pyarrow_dataset(filesystem=fs.SubTreeFileSystem(path.key, path.filesystem()))
    root = str(Path(path).resolve())
    return table.to_pyarrow_dataset(filesystem=fs.SubTreeFileSystem(root, fs.LocalFileSystem()))


def read(path: Path, name: str, options: dict[str, str] | None = None,
         columns: list[str] | None = None) -> tuple[int, pa.Table]:
    """(version, rows) of the table at the version ``options`` ask for (``open_table``), read
    through ``arrow_dataset``: deltalake's own ``to_pyarrow_table`` can abort the process at exit."""
    table = open_table(path, name, options)
    return table.version(), arrow_dataset(table, path).to_table(columns=columns)


def commits(path: Path, name: str) -> list[dict]:
    """The table's commits as deltalake describes them (``version``, ``operation``, custom
    metadata, ...), newest first."""
    return open_table(path, name).history()


def commit(path: Path, name: str, version: int) -> dict:
    """The commit that wrote ``version`` (as ``commits`` describes it; {} when its log is gone),
    reading the log only down to it: a model read at its latest version reads one commit."""
    table = open_table(path, name)
    newer = table.version() - version + 1
    return next((c for c in table.history(limit=max(newer, 1)) if c.get("version") == version), {})


def version_files(path: Path, version: int) -> list[str]:
    """The data files (relative to ``path``) that ``version`` of the table reads."""
    return delta_table(path, version=version).get_add_actions(flatten=True).column("path").to_pylist()


def delete_where(path: Path, name: str, predicate: str) -> None:
    """Delete the rows matching ``predicate`` (Delta's SQL predicate, written by our own code) as
    a new version."""
    open_table(path, name).delete(predicate)


def drop_old_versions(path: Path) -> None:
    """Delete every file the current version does not read, at once: the older versions can no
    longer be read (a model table keeps one model unless asked to keep versions)."""
    delta_table(path).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)


def _version_at(table, name: str, stamp: str) -> int:
    """The newest version committed at or before ``stamp``, judged by the commit timestamps that
    ``!delta history`` shows. (deltalake's own lookup goes by the log files' modification times,
    which can be a few ms later: the time a user copies from the history could then give the
    version before; and it quietly gives version 0 for a time before the table existed.)"""
    try:
        when = datetime.fromisoformat(stamp)
    except ValueError as exc:
        raise MLSQLError(f"timestampAsOf must be an ISO date/time like 2024-01-31 12:00:00, not {stamp!r}") from exc
    if when.tzinfo is None:
        when = when.astimezone()  # a naive time means the user's local time
    limit = when.timestamp() * 1000
    commits = table.history()
    versions = [entry["version"] for entry in commits if entry["timestamp"] <= limit]
    if not versions:
        first = datetime.fromtimestamp(min(e["timestamp"] for e in commits) / 1000, tz=timezone.utc)
        raise MLSQLError(f"Delta table {name} has no version at or before {stamp} (its first version is from {first.isoformat()})")
    return max(versions)


def delta_compatible(schema: pa.Schema) -> pa.Schema:
    """Delta has no unsigned ints nor fixed-size lists: widen them so no value is lost
    (uint8 255 would otherwise turn into null)."""

    def widen(t: pa.DataType) -> pa.DataType:
        if pa.types.is_unsigned_integer(t):
            return {8: pa.int16(), 16: pa.int32(), 32: pa.int64()}.get(t.bit_width, pa.int64())
        if pa.types.is_fixed_size_list(t) or pa.types.is_list(t) or pa.types.is_large_list(t):
            return pa.list_(widen(t.value_type))
        if pa.types.is_struct(t):
            return pa.struct([f.with_type(widen(f.type)) for f in t])
        if pa.types.is_map(t):
            return pa.map_(widen(t.key_type), widen(t.item_type))
        if pa.types.is_null(t):
            return pa.string()
        return t

    return pa.schema([f.with_type(widen(f.type)) for f in schema], metadata=schema.metadata)


SLICE_BYTES = 16 * 2**20  # how much data deltalake takes between two looks at a cancellation
CANCEL_WAIT_S = 60  # how long Ctrl-C waits for deltalake to abandon the write
START_WAIT_S = 5  # how long it waits for a write thread that may not have been made (see _interruptible)


class _Cancelled(Exception):
    """Raised inside the data stream to make deltalake abandon a write before its commit."""


class SourceFailed(Exception):
    """Reading the data being saved failed (e.g. the query behind it raised at row 4.9 M):
    ``__cause__`` is the exception the data stream raised. deltalake reads the data through
    Arrow's C stream interface, which hands on only the text of an error, and wraps that text in
    its own ("Generic DeltaTable error: Arrow error: C Data interface error: ... Traceback"); the
    exception is caught where the stream raises it instead, so the caller reports the cause."""


class _DataStream:
    """The data cast to Delta-compatible types, in slices of at most ~``SLICE_BYTES``, with a
    look at ``cancelled`` before each one: a set event ends the stream with an error, and
    deltalake then gives up the write without committing anything. ``failure`` is the
    exception the source raised, if it did (see ``SourceFailed``)."""

    def __init__(self, source: pa.RecordBatchReader, cancelled: threading.Event):
        self.source = source
        self.cancelled = cancelled
        self.failure: Exception | None = None
        self.rows = 0  # handed to deltalake so far: all of them once the write has committed
        self.target = delta_compatible(source.schema)
        self.reader = pa.RecordBatchReader.from_batches(self.target, self._batches())

    def _source_batches(self):
        try:
            yield from self.source
        except Exception as exc:
            self.failure = exc
            raise

    def _batches(self):
        cast = not self.target.equals(self.source.schema)
        for batch in self._source_batches():
            if cast:
                batch = batch.cast(self.target)
            rows = batch.num_rows
            self.rows += rows
            step = rows if not rows or batch.nbytes <= SLICE_BYTES else max(1, rows * SLICE_BYTES // batch.nbytes)
            for start in range(0, max(rows, 1), max(step, 1)):
                if self.cancelled.is_set():
                    raise _Cancelled("the write was interrupted")
                yield batch.slice(start, step) if step < rows else batch
        if self.cancelled.is_set():
            raise _Cancelled("the write was interrupted")


def _interruptible(work, cancelled: threading.Event, name: str):
    """Run ``work()`` (a deltalake write of table ``name``, returning its ``WriteResult``) in a
    helper thread while this thread waits in Python.

    deltalake's Rust code does not look at Python's signals: Ctrl-C (SIGINT) during a write used
    to be noticed only when the write returned, after its commit, so an "interrupted" run had in
    fact saved. Waiting here, the KeyboardInterrupt arrives at once; it sets ``cancelled``, the
    data stream stops, deltalake abandons the write without a commit, and once the helper has
    finished the interrupt goes on up. An interrupt after the last slice was handed over, while
    deltalake finishes its files and commits, cannot stop the write (the commit is atomic either
    way): the helper then comes back with the version it committed, and the interrupt goes on up
    as ``InterruptedAfterCommit`` naming it. Data files of an abandoned write stay behind
    unreferenced, invisible to every reader, until ``remove_leftovers`` or ``!delta vacuum``.

    The wait is on an Event, not ``Thread.join``: in Python 3.11 a join interrupted by Ctrl-C
    can mark a running thread as finished (bpo-45274's fix misfires), and a process that then
    exits while deltalake still runs in the helper crashes. The helper is not a daemon thread
    for the same reason: the interpreter waits for it rather than tearing it down mid-write."""
    outcome: dict = {}
    began, done = threading.Event(), threading.Event()

    def run():
        began.set()
        try:
            outcome["value"] = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            outcome["error"] = exc
        finally:
            done.set()

    try:
        # Started inside the try: Thread.start waits for the thread to begin, and an interrupt
        # there must cancel the write as any other does (outside it, the write went on uncancelled
        # and committed after the run had said "interrupted").
        threading.Thread(target=run, name="mlsql-delta-write").start()
        while not done.wait(0.05):
            pass
    except KeyboardInterrupt as interrupt:
        cancelled.set()  # the stream's next look at it ends the write (its first, if the helper has not begun)
        now = time.monotonic()
        deadline, begin_by = now + CANCEL_WAIT_S, now + START_WAIT_S
        while not done.is_set() and time.monotonic() < deadline:
            if not began.is_set() and time.monotonic() > begin_by:
                raise  # interrupted inside Thread.start before the thread was made: there is no write
            try:
                done.wait(0.05)
            except KeyboardInterrupt:  # pressed again: the write is being cancelled already
                pass
        if not done.is_set():
            raise KeyboardInterrupt(f"interrupted while the save to {name} was still finishing: it may yet commit "
                                    f"(!delta history {name} will show it)") from interrupt
        if "value" in outcome:  # the interrupt came after the last data was handed over
            raise InterruptedAfterCommit(name, outcome["value"].version) from interrupt
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


@dataclass
class WriteResult:
    version: int | None  # None when nothing was written (mode ignore on an existing table)
    rows: int
    operation: str
    leftovers_removed: int = 0  # data files of interrupted or killed writes this write removed


def write(path: Path, name: str, data: pa.RecordBatchReader, mode: str, partition_by: tuple[str, ...],
          options: dict[str, str], commit_metadata: dict[str, str] | None = None) -> WriteResult:
    """Save ``data`` as a Delta table. The commit is atomic: on any error, a conflict with another
    writer or Ctrl-C, the table keeps its version; a Ctrl-C too late to stop the commit raises
    ``InterruptedAfterCommit`` with the version committed. Afterwards, files earlier interrupted
    writes left are removed (``remove_leftovers``)."""
    from deltalake import CommitProperties, write_deltalake  # heavy: deltalake
    from deltalake.exceptions import DeltaError

    table = _opened(path)  # one read of the log: whether the table exists, and the table to write to
    present = table is not None
    if present and mode == "errorifexists":
        raise MLSQLError(f"Delta table {name} already exists; use save overwrite or save append")
    if present and mode == "ignore":
        return WriteResult(None, 0, "IGNORED")
    commit = CommitProperties(custom_metadata=commit_metadata) if commit_metadata else None
    columns = set(data.schema.names)
    for col in partition_by:
        if col not in columns:
            raise MLSQLError(f"partitionBy column {col!r} is not a column of {name} (columns: {', '.join(data.schema.names)})")
    id_cols = [c.strip() for c in options.get("idCols", "").split(",") if c.strip()]
    cancelled = threading.Event()
    stream = _DataStream(data, cancelled)
    data = stream.reader

    def overwrite_or_append() -> WriteResult:
        # Written through a DeltaTable object when the table exists: afterwards it is at the
        # version this write committed, even when another writer has committed since.
        write_deltalake(
            table if present else str(path), data, storage_options=None if present else delta_options(path),
            mode="append" if mode == "append" else "overwrite",
            partition_by=list(partition_by) or None, target_file_size=TARGET_FILE_BYTES,
            schema_mode="overwrite" if mode == "overwrite" else ("merge" if flag(options, "mergeSchema", False) else None),
            commit_properties=commit,
        )
        return WriteResult((table if present else delta_table(path)).version(), stream.rows, "WRITE")

    try:
        if id_cols and present:
            written = _interruptible(lambda: _upsert(table, name, data, id_cols, commit), cancelled, name)
        else:
            path.mkdir(parents=True, exist_ok=True)
            written = _interruptible(overwrite_or_append, cancelled, name)
    except Exception as exc:
        if stream.failure is not None:
            raise SourceFailed(str(stream.failure)) from stream.failure
        # OSError: a mode="path" folder that cannot be made; deltalake raises bare Exceptions
        # too ("Cast error: Cannot cast string 'x' to Int64")
        if isinstance(exc, (DeltaError, pa.ArrowException, OSError)) or type(exc) is Exception:
            raise MLSQLError(_delta_message(name, exc)) from exc
        raise
    try:
        written.leftovers_removed = len(remove_leftovers(path))
    except KeyboardInterrupt as interrupt:  # the commit is done: the interrupt says so
        raise InterruptedAfterCommit(name, written.version) from interrupt
    return written


LEFTOVER_MIN_AGE_H = 1
"""Unreferenced files younger than this may be another writer's, written but not committed yet."""
LEFTOVER_MAX_AGE_H = 7 * 24
"""Delta's default file retention. An unreferenced file older than this may be one an old version
used, whose removal record a checkpoint has dropped; time travel may still reach that version.
Such files are ``!delta vacuum``'s business, asked for by the user, not a write's."""


def remove_leftovers(path: Path) -> list[str]:
    """Delete the data files of the table at ``path`` that no version refers to and that were last
    written between ``LEFTOVER_MIN_AGE_H`` and ``LEFTOVER_MAX_AGE_H`` ago: what an interrupted or
    killed write left. Files of earlier versions are kept (time travel reads them), and so are
    younger ones, which may belong to a write still running beside this one. Returns the removed
    files (relative to ``path``); a failure to list or delete removes nothing more and is not the
    write's failure.

    deltalake's vacuum lists the candidates: ``full=True`` the files the current version does not
    use (its retention is the age the file's last write gives it), minus those the log records
    as removed by a later version (lite mode, any age). It deletes nothing itself here: a real
    vacuum would also commit two versions of its own to the table."""
    from deltalake.exceptions import DeltaError  # heavy: deltalake

    try:
        table = delta_table(path)  # the latest version: a concurrent writer's commit included
        unused = set(table.vacuum(retention_hours=LEFTOVER_MIN_AGE_H, dry_run=True, enforce_retention_duration=False,
                                  full=True))
        unused -= set(table.vacuum(retention_hours=0, dry_run=True, enforce_retention_duration=False))
    except (DeltaError, OSError):
        return []
    oldest = time.time() - LEFTOVER_MAX_AGE_H * 3600
    removed = []
    for relative in sorted(unused):
        try:
            if _remove_if_newer(path / relative, oldest):
                removed.append(relative)
        except OSError:
            continue
    return removed


def _remove_if_newer(file: Path | ObjectPath, oldest: float) -> bool:
    """Delete ``file`` if it was last written after ``oldest`` (epoch seconds)."""
    if isinstance(file, ObjectPath):
        store = file.filesystem()
        written = store.get_file_info(file.key).mtime
        if written is None or written.timestamp() < oldest:
            return False
        store.delete_file(file.key)
        return True
    if file.stat().st_mtime < oldest:
        return False
    file.unlink()
    return True


def vacuum(path: Path, name: str, retention_hours: int | None) -> pa.Table:
    """``!delta vacuum DB.TABLE [HOURS]``, as Spark's ``VACUUM … RETAIN HOURS``: delete the files
    the current version does not use, removed (or, for files no version refers to, last written)
    more than ``retention_hours`` ago (default: the table's ``delta.deletedFileRetentionDuration``,
    7 days). Versions whose files it deletes can no longer be read (time travel ends there). One
    row per deleted file."""
    table = open_table(path, name)
    files = table.vacuum(retention_hours=retention_hours, dry_run=False, enforce_retention_duration=retention_hours is None,
                         full=True)
    return pa.table({"file": sorted(files)}, schema=pa.schema([("file", pa.string())]))


def _upsert(table, name: str, data: pa.RecordBatchReader, id_cols: list[str], commit) -> WriteResult:
    for col in id_cols:
        if col not in data.schema.names:
            raise MLSQLError(f"idCols column {col!r} is not a column of {name}")
    predicate = " AND ".join(f"t.`{c}` = s.`{c}`" for c in id_cols)
    metrics = (
        table.merge(data, predicate, source_alias="s", target_alias="t", commit_properties=commit)
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    rows = int(metrics.get("num_target_rows_inserted", 0)) + int(metrics.get("num_target_rows_updated", 0))
    table.update_incremental()
    return WriteResult(table.version(), rows, "MERGE")


def _delta_message(name: str, exc: Exception) -> str:
    """What a failed Delta write tells the user, by the exception's type. deltalake raises a
    ``CommitFailedError`` when another writer committed first and a ``SchemaMismatchError`` for
    a column the table lacks; a value Arrow cannot cast to the table's column type comes as a
    bare ``Exception`` ("Cast error: …"): its message is all there is to go by."""
    from deltalake.exceptions import CommitFailedError, SchemaMismatchError  # heavy: deltalake

    first = first_line(exc)
    if isinstance(exc, CommitFailedError):
        return (f"Delta table {name} was changed by another writer at the same time (a concurrent writer); "
                f"nothing was written, run the save again ({first})")
    if isinstance(exc, SchemaMismatchError) or (type(exc) is Exception and first.lower().startswith("cast error")):
        return f"cannot write to Delta table {name}: the data's schema does not match the table's ({first}); use save overwrite to replace it, or where mergeSchema=\"true\" to add columns"
    return f"cannot write to Delta table {name}: {first}"


def history(path: Path, name: str) -> pa.Table:
    """One row per version, newest first: when, what, how many rows, and any stored metadata."""
    table = open_table(path, name)
    rows = {"version": [], "timestamp": [], "operation": [], "parameters": [], "rows": [], "metadata": []}
    for entry in table.history():
        metrics = entry.get("operationMetrics", {}) or {}
        known = {"timestamp", "operation", "operationParameters", "operationMetrics", "engineInfo",
                 "clientVersion", "version", "readVersion", "isBlindAppend", "operationTime"}
        extra = {k: v for k, v in entry.items() if k not in known}
        rows["version"].append(entry.get("version"))
        rows["timestamp"].append(entry["timestamp"])  # epoch ms; datetimes would make pyarrow import pandas
        rows["operation"].append(entry.get("operation"))
        rows["parameters"].append(json.dumps(entry.get("operationParameters", {}), sort_keys=True))
        rows["rows"].append(_rows_written(metrics))
        rows["metadata"].append(json.dumps(extra, sort_keys=True, default=str) if extra else "")
    return pa.table(rows, schema=pa.schema([
        ("version", pa.int64()), ("timestamp", pa.timestamp("ms", tz="UTC")), ("operation", pa.string()),
        ("parameters", pa.string()), ("rows", pa.int64()), ("metadata", pa.string()),
    ]))


def compact(path: Path, name: str, file_num: int) -> pa.Table:
    """Rewrite the table's small files into about ``file_num`` files (per partition), as a new
    version; readers of older versions are unaffected. One row: files added and removed, version."""
    table = open_table(path, name)
    sizes = table.get_add_actions(flatten=True).column("size_bytes").to_pylist()
    target = max(1, -(-sum(sizes) // max(file_num, 1)))  # ceiling division
    metrics = table.optimize.compact(target_size=target)
    return pa.table({"table": [name], "numFilesAdded": [metrics.get("numFilesAdded", 0)],
                     "numFilesRemoved": [metrics.get("numFilesRemoved", 0)], "version": [table.version()]})


def _rows_written(metrics: dict) -> int | None:
    """Rows the operation wrote. A MERGE is asked first: its ``num_output_rows`` also counts the
    unchanged rows it copied into rewritten files, which is not what the save reported."""
    if "num_target_rows_inserted" in metrics:
        return int(metrics["num_target_rows_inserted"]) + int(metrics.get("num_target_rows_updated", 0))
    for key in ("num_added_rows", "num_output_rows"):
        if key in metrics:
            return int(metrics[key])
    return None


def info(path: Path, name: str) -> pa.Table:
    """Key/value facts about a table: where it is, its version, size, partitions and schema."""
    table = open_table(path, name)
    files = table.get_add_actions(flatten=True)
    files = pa.table(files) if not isinstance(files, pa.Table) else files
    meta = table.metadata()
    facts = {
        "name": name,
        "path": str(path),
        "version": str(table.version()),
        "files": str(files.num_rows),
        "size_bytes": str(sum(files.column("size_bytes").to_pylist()) if files.num_rows else 0),
        "rows": str(sum(files.column("num_records").to_pylist()) if files.num_rows and "num_records" in files.column_names else "unknown"),
        "partition_columns": ", ".join(meta.partition_columns),
        "created": datetime.fromtimestamp(meta.created_time / 1000, tz=timezone.utc).isoformat() if meta.created_time else "",
        "schema": ", ".join(f"{f.name} {f.type}" for f in pa.schema(table.schema().to_arrow())),
    }
    return pa.table({"key": list(facts), "value": list(facts.values())})


def list_tables(warehouse: Path) -> pa.Table:
    """Every Delta table under the warehouse as (db, table, version, path); not those a symbolic
    link leads out to (``table_path`` refuses them)."""
    rows = {"db": [], "table": [], "version": [], "path": []}
    for path in _table_folders(warehouse):
        rows["db"].append(path.parent.name)
        rows["table"].append(path.name)
        rows["version"].append(delta_table(path).version())
        rows["path"].append(str(path))
    return pa.table(rows, schema=pa.schema([("db", pa.string()), ("table", pa.string()), ("version", pa.int64()), ("path", pa.string())]))


def _table_folders(warehouse: Path | ObjectPath) -> list[Path | ObjectPath]:
    """The ``db/table`` folders of the warehouse that hold a Delta log, sorted; locally not those
    a symbolic link leads out to (``table_path`` refuses them)."""
    if isinstance(warehouse, ObjectPath):
        store = warehouse.filesystem()

        def folders(key: str) -> list[str]:
            listing = store.get_file_info(fs.FileSelector(key, allow_not_found=True))
            return sorted(info.base_name for info in listing if info.type == fs.FileType.Directory)

        return [warehouse.joinpath(db, table) for db in folders(warehouse.key)
                for table in folders(f"{warehouse.key}/{db}") if "_delta_log" in folders(f"{warehouse.key}/{db}/{table}")]
    if not warehouse.is_dir():
        return []
    return [log.parent for log in sorted(warehouse.glob("*/*/_delta_log")) if within(log.parent, [warehouse])]
