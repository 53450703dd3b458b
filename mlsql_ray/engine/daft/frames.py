"""The session's tables as lazy Daft DataFrames on the session's Ray: ``load``, ``select``, ``save``.

A Daft table is a catalog entry of rows computed when read (``catalog.Deferred``): a later select
on Daft reads its DataFrame (nothing computed in between); a Python cell's input and a ``train``'s
workers read its partitions where Daft's workers computed them (``ray_blocks``: Arrow tables in
Ray's object store, this process holding only their refs); anything else that reads it (an ET, a
DuckDB select of a session that switched back, ``session.table``) computes it once, whole, into an
Arrow table in this process. A table that is not Daft's (an ET's output, a ``jsonStr``
load, a select of the DuckDB engine) is read into Daft whole when a Daft select reads it.
"""

from __future__ import annotations

import os
import shutil
import sys
import uuid
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from ...errors import MLSQLError, first_line
from ...lang import ast, script_sql
from ...objectstore import ObjectPath
from ...storage import delta
from .. import files, object_files
from ..catalog import Deferred
from ..result import PREVIEW_ROWS, PreviewedResult, Result
from . import text_scans
from .rows import functions_session
from .translate import REFUSAL_HINT, refusal, translate

#: the formats a Daft session saves with Daft's writers; others are saved by the DuckDB engine
SAVED = ("parquet", "delta")


def daft_module(session):
    """Daft, running on the session's Ray (embedded or ``--ray-address``: started or joined here),
    or in this process when ``$DAFT_RUNNER`` is ``native`` (Daft's own switch; no Ray is started)."""
    # Daft's progress bars would interleave with a script's results (an embedded Ray's workers inherit this)
    os.environ.setdefault("DAFT_PROGRESS_BAR", "0")
    in_process = os.environ.get("DAFT_RUNNER", "").strip().lower() == "native"
    if not in_process:
        session.ray_link.ensure()
    import daft  # heavy: Daft (Rust and its Ray runner), only for sessions whose sql_engine is daft

    if not in_process:
        daft.set_runner_ray(noop_if_initialized=True)  # the Ray this process is connected to
    return daft


def runs(session, fmt: str) -> bool:
    """Whether this session's ``load`` of ``fmt`` may be a Daft scan (of csv and json: when Daft
    can honour its options, ``text_scans``)."""
    return session.sql_engine == "daft" and fmt.lower() in _SCANS


def saves(session, fmt: str) -> bool:
    """Whether this session's ``save`` as ``fmt`` runs on Daft."""
    return session.sql_engine == "daft" and fmt.lower() in SAVED


def is_daft_table(session, name: str) -> bool:
    entry = session.catalog.entry(name)
    return entry is not None and isinstance(entry.data, Deferred) and entry.data.frame is not None


# -- load ---------------------------------------------------------------------------------------

def load(session, s: ast.Load) -> bool:
    """Name the load's table as a lazy Daft scan, on a session whose sql_engine is daft; False
    when the load is the DuckDB engine's (another format, or options Daft cannot honour)."""
    if not runs(session, s.format):
        return False
    fmt = s.format.lower()
    daft = daft_module(session)
    frame = _SCANS[fmt](session, daft, s)
    if frame is None:
        return False
    define(session, s.table, frame, f"{fmt}.`{s.path}` (Daft)")
    return True


def _parquet(session, daft, s: ast.Load):
    path = session.location(s.path, s.options)
    found, hive = _located(path, "parquet")
    return _planned(lambda: daft.read_parquet(found, hive_partitioning=hive, **_io(path)))


def _delta(session, daft, s: ast.Load):
    for option in ("timestampAsOf", "idCols", "mergeSchema"):
        if option in s.options:
            raise refusal(f"the delta option {option}")
    path = delta.table_path(session.warehouse, s.path, s.options, {**session.conf, **s.options})
    if not delta.exists(path):
        raise MLSQLError(f"delta table {s.path} does not exist (no Delta log at {path})")
    version = int(s.options["version"]) if s.options.get("version") else None
    return _planned(lambda: daft.read_deltalake(str(path), version=version, **_io(path)))


def _csv(session, daft, s: ast.Load):
    found, store = _text_files(session, s)
    return found and _planned(lambda: text_scans.csv_scan(session, daft, found, s.options, store, s.path))


def _json(session, daft, s: ast.Load):
    found, store = _text_files(session, s)
    return found and _planned(lambda: text_scans.json_scan(session, daft, found, store))


def _text_files(session, s: ast.Load) -> tuple[list[str] | None, ObjectPath | None]:
    """The files of a csv or json load as Daft opens them, and their object store (None: local);
    no files (the DuckDB engine's reader) for Hive partitions (DuckDB types their values by its own
    rules) and for object storage other than ``s3://``."""
    path = session.location(s.path, s.options)
    store = path if isinstance(path, ObjectPath) else None
    if store is not None and store.scheme != "s3":
        return None, None
    found, hive = _located(path, s.format.lower())
    return (None if hive else found), store


#: what a Daft session's ``load`` of each format scans (None: the DuckDB engine's reader loads it)
_SCANS = {"parquet": _parquet, "delta": _delta, "csv": _csv, "json": _json}


def _located(path: Path | ObjectPath, fmt: str) -> tuple[list[str], bool]:
    """The ``fmt`` files a path stands for, as Daft opens them, and whether they are Hive partitions."""
    if not isinstance(path, ObjectPath):
        return files.located(path, fmt)
    keys, hive = object_files.located(path, fmt)
    return [f"{path.scheme}://{key}" for key in keys], hive


def _io(path: Path | ObjectPath) -> dict:
    """Daft's I/O settings for ``path``: its object store's, from the session's (as deltalake and
    pyarrow get them); none for a local path."""
    if not isinstance(path, ObjectPath):
        return {}
    if path.scheme != "s3":  # gs://, az://: Daft's settings for them are not derived from ours
        raise refusal(f"{path.uri} (object storage other than s3://)")
    return {"io_config": path.daft_io_config()}


def define(session, name: str, frame, source: str) -> None:
    """Name a Daft DataFrame in the catalog, computed only when something reads it."""
    schema = frame.schema().to_pyarrow_schema()
    deferred = Deferred(schema, lambda: computed(frame), frame, partitions=lambda: ray_blocks(frame),
                        first=lambda rows: computed(frame.limit(rows)))
    session.catalog.add_deferred(name, deferred, source)


def ray_blocks(frame) -> list[tuple[object, int]]:
    """The frame computed on Daft's Ray workers, each partition made an Arrow table there:
    [(object ref, rows)] in the frame's order, at least one (an empty table for no partition); only
    the row counts come to this process."""
    import ray  # heavy: Ray (up: daft_module joined it)

    parts = _running(lambda: list(frame.iter_partitions()))  # Daft's partitions (MicroPartitions), as refs
    if not parts:
        return [(ray.put(frame.schema().to_pyarrow_schema().empty_table()), 0)]
    if not isinstance(parts[0], ray.ObjectRef):  # Daft's in-process runner: partitions here
        parts = [ray.put(part) for part in parts]
    arrow = ray.remote(_arrow_block).options(num_returns=2, max_retries=0)
    pairs = [arrow.remote(part) for part in parts]
    rows = _running(lambda: ray.get([n for _, n in pairs]))
    return [(table, n) for (table, _), n in zip(pairs, rows)]


def _arrow_block(part) -> tuple[pa.Table, int]:
    """(a Daft partition as Arrow, its rows), in the Ray worker that holds it."""
    table = part.to_arrow()
    return table, table.num_rows


# -- select -------------------------------------------------------------------------------------

def select(session, s: ast.Select) -> Result:
    """Plan the select on Daft (nothing computed) and name it; its first rows are computed when they
    are shown (at most ``PREVIEW_ROWS + 1`` rows fetched)."""
    daft = daft_module(session)
    # its Velocity directives run first, as for DuckDB (the parser has rendered this text once: cached)
    translation = translate(script_sql.rendered(s.sql), lambda names: session.catalog.schemas(names))
    bindings = {name: frame_of(session, daft, name) for name in translation.tables}
    for name, spark_sql in translation.constants:  # VALUES, range(): Spark's rows and types, by DuckDB
        try:
            rows = session.query(spark_sql, s.line, s.col).to_arrow_table()
        except (MLSQLError, duckdb.Error) as exc:  # a form the rewrite into a query of its own does not keep
            raise refusal(f"this inline table ({first_line(exc)})") from exc
        bindings[name] = daft.from_arrow(rows)
    with functions_session(session, daft, translation.rows):  # what DuckDB computes per batch
        frame = _planned(lambda: daft.sql(translation.sql, register_globals=False, **bindings))
    define(session, s.table, frame, "select (Daft)")
    if session.shows_previews:
        return _previewed(s, frame)
    result = PreviewedResult(s, s.table, lambda late: _fill(late, _previewed(s, frame)))
    return result


def frame_of(session, daft, name: str):
    """The DataFrame a Daft select reads for a catalog table: its own, or the table read whole."""
    if is_daft_table(session, name):
        return session.catalog.entry(name).data.frame
    return daft.from_arrow(session.catalog.arrow(name))  # fails with the catalog's error for an unknown name


def _previewed(s: ast.Select, frame) -> Result:
    head = computed(frame.limit(PREVIEW_ROWS + 1))
    more = head.num_rows > PREVIEW_ROWS
    count = None if more else head.num_rows
    message = (f"{s.table}: {count} rows" if count is not None
               else f"{s.table}: more than {PREVIEW_ROWS} rows (not counted: that would read them all)")
    return Result(s, message, table=head.slice(0, PREVIEW_ROWS), num_rows=count, name=s.table, more=more)


def _fill(result: PreviewedResult, shown: Result) -> None:
    result.message, result.table, result.num_rows, result.more = shown.message, shown.table, shown.num_rows, shown.more


# -- save ---------------------------------------------------------------------------------------

_DELTA_MODES = {"overwrite": "overwrite", "append": "append", "errorifexists": "error", "ignore": "ignore"}


def save(session, s: ast.Save) -> Result:
    """Write a Daft table with Daft's writers: each partition's files where it is computed, then
    one Delta commit (a failed save commits nothing: the table keeps its version)."""
    daft_module(session)
    frame = session.catalog.entry(s.table).data.frame
    if s.format.lower() == "delta":
        return _save_delta(session, s, frame)
    return _save_parquet(session, s, frame)


def _save_delta(session, s: ast.Save, frame) -> Result:
    for option in ("idCols", "mergeSchema"):
        if option in s.options:
            raise refusal(f"the delta save option {option}")
    path = delta.table_path(session.warehouse, s.path, s.options, {**session.conf, **s.options})
    existed = delta.exists(path)
    if existed and s.mode == "ignore":
        return Result(s, f"delta.`{s.path}` exists; nothing written (mode ignore)", name=s.path)
    if existed and s.mode == "errorifexists":
        raise MLSQLError(f"delta.`{s.path}` already exists; use save overwrite or save append")
    path.mkdir(parents=True, exist_ok=True)

    def write() -> pa.Table:  # Daft's writers run at once, not when the result is read
        try:
            return _signed(frame).write_deltalake(str(path), mode=_DELTA_MODES[s.mode],
                                                  partition_cols=list(s.partition_by) or None, **_io(path)).to_arrow()
        except ValueError as exc:  # deltalake's word on the rows (a schema the table does not have): nothing committed
            raise MLSQLError(f"cannot save {s.table} to delta.`{s.path}`: {first_line(exc)}") from exc

    written = _running(write)
    rows = _rows_written(written)
    version = delta.delta_table(path).version()
    return Result(s, f"saved {rows} rows of {s.table} to delta.`{s.path}` (version {version}, mode {s.mode}; Daft)",
                  name=s.path, num_rows=rows, version=version)


def _signed(frame):
    """``frame`` with its unsigned integers (Daft's count is a UInt64) as BIGINT: Delta has no
    unsigned types, and Daft compares an append's schema with the table's before converting."""
    from daft import DataType, col  # heavy: Daft, only for sessions whose sql_engine is daft

    unsigned = [f.name for f in frame.schema() if pa.types.is_unsigned_integer(f.dtype.to_arrow_dtype())]
    return frame.with_columns({name: col(name).cast(DataType.int64()) for name in unsigned}) if unsigned else frame


def _save_parquet(session, s: ast.Save, frame) -> Result:
    path = session.location(s.path, s.options)
    if path.exists() and s.mode == "ignore":
        return Result(s, f"{s.path} exists; nothing written (mode ignore)")
    if path.exists() and s.mode == "errorifexists":
        raise MLSQLError(f"{path} already exists; use save overwrite or save append")
    if path.is_file():
        raise MLSQLError(f"cannot save to {path} on Daft: it is a single file, not a folder of part files")
    partition_cols = list(s.partition_by) or None
    if s.mode == "append" or isinstance(path, ObjectPath):
        # an object store has no rename: Daft's overwrite writes the new files, then deletes the old
        # ones (as a save of the DuckDB engine there does, engine/object_files.py)
        written = _running(lambda: frame.write_parquet(str(path), write_mode="append" if s.mode == "append" else "overwrite",
                                                       partition_cols=partition_cols, **_io(path)).to_arrow())
        rows = _parquet_rows(written, path)
    else:  # written beside it first: a failed save leaves the old files as they were
        staging = path.parent / f".{path.name}.tmp-{uuid.uuid4().hex[:8]}"
        try:
            written = _running(lambda: frame.write_parquet(str(staging), write_mode="overwrite",
                                                           partition_cols=partition_cols).to_arrow())
            rows = _parquet_rows(written, staging)  # the files Daft reports are named under the staging folder
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        if path.exists():
            shutil.rmtree(path)
        staging.rename(path)
    return Result(s, f"saved {rows} rows of {s.table} to parquet.`{s.path}` (mode {s.mode}; Daft)", num_rows=rows)


def _rows_written(written: pa.Table) -> int:
    """The rows a Delta write by Daft added (its result lists the files it added, and those an
    overwrite removed, with their rows: only the ADDs count)."""
    return sum(rows or 0 for rows, operation in zip(written.column("rows").to_pylist(),
                                                    written.column("operation").to_pylist()) if operation == "ADD")


def _parquet_rows(written: pa.Table, path: Path | ObjectPath) -> int:
    """The rows of the parquet files a Daft write reports (read from their footers)."""
    if not isinstance(path, ObjectPath):
        return sum(pq.read_metadata(p).num_rows for p in written.column("path").to_pylist())
    store = path.filesystem()
    return sum(pq.read_metadata(p.split("://", 1)[-1], filesystem=store).num_rows for p in written.column("path").to_pylist())


# -- Daft's errors --------------------------------------------------------------------------------

def _planned(plan):
    """A Daft plan built by ``plan()``; what Daft cannot plan is refused (its words, our hint)."""
    try:
        return plan()
    except MLSQLError:
        raise
    except BaseException as exc:  # noqa: BLE001 - Daft's planning errors (a Rust panic is a BaseException)
        if not _is_daft_error(exc):
            raise
        raise MLSQLError(f"Daft cannot run this (Daft: {first_line(exc)}): {REFUSAL_HINT}") from exc


def computed(frame) -> pa.Table:
    """Run a Daft plan to Arrow; an error while it runs is the statement's, in Daft's words."""
    return _running(frame.to_arrow)


def _running(run):
    """``run()``, which runs a Daft plan; an error while it runs is the statement's, in Daft's words;
    a Ray node lost under it, in words of its own."""
    try:
        return run()
    except MLSQLError:
        raise
    except BaseException as exc:  # noqa: BLE001 - Daft's (or its workers') run-time errors, panics too
        if isinstance(getattr(exc, "cause", None), MLSQLError):  # ours, from a Ray worker (Ray's RayTaskError):
            raise exc.cause from None  # the same error as Daft's in-process runner lets through
        lost = _lost_node(exc)
        if lost is not None:
            raise MLSQLError(f"a Ray node (or a worker) died while Daft ran this, and Daft does not compute again "
                             f"the partitions it held (Ray: {type(lost).__name__}: {first_line(lost)}): the statement "
                             f"did not complete and committed nothing; run it again") from exc
        if not _is_daft_error(exc):
            raise
        raise MLSQLError(f"Daft failed running this (Daft: {first_line(exc)}): {REFUSAL_HINT}") from exc


def _lost_node(exc: BaseException) -> BaseException | None:
    """The Ray error under ``exc`` that says a node, a worker or what they held is gone (Daft runs
    its tasks with ``max_retries=0``, so Ray cannot compute a lost partition again), else None."""
    errors = sys.modules.get("ray.exceptions")  # not imported: not a Ray error
    if errors is None:
        return None
    lost = (errors.ObjectLostError, errors.NodeDiedError, errors.RayActorError, errors.WorkerCrashedError)
    found, seen = None, set()
    while exc is not None and id(exc) not in seen:  # the deepest: a RayTaskError's text is the task's traceback
        seen.add(id(exc))
        found = exc if isinstance(exc, lost) else found
        cause = getattr(exc, "cause", None)  # a RayTaskError's own: the error inside the task
        exc = cause if isinstance(cause, BaseException) else exc.__cause__
    return found


def _is_daft_error(exc: BaseException) -> bool:
    """Daft's own exceptions and what its Rust core raises through pyarrow, Python or Ray: by the
    exception's module, or, for a builtin one (the Ray runner's planner raises a bare RuntimeError),
    by where it was raised: in Daft's package."""
    module = type(exc).__module__ or ""
    if module.startswith(("daft", "pyarrow", "ray", "pyo3_runtime")):
        return True
    daft = sys.modules.get("daft")  # a plan ran, so Daft is imported
    innermost = exc.__traceback__
    while innermost is not None and innermost.tb_next is not None:
        innermost = innermost.tb_next
    return daft is not None and innermost is not None and \
        Path(innermost.tb_frame.f_code.co_filename).is_relative_to(Path(daft.__file__).parent)
