"""``Session``: runs parsed statements against the catalog, DuckDB and the Delta warehouse.

The CLI, the kernel and Python users all go through ``Session.execute_iter``, which parses the
whole text first, then runs statement by statement and yields one ``Result`` per statement.
"""

from __future__ import annotations

import os
import tempfile
import threading
import weakref
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping

import duckdb
import pyarrow as pa

from .. import lang, objectstore
from ..config import resolve as resolve_config
from ..objectstore import ObjectPath
from ..errors import InternalError, MLSQLError
from ..raycluster import RayLink
from ..warm import WarmPool
from ..lang import ast
from . import learning
from ..storage import delta, rows as file_rows
from . import datasources, ets, partition_ids, spark_functions, timezone, udfs, vectors
from ..ml import vectors as ml_vectors
from .datasources import jdbc
from .catalog import Catalog, first_rows
from .connection import SETUP_SQL, define_macros, macro_statements, new_connection
from .branches import run_if
from .commands import run_command, spark_describe
from .compiletime import evaluate_compile_time_sets
from .includes import run_include
from .jobs import Jobs
from .prestart import Prestart
from .result import PREVIEW_ROWS, PreviewedResult, Result
from .shell import run_shell
from .sql import duckdb_message, translate

MODEL_FORMATS = ("tf", "keras")


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
    """

    def __init__(self, warehouse: str | os.PathLike | None = None, ray_address: str | None = None,
                 variables: Mapping[str, str] | None = None, allowed_paths: Iterable[str | os.PathLike] = (),
                 project_root: str | os.PathLike | None = None, workers: WarmPool | None = None):
        config = resolve_config(warehouse, ray_address)
        self._warehouse = config.warehouse
        self.ray_address = config.ray_address
        self.allowed_paths = [Path(p).expanduser().resolve() for p in allowed_paths]
        self.project_root = Path(project_root).expanduser().resolve() if project_root is not None else None
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
        # training and prediction actors kept for the next run (mlsql_ray.warm); released at close if ours
        self.workers = workers if workers is not None else WarmPool()
        self._owns_workers = workers is None
        self._functions = None  # model functions (register), created with the first one
        self.script_functions: dict[str, udfs.ScriptFunction] = {}  # register ScriptUDF, by lower-case name
        self.connections: dict[str, jdbc.Database] = {}  # connect ... as ALIAS (passwords stay here)
        self._request_hidden: dict[str, str | None] = {}  # request-scoped keys: the session value each hides
        self._staging: tempfile.TemporaryDirectory | None = None  # see staging()
        self._sources: list[Path] = []  # the include stack: the file being run is last
        self.jobs = Jobs()  # each top-level statement, for !show jobs and !kill
        self._thread = threading.local()  # per thread: the job it runs and the DuckDB names it registered for it
        self._requests = threading.RLock()  # held by the thread running a request (see run)
        self._previews = False  # whether the running request's front end shows each select's first rows
        self.prestart: Prestart | None = None  # the last request's start ahead of its training (engine.prestart)
        # lower-case name -> (its catalog entry, weakly; the select; its file) of a select named unread
        self._lazy_selects: dict[str, tuple[weakref.ref, ast.Select, str | None]] = {}
        # the selects whose results are held with their first rows not read yet (weakly: a result
        # nobody holds is never shown), with their catalog entries: these keep their meaning
        self._unread: list[tuple[weakref.ref, object]] = []
        self.catalog.held = self._held_views

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
            yield from self._run_one(statement)

    def _request(self, statements: list[ast.Statement], source) -> Iterator[Result]:
        tables_before = set(self.catalog.names())
        try:
            yield from self._run(statements, Path(source).resolve() if source else None)
        finally:
            self.catalog.uncache_script()
            if self.variables.get("__table_name_cache__") == "false":
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

    def table(self, name: str) -> pa.Table:
        """The named table as Arrow. Reading a select's rows is when its run-time errors show
        (a select computes nothing when it runs, unless its first rows were shown): they are
        reported at that select."""
        try:
            return self.catalog.arrow(name)
        except duckdb.Error as exc:
            error = MLSQLError(duckdb_message(exc, self.catalog.names()))
            ref, statement, source = self._lazy_selects.get(name.lower(), (lambda: None, None, None))
            entry = ref()
            if entry is not None and self.catalog.is_live(entry):
                error.source = source
                error.at(statement.line, statement.col)
            raise error from exc

    def close(self) -> None:
        """Release DuckDB, model functions and warm actors (a caller's pool keeps them), and stop Ray
        if this session started it."""
        if self.prestart is not None:
            self.prestart.stop()  # a start still running would connect after the shutdown below
        if self._functions is not None:
            self._functions.close()
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

    # -- running -----------------------------------------------------------------------------

    def _run(self, statements: list[ast.Statement], source: Path | None) -> Iterator[Result]:
        if source is not None:
            self._sources.append(source)
        try:
            statements = evaluate_compile_time_sets(self, statements)
            for statement in statements:
                yield from self._run_one(statement)
        finally:
            if source is not None:
                self._sources.pop()

    def _run_one(self, statement: ast.Statement) -> Iterator[Result]:
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
            runner = _RUNNERS.get(type(statement))
            if runner is None:
                raise MLSQLError(f"{_describe(statement)} is not supported yet")
            outcome = runner(self, statement)
            if isinstance(outcome, Result):
                yield outcome
            else:
                yield from outcome
        except MLSQLError as exc:
            raise self._locate(exc, statement)
        except duckdb.Error as exc:  # the user's SQL, data or file, as DuckDB saw it
            raise self._locate(MLSQLError(duckdb_message(exc, self.catalog.names())), statement) from exc
        except InternalError:
            raise  # from a statement of an included script: it knows its own position
        except Exception as exc:  # noqa: BLE001 - user mistakes are MLSQLErrors by now: anything else is our bug
            if isinstance(exc, RuntimeError) and str(exc).strip() == "Query interrupted":
                # DuckDB's answer to Ctrl-C: an interrupt, not a crash
                raise KeyboardInterrupt(f"interrupted at line {statement.line}") from exc
            raise InternalError(exc, statement.line, statement.col, self._source()) from exc

    def _locate(self, exc: MLSQLError, statement: ast.Statement) -> MLSQLError:
        """Give the error the statement's position and file. Done here, while the statement's
        file is still on the include stack: once the error leaves an include, the including
        statement would otherwise claim it (its file, the included file's line)."""
        if exc.source is None:
            exc.source = self._source()
        return exc.at(statement.line, statement.col)

    def _source(self) -> str | None:
        """The file whose statement is running (the innermost include), if any."""
        return str(self._sources[-1]) if self._sources else None

    # -- one method per statement -------------------------------------------------------------

    def _load(self, s: ast.Load) -> Result:
        datasources.find(s.format).load(self, s)
        return Result(s, f"loaded {s.format}.`{s.path}` as {s.table}", name=s.table)

    def _select(self, s: ast.Select) -> Result:
        """Name the query's result without computing it (see ``Catalog.add_view``). Its first rows
        are read when the front end shows them (``run(previews=True)``: now, before the name is
        defined, so a run-time error changes no table) or else when the result's ``table`` is
        first read (``PreviewedResult``); a batch run computes none. A result that turns out
        small is kept (``catalog.first_rows``), so showing it and reading it later run the query once."""
        sql, tables, calls, relation = self._prepare(s.sql, s.line, s.col)
        vector_columns = vectors.of_select(self, s.sql, tables)
        # a view would rename duplicate column names (a, a_1); Spark keeps both: hold those rows
        if (self._calls_session_functions(calls) or partition_ids.called(s.sql)
                or len(set(relation.columns)) != len(relation.columns)):
            table = ml_vectors.marked(relation.to_arrow_table(), vector_columns)
            self.catalog.add_arrow(s.table, table, "select")
            return _select_result(s, table.slice(0, PREVIEW_ROWS), table.num_rows)
        if not self._previews:
            self.catalog.add_view(s.table, sql, tables, "select", relation)
            self.catalog.mark_vectors(s.table, vector_columns)
            entry = self.catalog.entry(s.table)
            self._lazy_selects[s.table.lower()] = (weakref.ref(entry), s, self._source())
            result = PreviewedResult(s, s.table, self._late_preview(s, entry))
            self._unread.append((weakref.ref(result), entry))
            return result
        rows, whole = first_rows(relation)
        if whole:
            self.catalog.add_arrow(s.table, ml_vectors.marked(rows, vector_columns), "select")
            return _select_result(s, rows.slice(0, PREVIEW_ROWS), rows.num_rows)
        self.catalog.add_view(s.table, sql, tables, "select", relation)
        self.catalog.mark_vectors(s.table, vector_columns)
        return _select_result(s, rows.slice(0, PREVIEW_ROWS), self._cheap_count(self.catalog.entry(s.table), relation))

    def _late_preview(self, s: ast.Select, entry) -> Callable[[PreviewedResult], None]:
        """The preview of a select that ran without one, computed when its result is first read:
        from the table it named, if that name still means it (kept if small, as in ``_select``);
        a run-time error is the select's, at its position."""
        source = self._source()

        def located(exc: MLSQLError) -> MLSQLError:
            exc.source = source
            return exc.at(s.line, s.col)

        def preview(result: PreviewedResult) -> None:
            try:
                rows, whole = first_rows(self.catalog.rows_of(entry))
                if whole and self.catalog.entry(s.table) is entry:
                    self.catalog.keep(s.table, rows)
                num_rows = rows.num_rows if whole else self._cheap_count(entry, self.catalog.rows_of(entry))
            except duckdb.Error as exc:
                raise located(MLSQLError(duckdb_message(exc, self.catalog.names()))) from exc
            shown = _select_result(s, rows.slice(0, PREVIEW_ROWS), num_rows)
            result.message, result.table, result.num_rows, result.more = (
                shown.message, shown.table, shown.num_rows, shown.more)

        return preview

    def _cheap_count(self, entry, relation: duckdb.DuckDBPyRelation) -> int | None:
        """The row count of a select's catalog ``entry`` when counting touches no file, else None."""
        if all(self.catalog.in_memory(table) for table in entry.reads):
            return relation.count("*").fetchall()[0][0]
        return None

    def _held_views(self) -> list:
        """The catalog entries of the selects whose results are held with their first rows unread."""
        self._unread = [(ref, entry) for ref, entry in self._unread if ref() is not None and ref().pending()]
        return [entry for _, entry in self._unread]

    def _calls_session_functions(self, calls: tuple[tuple[str, str], ...]) -> bool:
        """Whether a query calls a function this session registered (a model function or a Python
        ScriptUDF). Such a
        select runs at once, as before selects were lazy: the function runs once, its errors
        show at the select, and registering another function of that name later cannot change
        the select's rows."""
        registered = self._functions.functions if self._functions is not None else {}
        return any(name.lower() in registered or name.lower() in self.script_functions for name, _ in calls)

    def _save(self, s: ast.Save) -> Result:
        source = datasources.find(s.format)
        if source.save is None:
            raise MLSQLError(f"{source.name} can only be loaded, not saved")
        self.catalog.relation(s.table)  # fails first if the table is unknown
        return source.save(self, s)

    def _set(self, s: ast.Set) -> Result:
        s = s.substituted(self.variables)
        kind = s.type
        if kind == "defaultParam" and s.key in self.variables:
            return Result(s, f"{s.key} keeps its value")
        if kind == "sql":
            translate(s.value, s.line, s.col, query=True)  # a query, as in Byzer (checked at parse time unless ${} hid it)
            first = self._query(s.value, s.line, s.col).limit(1).fetchall()
            value = "" if not first or first[0][0] is None else str(first[0][0])
        elif kind == "shell":
            value = run_shell(s.key, s.value, self.variables, s.options.get("timeout"))
        else:
            value = s.value
        if kind == "conf":
            if s.key == timezone.SESSION_TIME_ZONE:
                self.connection_setup = (*SETUP_SQL, *macro_statements(self._macros), timezone.apply(self.con, value))
            self.conf[s.key] = value
        else:
            if s.scope == "request":
                self._request_hidden.setdefault(s.key, self.variables.get(s.key))
            else:
                self._request_hidden.pop(s.key, None)  # now a session variable: it outlives the request
            self.variables[s.key] = value
        return Result(s, f"set {s.key}")

    def _python(self, s: ast.PythonCell) -> Result:
        from ..cells.runner import run_cell

        table, output, notes = run_cell(self, s)
        if table is None:
            return Result(s, "python cell done", warnings=notes)
        if output is not None:
            self.catalog.add_arrow(output, table, "python")
        label = output or "result"
        if file_rows.is_file_rows(table.schema):  # a file as rows: its bytes are no sight to show
            size = sum(table.column("offset").to_pylist())
            return Result(s, f"{label}: a file of {size} bytes in {table.num_rows} rows", num_rows=table.num_rows,
                          name=output, warnings=notes)
        return Result(s, f"{label}: {table.num_rows} rows", table=table.slice(0, PREVIEW_ROWS),
                      num_rows=table.num_rows, name=output, warnings=notes)

    def _model_function(self, name: str, fmt: str, table: str, options: dict):
        """Load a model table's rows and start the actors that serve it."""
        from ..predict import ModelFunction

        if fmt.lower() not in MODEL_FORMATS:
            raise MLSQLError(f"models are registered as {' or '.join(MODEL_FORMATS)}.`db.table`, not {fmt}")
        path = delta.table_path(self.warehouse, table, options)
        delta_table = delta.open_table(path, table, {k: v for k, v in options.items() if k == "version"})
        rows = file_rows.model_rows(delta.arrow_dataset(delta_table, path).to_table(), table)
        self.ray_link.ensure()
        return ModelFunction.start(name, table, delta_table.version(), rows, options,
                                   self.ray_link.cpus(), pool=self.workers)

    def _register(self, s: ast.Register) -> Result:
        from ..predict import FunctionRegistry

        handler = REGISTER_FORMATS.get(s.format.lower())
        if handler is not None:
            return handler(self, s)
        if learning.is_algorithm(s.format):
            functions = learning.model_functions(self, s)
        elif s.format.lower() in ets.ETS:
            functions = ets.fitted_functions(self, s)
        else:
            functions = [self._model_function(s.function, s.format, s.path, dict(s.options))]
        if self._functions is None:
            self._functions = FunctionRegistry(self.con)
        for function in functions:
            self._functions.add(function)
        function, *companions = functions
        also = f"; also {', '.join(c.name for c in companions)}" if companions else ""
        return Result(s, f"registered {s.function} from {s.path} version {function.version} "
                         f"({sum(len(f.actors) for f in functions)} workers, output {function.output}{also})",
                      name=s.function)

    def _unregister(self, s: ast.Unregister) -> Result:
        removed = []
        if self._functions is not None:
            removed = [s.path] if self._functions.remove(s.path) else self._functions.remove_for_table(s.path)
        if not removed:
            raise MLSQLError(f"no function is registered as {s.path} or from a model table of that name")
        return Result(s, f"unregistered {', '.join(removed)}")

    def _predict(self, s: ast.Train) -> Result:
        """``predict T as tf.`db.model` [where inputCol="image"] [as OUT];``: T plus a prediction column."""
        options = dict(s.options)
        table = self.catalog.arrow(s.table)
        column = options.get("inputCol") or next(
            (f.name for f in table.schema if pa.types.is_list(f.type) or pa.types.is_fixed_size_list(f.type)
             or pa.types.is_large_list(f.type)), None)
        if column is None or column not in table.column_names:
            raise MLSQLError(f"predict needs a list column of {s.table} to feed the model (inputCol=\"...\"); "
                             f"columns: {', '.join(table.column_names)}")
        function = self._model_function("predict", s.format, s.path, options)
        function.argument = column
        try:
            scored = table.append_column("prediction", function(table.column(column)))
        except ValueError as exc:
            raise MLSQLError(str(exc)) from exc
        finally:
            function.close()
        output = s.output or f"{s.table}_predictions"
        self.catalog.add_arrow(output, scored, f"predict {s.path}")
        return Result(s, f"{output}: {scored.num_rows} rows", table=scored.slice(0, PREVIEW_ROWS),
                      num_rows=scored.num_rows, name=output)

    def _train(self, s: ast.Train) -> Result:
        """``train|run|predict T as FORMAT.`...```: an ET by name first (``run``/``train``, and
        ``run`` with any format but Ray: mlsql_ray.engine.ets, where an unknown name fails listing
        the known), else looked up in ``_TRAIN_VERBS`` by verb and format, then by verb alone (any
        other format names a built-in algorithm)."""
        fmt = s.format.lower()
        if (s.verb in ("run", "train") and fmt in ets.ETS) or (s.verb == "run" and fmt != "ray"):
            return ets.run(self, s)
        handler = _TRAIN_VERBS.get((s.verb, fmt)) or _TRAIN_VERBS.get((s.verb, None))
        if handler is None:
            raise MLSQLError(f"{s.verb} ... as {s.format} is not supported (supported: run ... as Ray.``, "
                             f"predict ... as tf.`...`, train|predict ... as an algorithm or a feature ET)")
        return handler(self, s)

    def _run_ray(self, s: ast.Train) -> Result:
        """``run T as Ray.`` where code=... and outputTable=...``: a Python cell as a statement."""
        if "code" not in s.options:
            raise MLSQLError("run ... as Ray.`` needs the Python code in a code='''...''' option")
        annotations = {k: v for k, v in s.options.items() if k not in ("code", "inputTable", "outputTable")}
        input_table = s.options.get("inputTable") or (s.table if s.table.lower() != "command" else None)
        if input_table:
            annotations["input"] = input_table
        output = s.options.get("outputTable") or s.output
        if output:
            annotations["output"] = output
        cell = ast.PythonCell(code=s.options["code"], annotations=annotations, line=s.code_line or s.line, col=1)
        return self._python(cell)

    def _connect(self, s: ast.Connect) -> Result:
        """``connect jdbc where url=... and user=... and password=... as ALIAS;``: remembered for
        ``load jdbc.`ALIAS.table``` and ``save ... as jdbc.`ALIAS.table```; nothing is opened yet."""
        if s.format.lower() != "jdbc":
            raise MLSQLError(f"connect {s.format} is not supported (connect jdbc is)")
        if not s.alias:
            raise MLSQLError("connect jdbc needs a name: connect jdbc where url=\"...\" as ALIAS;")
        database = jdbc.database_from_options(s.options, "connect jdbc")
        self.connections[s.alias] = database
        return Result(s, f"connected {s.alias} to {database.masked_url}" + (f" as {database.user}" if database.user else ""))

    def _command(self, s: ast.Command) -> Result:
        return run_command(self, s)

    # -- helpers -----------------------------------------------------------------------------

    def _query(self, spark_sql: str, line: int, col: int) -> duckdb.DuckDBPyRelation:
        """Run Spark SQL on DuckDB over the catalog's tables (a ``DESCRIBE`` as Spark answers it)."""
        described = spark_describe(self, spark_sql, line, col)
        if described is not None:
            return self.con.from_arrow(described)
        return self._prepare(spark_sql, line, col)[3]

    def _prepare(self, spark_sql: str, line: int, col: int) -> tuple[str, tuple[str, ...], tuple[tuple[str, str], ...],
                                                                    duckdb.DuckDBPyRelation]:
        """Spark SQL as DuckDB SQL (with the tables it reads and the unknown functions it calls),
        its tables made visible to DuckDB, and the query as DuckDB bound it (once: its columns and
        types are known, nothing is computed)."""
        spark_sql = vectors.printed(self, spark_sql, line, col)
        tables = translate(spark_sql, line, col).tables  # cached: the parser checked this SQL without schemas
        translation = translate(spark_sql, line, col, self.catalog.schemas(tables))
        sql, tables, calls = translation.sql, translation.tables, translation.calls
        defined = define_macros(self.con, sql, self._macros)
        if defined:
            self.connection_setup = (*self.connection_setup, *defined)
        self.catalog.ensure(tables)
        if partition_ids.called(spark_sql):
            sql, helpers = partition_ids.rewrite(self, sql)
            self._thread.tables.extend(helpers)  # unregistered when the statement's job ends
        if self._functions is not None:
            self._functions.note_calls(calls)
        relation = self.con.sql(sql)  # DuckDB checks the query here
        if translation.bound_types:
            sql, relation = spark_functions.spark_result(relation, sql)
        return sql, tables, calls, relation

    @property
    def warehouse(self) -> Path | ObjectPath:
        """The root of the Delta tables; on an object store, with the options the environment and
        the session's ``fs.s3a.*`` settings give it now."""
        return objectstore.with_conf(self._warehouse, self.conf)

    def _location(self, path: str, options: Mapping[str, str] | None = None) -> Path | ObjectPath:
        """A file path (as ``_path``) or an object store URI, with the options of the environment
        and the session's ``fs.s3a.*`` settings, overridden by those among a statement's
        ``options`` (Byzer's ``where `fs.s3a.access.key`="…"``)."""
        if not objectstore.is_uri(path):
            return self._path(path)
        return objectstore.resolve(path, {**self.conf, **(options or {})})

    def staging(self) -> Path:
        """A private local folder of this session, removed at close: files fetched from or bound
        for object storage (``engine.object_files``)."""
        if self._staging is None:
            self._staging = tempfile.TemporaryDirectory(prefix="mlsql-staging-")
        return Path(self._staging.name)

    def _path(self, path: str) -> Path:
        """A local file path; relative ones are relative to the running script's folder, if any.
        An object store URI is refused here: only the sources and commands that ask ``_location``
        read object storage."""
        if objectstore.is_uri(path):
            raise MLSQLError(f"{path} is on object storage, which this statement cannot read or write: "
                             "load/save of parquet, csv, json, text and delta, !fs and include can "
                             "(or copy it with !fs -get)")
        p = Path(path).expanduser()
        if not p.is_absolute() and self._sources:
            p = self._sources[-1].parent / p
        return p


def _select_result(s: ast.Select, head: pa.Table, num_rows: int | None) -> Result:
    """A select's result showing its first rows ``head`` and its row count, if known."""
    message = (f"{s.table}: {num_rows} rows" if num_rows is not None
               else f"{s.table}: more than {PREVIEW_ROWS} rows (not counted: that would read them all)")
    return Result(s, message, table=head, num_rows=num_rows, name=s.table, more=num_rows is None)


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


REGISTER_FORMATS: dict[str, Callable[[Session, ast.Register], Result]] = {
    "scriptudf": udfs.register,
}
"""``register FORMAT.`...` as f``: formats with their own handler; the rest are model formats (tf, keras)."""


_TRAIN_VERBS: dict[tuple[str, str | None], Callable[[Session, ast.Train], Result]] = {
    ("run", "ray"): Session._run_ray,
    **{("predict", fmt): Session._predict for fmt in MODEL_FORMATS},
    **{("predict", name): ets.predict for name in ets.ETS},  # a feature ET's fitted state (ets/fitted.py)
    ("train", None): learning.train,  # a built-in algorithm (mlsql_ray.ml)
    ("predict", None): learning.predict,
}

_RUNNERS: dict[type, Callable[[Session, ast.Statement], Result | Iterator[Result]]] = {
    ast.Load: Session._load,
    ast.Select: Session._select,
    ast.Save: Session._save,
    ast.Set: Session._set,
    ast.Include: run_include,
    ast.Command: Session._command,
    ast.PythonCell: Session._python,
    ast.Train: Session._train,
    ast.Register: Session._register,
    ast.Unregister: Session._unregister,
    ast.Connect: Session._connect,
    ast.If: run_if,
}
