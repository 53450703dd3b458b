"""Running a ``--%python`` cell: settings merged, input partitioned into Ray, code executed in
the session's process (``runIn=driver``) or as a Ray task (``runIn=executor``), result checked
against ``--%schema`` and registered as ``--%output``.

A cell is user code with side effects: it runs once. Its Ray task is never retried, and a worker
that dies under it (a crash, an out-of-memory kill, ``os._exit``) is the cell's error at its line.
On the driver, the cell's own ``os._exit`` would end the session's process without a word: it
fails the cell instead (``_refuse_process_exit``).
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.util
import itertools
import linecache
import os
import re
import sys
import threading
import traceback
import types
from typing import Iterator

from ..errors import MLSQLError
from ..lang import ast
from .context import CellContext, DataServer, RayContext, env_options
from . import context, output, partitions
from .memory import memory_limit, parse_limit
from .schema import conform, parse_schema
from ..storage import streaming_tar

KNOWN_SETTINGS = {
    "input": "table whose partitions become data servers",
    "output": "name the result is registered under",
    "cache": "materialise the result (results are always materialised)",
    "schema": "result schema: file | st(field(a,long),...) | DDL | JSON",
    "dataMode": "model | data",
    "runIn": "driver | executor",
    "num_partitions": "number of data servers (default: the cluster's CPUs, at most one per row)",
    "pythonExec": "accepted for Byzer compatibility; cells use the session's Python",
    "memoryLimit": "MB of memory the cell may take on top of what the process holds (see cells/memory.py)",
    "verbose": "true: let TensorFlow's, absl's and Ray's log lines through (see quiet.py)",
}


# -- `from pyjava.api.mlsql import RayContext` inside cells ------------------------------------

def _alias_modules() -> dict[str, types.ModuleType]:
    def package(name: str, **attrs) -> types.ModuleType:
        module = types.ModuleType(name, f"mlsql-ray's stand-in for {name} inside --%python cells")
        module.__path__ = []  # a package, so its submodules import
        module.__dict__.update(attrs)
        return module

    mlsql = types.ModuleType("pyjava.api.mlsql")
    mlsql.RayContext = context.RayContext
    mlsql.DataServer = context.DataServer
    api = package("pyjava.api", mlsql=mlsql)
    storage = package("pyjava.storage", streaming_tar=streaming_tar)
    root = package("pyjava", api=api, storage=storage)
    return {"pyjava": root, "pyjava.api": api, "pyjava.api.mlsql": mlsql,
            "pyjava.storage": storage, "pyjava.storage.streaming_tar": streaming_tar}


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, modules: dict[str, types.ModuleType]):
        self.modules = modules

    def find_spec(self, fullname, path=None, target=None):
        if fullname in self.modules:
            return importlib.util.spec_from_loader(fullname, self, is_package=hasattr(self.modules[fullname], "__path__"))
        return None

    def create_module(self, spec):
        return self.modules[spec.name]

    def exec_module(self, module):
        pass


@contextlib.contextmanager
def pyjava_alias() -> Iterator[None]:
    """Make ``pyjava`` mean mlsql-ray for the duration of a cell, then put back whatever was
    there (an installed pyjava included)."""
    modules = _alias_modules()
    saved = {name: sys.modules.pop(name) for name in list(sys.modules) if name == "pyjava" or name.startswith("pyjava.")}
    finder = _AliasFinder(modules)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        for name in [n for n in sys.modules if n == "pyjava" or n.startswith("pyjava.")]:
            del sys.modules[name]
        sys.modules.update(saved)


# -- executing code with the cell's line numbers ----------------------------------------------

CELL_FILE_PREFIX = "<mlsql cell "
_runs = itertools.count(1)


def _compile(cell: ast.PythonCell):
    """Compile so that line numbers are the cell's own (its first line is ``cell.line``).

    Each run gets a file name of its own, and its source stays in ``linecache`` (as IPython keeps
    each input): a function defined by an earlier cell and failing in a later one is shown with
    its own line, not the later cell's line of the same number."""
    source = "\n" * (cell.line - 1) + cell.code
    filename = f"{CELL_FILE_PREFIX}{next(_runs)} at line {cell.line}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    try:
        return compile(source, filename, "exec")
    except SyntaxError as exc:
        raise MLSQLError(f"Python syntax error in the cell: {exc.msg}\n  {(exc.text or '').rstrip()}",
                         exc.lineno or cell.line, exc.offset or 1) from exc


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_TEXT_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<name>.+)$')


def _cell_traceback(exc: BaseException, filename: str) -> tuple[str, int | None]:
    """The traceback reduced to the cells' own frames, and the line of this cell (``filename``)
    where it went wrong.

    Library frames between the cell and the error are elided, only the one that raised is kept.
    Frames in code an earlier cell defined are shown as such, with that cell's source. An error
    from a Ray task or actor carries its remote traceback as text: its frames in cells' code are
    shown too (with their source, which workers do not have), and the innermost of this cell's
    is the line reported.
    """
    frames = traceback.extract_tb(exc.__traceback__)
    remote = _remote_cell_frames(exc)
    lines = ["Traceback (most recent call last):"]
    line = None
    in_cells = False
    for index, frame in enumerate(frames):
        if _is_cell(frame.filename):
            in_cells = True
            line = frame.lineno if frame.filename == filename else line
            lines += _frame_lines(_where(frame.filename, filename), frame.lineno, frame.name, frame.line)
        elif index == len(frames) - 1 and not remote and frame.filename != __file__:  # where a library raised it
            if in_cells and not _is_cell(frames[index - 1].filename):
                lines.append("  ...")
            lines += _frame_lines(frame.filename, frame.lineno, frame.name, frame.line)
    if remote:
        lines.append("  in a Ray worker:")
        for file, lineno, name in remote:
            line = lineno if file == filename else line
            lines += _frame_lines(_where(file, filename), lineno, name, linecache.getline(file, lineno))
        lines.append(_last_line(exc))
    else:
        lines.extend(traceback.format_exception_only(type(exc), exc)[-1:])
    return "\n".join(l.rstrip("\n") for l in lines), line


def _is_cell(filename: str) -> bool:
    return filename.startswith(CELL_FILE_PREFIX)


def _where(cell_file: str, filename: str) -> str:
    return "cell" if cell_file == filename else "an earlier cell"


def _frame_lines(where: str, lineno: int, name: str, source: str | None) -> list[str]:
    return [f"  {where}, line {lineno}, in {name}"] + ([f"    {source.strip()}"] if source and source.strip() else [])


def _remote_cell_frames(exc: BaseException) -> list[tuple[str, int, str]]:
    """(file, line, function) of the cells' frames in a Ray error's remote traceback text."""
    if not type(exc).__module__.startswith("ray"):
        return []
    matches = (_TEXT_FRAME.match(l) for l in _ANSI.sub("", str(exc)).splitlines())
    return [(m["file"], int(m["line"]), m["name"]) for m in matches if m and _is_cell(m["file"])]


def _last_line(exc: BaseException) -> str:
    """``SomeError: message``, the last line of a Ray error's remote traceback."""
    text = [l for l in _ANSI.sub("", str(exc)).splitlines() if l.strip()]
    return text[-1].strip() if text else type(exc).__name__


def cell_globals(context: CellContext) -> dict:
    """The globals a cell's code starts with (what the kernel's completion knows of, too)."""
    return {"__name__": "__mlsql_cell__", "__builtins__": __builtins__, "context": context, "RayContext": RayContext}


def execute_code(cell: ast.PythonCell, context: CellContext) -> CellContext:
    """Run the cell's code with ``context`` as a global; returns the context with its result.

    Runs in the session's process or inside a Ray task (then the context comes back pickled).
    """
    code = _compile(cell)
    namespace = cell_globals(context)
    limit = parse_limit(context.conf.get("memoryLimit"))
    with pyjava_alias():
        try:
            with memory_limit(limit):
                exec(code, namespace)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - every failure of user code becomes one MLSQLError
            if isinstance(exc, SystemExit) and not exc.code:
                return context
            text, line = _cell_traceback(exc, code.co_filename)
            if isinstance(exc, MemoryError) and limit is not None:
                text += f" (past the cell's memoryLimit of {limit} MB)"
            raise MLSQLError(f"the Python cell failed:\n{text}", line or cell.line, 1) from None
    return context


class ProcessExitRefused(BaseException):
    """A driver cell's own ``os._exit(code)``: a BaseException, like the ``SystemExit`` of
    ``sys.exit``, so that the cell's ``except Exception`` does not swallow it and run on."""

    def __init__(self, code):
        super().__init__(f"os._exit({code!r}) would end mlsql-ray's own process, which runs this runIn=driver "
                         f"cell, and the session with it: the cell fails instead (sys.exit({code!r}) or an "
                         f"exception ends a cell; runIn=executor runs it in a Ray worker)")


class _ExitGuard:
    """While driver cells run, ``os._exit`` called directly by cells' code, in this process and
    in a thread running a driver cell, raises ``ProcessExitRefused``. Every other call (a
    library's, another thread's, a forked child's) exits as before, and once no driver cell runs
    ``os._exit`` is Python's own again: only the cell's own call changes. Counted per thread, so
    that sessions running cells in several threads at once put back what they found."""

    def __init__(self):
        self._lock = threading.Lock()
        self._threads: dict[int, int] = {}  # thread ident -> driver cells it is running
        self._real_exit = os._exit
        self._pid = os.getpid()

    @contextlib.contextmanager
    def guarding(self) -> Iterator[None]:
        me = threading.get_ident()
        with self._lock:
            if not self._threads:
                self._real_exit, self._pid = os._exit, os.getpid()
                os._exit = self._exit
            self._threads[me] = self._threads.get(me, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                self._threads[me] -= 1
                if not self._threads[me]:
                    del self._threads[me]
                if not self._threads:
                    os._exit = self._real_exit

    def _exit(self, code):
        if (os.getpid() == self._pid and threading.get_ident() in self._threads
                and _is_cell(sys._getframe(1).f_code.co_filename)):
            raise ProcessExitRefused(code)
        self._real_exit(code)


_refuse_process_exit = _ExitGuard().guarding


@contextlib.contextmanager
def cell_environment(env: dict[str, str]) -> Iterator[None]:
    """``!python env`` variables in ``os.environ`` while a driver cell runs, then put back as
    they were. (A cell on Ray gets them through Ray's ``runtime_env``, which the tasks and actors
    it starts inherit.)"""
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def execute_on_ray(cell: ast.PythonCell, context: CellContext) -> Iterator[output.Batch | CellContext]:
    """The Ray generator task of an executor cell: what the code prints as it prints it
    (``output.captured``), then the context with its result."""
    context = yield from output.captured(lambda: execute_code(cell, context))
    yield context


def _execute_remotely(cell: ast.PythonCell, context: CellContext) -> CellContext:
    """The cell as one Ray task, tried once: Ray's default would run it again, side effects and
    all, after a worker died (``max_retries``) or after the cell raised (``retry_exceptions``)."""
    import ray  # heavy: Ray

    task = ray.remote(num_cpus=1, max_retries=0, retry_exceptions=False, **env_options(context.env))(execute_on_ray)
    try:
        for ref in task.remote(cell, context):
            item = ray.get(ref)
            if isinstance(item, CellContext):
                return item
            output.write_out(item)
        raise AssertionError("an executor cell's task ended without its context")
    except ray.exceptions.RayTaskError as exc:
        cause = exc.cause
        if isinstance(cause, MLSQLError):
            raise MLSQLError(cause.message, cause.line, cause.column) from None
        raise MLSQLError(f"the Python cell failed on Ray: {cause!r}", cell.line, 1) from None
    except (ray.exceptions.WorkerCrashedError, ray.exceptions.OutOfMemoryError, ray.exceptions.NodeDiedError) as exc:
        raise MLSQLError(f"the Python worker running this cell died: {_death(exc)}; the cell ran once and "
                         f"was not retried", cell.line, 1) from None


def _death(exc: BaseException) -> str:
    """How a worker died, in the words Ray's exception gives."""
    import ray  # heavy: Ray

    if isinstance(exc, ray.exceptions.OutOfMemoryError):
        return "Ray's memory monitor killed it, the node was running out of memory"
    if isinstance(exc, ray.exceptions.NodeDiedError):
        return "the node it ran on died"
    return "it exited or was killed while the cell ran (os._exit, a crash such as a segfault, or a signal)"


# -- the session side ----------------------------------------------------------------------

def merged_settings(session, cell: ast.PythonCell) -> tuple[dict[str, str], list[str]]:
    """``!python conf`` settings overridden by the cell's annotations, and warnings for unknown keys."""
    conf = {**session.python_conf, **cell.annotations}
    unknown = [k for k in conf if k not in KNOWN_SETTINGS]
    notes = [f"unknown Python cell setting {k!r} (known: {', '.join(KNOWN_SETTINGS)})" for k in unknown]
    for key, allowed in (("runIn", ("driver", "executor")), ("dataMode", ("model", "data"))):
        if key in conf and conf[key] not in allowed:
            raise MLSQLError(f"{key} must be {' or '.join(allowed)}, not {conf[key]!r}")
    parse_limit(conf.get("memoryLimit"))  # a bad value fails before anything runs
    return conf, notes


def partition(session, name: str, num_partitions: int | None) -> list[DataServer]:
    """Split the table into at most ``num_partitions`` data servers (by default the cluster's
    CPUs, or the parts its source read it in); see ``partitions``."""
    plans = partitions.plan(session, name, num_partitions)
    return [DataServer(None, index, rows, plan) for index, (plan, rows) in enumerate(plans)]


def run_cell(session, cell: ast.PythonCell):
    """Run one Python cell for ``session``; returns (result table or None, output name, warnings)."""
    conf, notes = merged_settings(session, cell)
    input_name = conf.get("input") or None
    if input_name is not None and input_name not in session.catalog:
        raise MLSQLError(f"--%input={input_name}: no table of that name (defined: {', '.join(sorted(session.catalog.names())) or 'none yet'})")
    num_partitions = conf.get("num_partitions")
    if num_partitions is not None and (not num_partitions.isdigit() or int(num_partitions) < 1):
        raise MLSQLError(f"num_partitions must be a positive whole number, not {num_partitions!r}")
    schema = parse_schema(conf["schema"]) if conf.get("schema") else None

    def make_servers() -> list[DataServer]:
        session.ray_link.ensure()
        return partition(session, input_name, int(num_partitions) if num_partitions else None)

    context = CellContext(conf=conf, env=dict(session.python_env), input_name=input_name, warehouse=str(session.warehouse), make_servers=make_servers,
                          ensure_ray=session.ray_link.ensure)
    if conf.get("runIn", "driver") == "executor":
        session.ray_link.ensure()
        if input_name is not None:
            context.data_servers()
        context = _execute_remotely(cell, context)
    else:
        # train.fit reuses the session's actors
        with cell_environment(context.env), session.workers.active(), _refuse_process_exit():
            execute_code(cell, context)
    result = context.result
    output = conf.get("output") or None
    if result is None:
        if output is not None:
            raise MLSQLError(f"the cell set --%output={output} but never called ray_context.build_result(...)")
        return None, None, notes
    if schema is not None:
        result = conform(result, schema)
    return result, output, notes
