"""``Session``: runs parsed statements against the catalog, DuckDB and the Delta warehouse.

The CLI, the kernel and Python users all go through ``Session.execute_iter``, which parses the
whole text first, then runs statement by statement and yields one ``Result`` per statement.
"""

from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path
from typing import Iterable, Iterator, Mapping

import duckdb
import pyarrow as pa

from .. import lang, objectstore
from ..cluster.link import RayLink
from ..cluster.warm import WarmPool
from ..config import resolve as resolve_config
from ..config import SQL_ENGINE_SETTING, sql_engine_named
from ..errors import InternalError, MLSQLError, NotAllowed
from ..lang import ast
from ..objectstore import ObjectPath
from ..spark import results as spark_results
from . import partition_ids, statements, timezone, vectors
from .. import options
from ..options import flag
from .catalog import Catalog
from .commands import spark_describe
from .compiletime import evaluate_compile_time_sets
from .connection import SETUP_SQL, define_macros, macro_statements, new_connection
from .datasources import jdbc
from .jobs import Jobs
from .prestart import Prestart
from .result import Result
from .sql import duckdb_message, interrupted_query, translate



class Session:
    """One user's tables, variables and settings, over one DuckDB connection.

    ``warehouse``: root of the Delta tables, a folder or an object store URI such as
    ``s3://bucket/prefix`` (default ``$MLSQL_WAREHOUSE`` or ``./warehouse``).
    ``ray_address``: the Ray cluster for Python cells (default ``$MLSQL_RAY_ADDRESS``; none: an
    embedded local Ray, started on first need). ``variables``: initial ``${}`` values, e.g. from
    ``--set``. Both defaults come from :func:`mlsql_ray.config.resolve`. ``allowed_paths``: folders
    the file commands (``!fs``, ``!saveFile``) may touch besides the working directory and the
    warehouse. ``project_root``: where ``include project.`path``` starts (default: the folder of the
    script being run). ``workers``: a warm pool of training and prediction actors the caller owns
    and shares between sessions (kept when this one closes); by default the session has its own.
    ``home``: a folder that confines local paths (a served owner's home, ``mlsql-ray serve
    --home-root``): relative paths resolve under it and a path that leaves it (``..``, a symlink,
    an absolute path elsewhere) is refused, and so are object store URIs unless
    ``home_object_storage``; ``None``: no confinement (see ``confined``). ``sql_engine``: what runs
    the selects, ``"duckdb"`` (default, ``$MLSQL_SQL_ENGINE``) or ``"daft"`` over the session's Ray
    (docs/daft.md); ``set sql_engine="daft" where type="conf";`` switches it.
    """

    def __init__(self, warehouse: str | os.PathLike | None = None, ray_address: str | None = None,
                 variables: Mapping[str, str] | None = None, allowed_paths: Iterable[str | os.PathLike] = (),
                 project_root: str | os.PathLike | None = None, workers: WarmPool | None = None,
                 home: str | os.PathLike | None = None, home_object_storage: bool = False,
                 sql_engine: str | None = None):
        config = resolve_config(warehouse, ray_address, sql_engine=sql_engine)
        self.sql_engine = config.sql_engine
        self._warehouse = config.warehouse
        self.ray_address = config.ray_address
        self.allowed_paths = [Path(p).expanduser().resolve() for p in allowed_paths]
        self.project_root = Path(project_root).expanduser().resolve() if project_root is not None else None
        self.home = Path(home).resolve() if home is not None else None  # see confined
        self.home_object_storage = home_object_storage
        self.last_command_table: pa.Table | None = None  # for !lastCommand named T
        self.variables: dict[str, str] = dict(variables or {})
        self.conf: dict[str, str] = {}
        self.python_env: dict[str, str] = {}
        self.python_conf: dict[str, str] = {}
        self.con = new_connection()
        # what a worker's own connection needs to run our queries: our functions, the session time zone,
        # and the on-demand macros this connection defined (``_macros``, see ``_prepare``)
        self.connection_setup = (*SETUP_SQL, timezone.set_statement(timezone.current(self.con)))
        self._macros: set[str] = set()
        self.catalog = Catalog(self.con)
        self.ray_link = RayLink(self.ray_address)  # Ray starts (or is reached) on first need only
        # training and prediction actors kept for the next run (mlsql_ray.cluster.warm); released at close if ours
        self.workers = workers if workers is not None else WarmPool()
        self._owns_workers = workers is None
        self.model_functions = None  # the functions of register, of every kind (ml.functions), made with the first
        self.connections: dict[str, jdbc.Database] = {}  # connect ... as ALIAS (passwords stay here)
        self._request_hidden: dict[str, str | None] = {}  # request-scoped keys: the session value each hides
        self._staging: tempfile.TemporaryDirectory | None = None  # see staging()
        self._sources: list[Path] = []  # the include stack: the file being run is last
        self._shown_as: dict[Path, str] = {}  # a local copy of a script on object storage -> its URI, for messages
        self.jobs = Jobs()  # each top-level statement, for !show jobs and !kill
        self._thread = threading.local()  # per thread: the job it runs and the DuckDB names it registered for it
        self._requests = threading.RLock()  # held by the thread running a request (see run)
        self._previews = False  # whether the running request's front end shows each select's first rows
        self.prestart: Prestart | None = None  # the last request's start ahead of its training (engine.prestart)
        self._prestarts: list[Prestart] = []  # the last request's and earlier ones still running: close stops them all

    # -- public API ------------------------------------------------------------------------

    def execute(self, text: str, source: str | os.PathLike | None = None, previews: bool = False) -> list[Result]:
        """Run every statement of ``text``; ``source`` is the file it came from (for includes)."""
        return list(self.execute_iter(text, source, previews))

    def execute_iter(self, text: str, source: str | os.PathLike | None = None,
                     previews: bool = False) -> Iterator[Result]:
        """Parse all of ``text`` (a syntax error stops everything), then run and yield results."""
        yield from self.run(lang.parse(text), source, previews)

    def run(self, statements: list[ast.Statement], source: str | os.PathLike | None = None,
            previews: bool = False) -> Iterator[Result]:
        """Run already parsed statements, yielding one result per statement (or more, for
        includes). ``previews``: the caller shows each select's first rows (the kernel and the
        CLI do), so each select computes them as it runs, and a run-time error in them fails the
        select, which then defines nothing; without it a select only names its query
        (``Session._select``). This is one request, in Byzer's words: variables set with scope "request" (the
        default) and tables cached with ``!cache T script`` are forgotten when it ends (a request
        variable that hid a session one gives it back), and so are the tables it defined if
        ``set __table_name_cache__ = "false";`` (Byzer's switch, so that a table an untaken ``!if``
        branch would define does not linger from an earlier run).

        A session runs one request at a time. While one runs, another thread may run only
        ``!show jobs`` and ``!kill`` (a side request: it leaves the running request's state alone).

        A request that will train starts Ray and the workers its training takes in the background
        first (``engine.prestart``); if it fails before the training runs, they are stopped."""
        if not self._requests.acquire(blocking=False):
            yield from self._side_request(statements)
            return
        self._previews = previews
        self.prestart = Prestart.begin(self, statements)
        self._prestarts = [p for p in self._prestarts if p.running()]
        if self.prestart is not None:
            self._prestarts.append(self.prestart)
        try:
            yield from self._request(statements, source)
        except BaseException:
            if self.prestart is not None:
                self.prestart.cancel()
            raise
        finally:
            self._previews = False
            self._requests.release()

    def _side_request(self, statements: list[ast.Statement]) -> Iterator[Result]:
        running = ", ".join(f"{job.id} ({job.text})" for job in self.jobs.running()) or "a request"
        for statement in statements:
            if not _is_side_statement(statement):
                raise MLSQLError(f"this session is running job {running}: while it runs, another thread may "
                                 f"only run !show jobs and !kill", statement.line, statement.col)
        for statement in statements:
            yield from self.run_one(statement)

    def _request(self, statements: list[ast.Statement], source) -> Iterator[Result]:
        tables_before = set(self.catalog.names())
        try:
            yield from self.run_script(statements, Path(source).resolve() if source else None)
        finally:
            self.catalog.uncache_script()
            if not flag(self.variables, "__table_name_cache__", True):
                for name in set(self.catalog.names()) - tables_before:
                    self.catalog.remove(name)
            self._end_request_variables()

    def _end_request_variables(self) -> None:
        """Forget the request's variables, giving back the session values they hid."""
        for key, hidden in self._request_hidden.items():
            if hidden is None:
                self.variables.pop(key, None)
            else:
                self.variables[key] = hidden
        self._request_hidden.clear()

    def table(self, name: str, limit: int | None = None) -> pa.Table:
        """The named table as Arrow (its first ``limit`` rows, if given). Reading a select's rows
        is when its run-time errors show (a select computes nothing when it runs, unless its first
        rows were shown): they are reported at that select."""
        try:
            if limit is not None:  # streamed, not LIMIT: DuckDB's LIMIT renames a second column `a` to `a_1`
                return _head(self.catalog.batches(name), limit)
            return self.catalog.arrow(name)
        except duckdb.Error as exc:
            error = MLSQLError(duckdb_message(exc, self.catalog.names()))
            entry = self.catalog.entry(name)
            if entry is not None and entry.origin is not None:
                error.source, line, col = entry.origin
                error.at(line, col)
            raise error from exc

    def close(self) -> None:
        """Release DuckDB, model functions and warm actors (a caller's pool keeps them), and stop Ray
        if this session started it."""
        for prestart in self._prestarts:
            prestart.stop()  # a start still running would connect after the shutdown below
        if self.model_functions is not None:
            self.model_functions.close()
        if self._owns_workers:
            self.workers.release()
        self.ray_link.shutdown()
        self.con.close()
        if self._staging is not None:
            self._staging.cleanup()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- running: with query, location, local_path, include_stack and model_functions, the ----
    # -- runtime statement handlers use (nothing outside this module touches its privates) ----

    def run_script(self, statements: list[ast.Statement], source: Path | None,
                   shown_as: str | None = None) -> Iterator[Result]:
        """Run parsed statements nested in the running one (an include's file, ``!runScript``'s
        text); relative paths in them are relative to ``source``'s folder, if given. ``shown_as``:
        the name errors give the file when ``source`` is a local copy (of an object's URI)."""
        if source is not None:
            self._sources.append(source)
            if shown_as is not None:
                self._shown_as[source] = shown_as
        try:
            statements = evaluate_compile_time_sets(self, statements)
            for statement in statements:
                yield from self.run_one(statement)
        finally:
            if source is not None:
                self._sources.pop()

    def run_one(self, statement: ast.Statement) -> Iterator[Result]:
        """Run one statement; at the top of a script (not inside an include or a branch) as a job."""
        if getattr(self._thread, "job", None) is not None:
            yield from self._run_statement(statement)
            return
        job = self.jobs.start(statement)
        self._thread.job, self._thread.tables = job, []
        if self.prestart is not None:
            self.prestart.reach(statement)
        try:
            yield from self._run_statement(statement)
        except BaseException as exc:
            if self.jobs.finish(job, exc):
                raise self._locate(MLSQLError(f"job {job.id} was killed (!kill {job.id})"), statement) from exc
            raise
        else:
            self.jobs.finish(job, None)
        finally:
            self._thread.job = None
            while self._thread.tables:
                self.con.unregister(self._thread.tables.pop())

    def _run_statement(self, statement: ast.Statement) -> Iterator[Result]:
        try:
            if not isinstance(statement, ast.Set):
                statement = statement.substituted(self.variables)
            runner = statements.RUNNERS.get(type(statement))
            if runner is None:
                raise MLSQLError(f"{_describe(statement)} is not supported yet")
            # unknown options warn (options.check_known); the statement's results carry the warnings
            # (a set is never strict: a bad strictOptions value must stay mendable)
            strict = not isinstance(statement, ast.Set) and flag(self.variables, options.STRICT_OPTIONS, False)
            with options.noting(options.Notes(strict)) as notes:
                outcome = runner(self, statement)
                for result in [outcome] if isinstance(outcome, Result) else outcome:
                    result.warn(notes.take())
                    yield result
        except MLSQLError as exc:
            raise self._locate(exc, statement)
        except duckdb.Error as exc:  # the user's SQL, data or file, as DuckDB saw it
            raise self._locate(MLSQLError(duckdb_message(exc, self.catalog.names())), statement) from exc
        except InternalError:
            raise  # from a statement of an included script: it knows its own position
        except Exception as exc:  # noqa: BLE001 - user mistakes are MLSQLErrors by now: anything else is our bug
            if interrupted_query(exc):  # DuckDB's answer to a SIGINT during a query: an interrupt, not a crash
                raise KeyboardInterrupt(f"interrupted at line {statement.line}") from exc
            raise InternalError(exc, statement.line, statement.col, self.current_file()) from exc

    def _locate(self, exc: MLSQLError, statement: ast.Statement) -> MLSQLError:
        """Give the error the statement's position and file. Done here, while the statement's
        file is still on the include stack: once the error leaves an include, the including
        statement would otherwise claim it (its file, the included file's line)."""
        if exc.source is None:
            exc.source = self.current_file()
        return exc.at(statement.line, statement.col)

    @property
    def include_stack(self) -> tuple[Path, ...]:
        """The script files being run, outermost first: the one whose statement runs is last."""
        return tuple(self._sources)

    def current_file(self) -> str | None:
        """The file whose statement is running (the innermost include), if any."""
        if not self._sources:
            return None
        return self._shown_as.get(self._sources[-1], str(self._sources[-1]))

    # -- helpers -----------------------------------------------------------------------------

    def query(self, spark_sql: str, line: int, col: int) -> duckdb.DuckDBPyRelation:
        """Run Spark SQL on DuckDB over the catalog's tables (a ``DESCRIBE`` as Spark answers it)."""
        described = spark_describe(self, spark_sql, line, col)
        if described is not None:
            return self.con.from_arrow(described)
        return self.prepare(spark_sql, line, col)[3]

    def prepare(self, spark_sql: str, line: int, col: int) -> tuple[str, tuple[str, ...], tuple[tuple[str, str], ...],
                                                                    duckdb.DuckDBPyRelation]:
        """Spark SQL as DuckDB SQL (with the tables it reads and the unknown functions it calls),
        its tables made visible to DuckDB, and the query as DuckDB bound it (once: its columns and
        types are known, nothing is computed)."""
        spark_sql = vectors.printed(self, spark_sql, line, col)
        translation = translate(spark_sql, line, col)  # cached: the parser checked this SQL without schemas
        if translation.wants_schemas:  # else the schemas would change nothing (``Translation.wants_schemas``)
            translation = translate(spark_sql, line, col, self.catalog.schemas(translation.tables))
        sql, tables, calls = translation.sql, translation.tables, translation.calls
        self.define_macros_of(sql)
        self.catalog.ensure(tables)
        if partition_ids.called(spark_sql):
            sql, helpers = partition_ids.rewrite(self, sql)
            self._thread.tables.extend(helpers)  # unregistered when the statement's job ends
        if self.model_functions is not None:
            self.model_functions.note_calls(calls)
        relation = self.con.sql(sql)  # DuckDB checks the query here
        if translation.bound_types:
            sql, relation = spark_results.spark_result(relation, sql)
        return sql, tables, calls, relation

    def define_macros_of(self, sql: str) -> None:
        """Define on the session's connection the Spark macros the DuckDB ``sql`` calls (a translated
        query, or an ET's own query that writes Spark's answers with them)."""
        defined = define_macros(self.con, sql, self._macros)
        if defined:
            self.connection_setup = (*self.connection_setup, *defined)

    @property
    def shows_previews(self) -> bool:
        """Whether the running request's front end shows each select's first rows."""
        return self._previews

    def set_conf(self, key: str, value: str) -> None:
        """A ``set ... where type="conf"`` setting; the session time zone also applies to DuckDB
        and to what workers' connections are set up with; ``sql_engine`` chooses what runs the
        selects from then on."""
        if key == SQL_ENGINE_SETTING:
            self.sql_engine = sql_engine_named(value)
        if key == timezone.SESSION_TIME_ZONE:
            self.connection_setup = (*SETUP_SQL, *macro_statements(self._macros), timezone.apply(self.con, value))
        self.conf[key] = value

    def set_variable(self, key: str, value: str, scope: str | None = None) -> None:
        """``${key}``'s value; with scope ``request`` only until the running request ends."""
        if scope == "request":
            self._request_hidden.setdefault(key, self.variables.get(key))
        else:
            self._request_hidden.pop(key, None)  # now a session variable: it outlives the request
        self.variables[key] = value

    @property
    def warehouse(self) -> Path | ObjectPath:
        """The root of the Delta tables; on an object store, with the options the environment and
        the session's ``fs.s3a.*`` settings give it now."""
        return objectstore.with_conf(self._warehouse, self.conf)

    def location(self, path: str, options: Mapping[str, str] | None = None) -> Path | ObjectPath:
        """A file path (as ``local_path``) or an object store URI, with the options of the environment
        and the session's ``fs.s3a.*`` settings, overridden by those among a statement's
        ``options`` (Byzer's ``where `fs.s3a.access.key`="…"``)."""
        if not objectstore.is_uri(path):
            return self.local_path(path)
        return self.confined(objectstore.resolve(path, {**self.conf, **(options or {})}), path)

    def staging(self) -> Path:
        """A private local folder of this session, removed at close: files fetched from or bound
        for object storage (``engine.object_files``)."""
        if self._staging is None:
            self._staging = tempfile.TemporaryDirectory(prefix="mlsql-staging-")
        return Path(self._staging.name)

    def local_path(self, path: str) -> Path:
        """A local file path; relative ones are relative to the running script's folder, if any,
        else to the session's ``home``, outside which nothing is reached. An object store URI is
        refused here: only the sources and commands that ask ``location`` read object storage."""
        if objectstore.is_uri(path):
            raise MLSQLError(f"{path} is on object storage, which this statement cannot read or write: "
                             "load/save of parquet, csv, json, text and delta, !fs and include can "
                             "(or copy it with !fs -get)")
        p = Path(path).expanduser()
        if not p.is_absolute() and self._sources:
            p = self._sources[-1].parent / p
        return self.confined(p, path)

    def confined(self, path: Path | ObjectPath, shown: str) -> Path | ObjectPath:
        """``path`` as the session's ``home`` lets a statement reach it (``shown``: as the script
        wrote it). No home: as it is. A local path: under the home (an absolute one stays itself),
        refused if it leaves it by ``..`` or a symlink. An object store URI: refused unless
        ``home_object_storage`` (a home cannot confine a bucket: its credentials decide)."""
        if self.home is None:
            return path
        if isinstance(path, ObjectPath):
            if not self.home_object_storage:
                raise NotAllowed(f"{shown} is on object storage, which an owner confined to a home may not reach "
                                 "(mlsql-ray serve --home-root without --allow-object-storage)")
            return path
        inside = self.home / path  # an absolute path stays itself
        if not Path(os.path.realpath(inside)).is_relative_to(self.home):  # realpath: after .. and symlinks
            raise NotAllowed(f"{shown} is outside this owner's home: paths are relative to it and stay in it")
        return inside


def _head(reader: pa.RecordBatchReader, limit: int) -> pa.Table:
    """The first ``limit`` rows of a stream, reading no further."""
    batches, count = [], 0
    try:
        for batch in reader:
            if count >= limit:
                break
            batches.append(batch.slice(0, limit - count))
            count += batches[-1].num_rows
    finally:
        reader.close()
    return pa.Table.from_batches(batches, reader.schema)


def _is_side_statement(statement: ast.Statement) -> bool:
    """``!show jobs`` and ``!kill``: what another thread may run while a request runs."""
    if not isinstance(statement, ast.Command):
        return False
    name, args = statement.name.lower(), [a.lower() for a in statement.args]
    return name == "kill" or (name == "show" and args == ["jobs"])


def _describe(statement: ast.Statement) -> str:
    if isinstance(statement, ast.PythonCell):
        return "a --%python cell"
    if isinstance(statement, ast.Train):
        return f"{statement.verb} ... as {statement.format}"
    if isinstance(statement, ast.RawSQL):
        return f"a {statement.verb} statement"
    return f"the {statement.keyword} statement"


