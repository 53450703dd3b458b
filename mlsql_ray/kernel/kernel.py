"""``MLSQLKernel``: Jupyter's side of a ``Session``, as thin as the CLI.

A cell (any number of statements, or one ``--%python`` cell) is parsed whole and run in the
kernel's one ``Session`` by the front-end driver (``mlsql_ray.frontend.driver``), as the CLI and the
``%%mlsql`` magic run theirs; this shell turns what the driver hands it into Jupyter messages as it
comes:

* a table (select, load, ``!show``/``!desc``/``!delta``, a Python cell's result): ``display_data``
  with ``text/html`` and ``text/plain``;
* any other statement (save, set, ...): its one-line summary on stdout;
* warnings: on stderr;
* an error (syntax or runtime): an ``error`` message and ``status: error`` naming the line and
  column in the cell; the kernel lives on;
* training progress (``mlsql_ray.progress``): one display per run, updated in place each round
  and ending with a loss/accuracy plot.

Interrupts (SIGINT, ``interrupt_mode: signal``) raise ``KeyboardInterrupt`` in the cell's Python
code and cancel a running DuckDB query through the connection's ``interrupt()``.

The warehouse is ``$MLSQL_WAREHOUSE`` or ``./warehouse`` (the notebook's folder is the kernel's
working directory); ``$MLSQL_RAY_ADDRESS`` names a Ray cluster (default: an embedded one, started
by the first cell that needs it).

Nothing heavy is imported at start: the engine is imported in the background once the kernel has
answered its first ``kernel_info_request``; then the session's Ray is started (or joined) in the
background too, so that the first cell that needs it finds it up or joins the start in progress
(``RayLink.ensure_ahead``). ``$MLSQL_KERNEL_RAY_AT_START=0`` leaves Ray to the first cell that needs
it. TensorFlow is imported only when a cell needs it.

With ``$MLSQL_ENGINE_URL`` (token: ``$MLSQL_ENGINE_TOKEN``) each cell runs on that ``mlsql-ray
serve`` instead (``frontend.engine_client``): its last table shown as a local table, its error at
its line and column, an interrupt killing the job there; no session, Ray or engine here.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
import uuid

from ipykernel.kernelbase import Kernel

from .. import __version__
from ..cluster.link import imported_ray
from ..frontend.engine_client import ENGINE_URL_ENV, Engine, EngineRefused, EngineUnreachable
from ..lang import ast
from . import assist

WORKER_OUTPUT_GRACE_S = 0.3
#: "0" keeps the kernel from starting Ray before a cell needs it (the test suite's kernels, most of
#: which never use Ray)
RAY_AT_START_ENV = "MLSQL_KERNEL_RAY_AT_START"


def _text_progress_bars() -> None:
    """Make ``tqdm.auto`` choose tqdm's text bar in this kernel.

    tqdm.autonotebook takes any process that imported ipykernel for an IPython notebook kernel and
    picks its ipywidgets bar, warning "IProgress not found" on stderr when ipywidgets is missing.
    Ray imports ``tqdm.auto`` (ray.experimental.tqdm_ray) in the first cell that uses Ray, so that
    warning showed under the user's cell. This kernel is no IPython shell: widgets cannot show here
    (with ipywidgets installed tqdm would print their repr), its output is text. So the
    autonotebook choice is made once, before anything imports it: the text bar, ``tqdm.std``."""
    try:
        import tqdm  # not a dependency (papermill brings it): absent is fine
        import tqdm.std
    except ImportError:  # not installed (it comes with papermill): Ray then shows no bars, and no warning
        return
    if "tqdm.autonotebook" not in sys.modules:
        sys.modules["tqdm.autonotebook"] = tqdm.std
        tqdm.autonotebook = tqdm.std


class MLSQLKernel(Kernel):
    implementation = "mlsql_ray"
    implementation_version = __version__
    language = "mlsql"
    language_version = __version__
    language_info = {
        "name": "mlsql",
        "version": __version__,
        "mimetype": "text/x-mlsql",
        "file_extension": ".mlsql",
        "codemirror_mode": "mlsql",  # the JupyterLab mode of labextension/, shipped in the wheel
        "pygments_lexer": "mlsql",  # mlsql_ray.lang.highlight, through Pygments' entry point
    }
    banner = (f"MLSQL (Ray) {__version__}: MLSQL statements on DuckDB and Delta Lake; "
              "a cell starting with --%python runs Python (on Ray when it asks for it)")
    help_links = [{"text": "MLSQL statements", "url": "https://github.com/byzer-org/byzer-lang"}]

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        _text_progress_bars()
        self._session = None
        self._session_lock = threading.Lock()  # the warm-up thread may create the session too
        self._warmed = False
        self._interrupted = False
        self._cell_uses_ray = False  # set by each cell once it has parsed
        url = os.environ.get(ENGINE_URL_ENV)
        self._engine = Engine(url) if url else None  # cells run there, not here (engine_client)

    # -- the session -----------------------------------------------------------------------------

    def mlsql_session(self):
        with self._session_lock:
            if self._session is None:
                from ..engine import Session  # the kernel starts without the engine (DuckDB, pyarrow)

                self._session = Session()  # warehouse and Ray address from the environment (mlsql_ray.config)
            return self._session

    def _warm_up(self) -> None:
        """Import the engine (DuckDB, pyarrow, sqlglot, deltalake), then start the session's Ray,
        while the user types the first cell."""
        if self._warmed or self._engine is not None:  # on an engine, nothing here runs a cell
            return
        self._warmed = True

        def work():
            try:
                from .. import engine  # noqa: F401
                from ..frontend import driver  # noqa: F401

                if os.environ.get(RAY_AT_START_ENV) != "0":
                    self.mlsql_session().ray_link.ensure_ahead()  # an error waits for the cell needing Ray
            except Exception:  # noqa: BLE001 - the first cell will report it properly
                pass

        threading.Thread(target=work, name="mlsql-warm-up", daemon=True).start()

    @property
    def kernel_info(self):
        info = dict(super().kernel_info)
        # ipykernel advertises its debugger whenever debugpy is importable; this kernel has none
        info["supported_features"] = [f for f in info.get("supported_features", []) if f != "debugger"]
        return info

    def set_parent(self, ident, parent, channel="shell"):
        """Also tell sys.stdout/sys.stderr (ipykernel's OutStreams) which request they now
        answer: what a Python cell prints, and what Ray forwards from its workers, then shows up
        under the running cell."""
        super().set_parent(ident, parent, channel)
        if channel == "shell":
            for stream in (sys.stdout, sys.stderr):
                if hasattr(stream, "set_parent"):
                    stream.set_parent(parent)

    async def kernel_info_request(self, stream, ident, parent):
        await super().kernel_info_request(stream, ident, parent)
        self._warm_up()

    # -- execute ---------------------------------------------------------------------------------

    async def do_execute(self, code, silent, store_history=True, user_expressions=None, allow_stdin=False,
                         **_ignored):
        if not code.strip():
            return self._ok()
        parent = self.get_parent()
        self._cell_uses_ray = False
        try:
            return self._execute(code, silent, parent)
        finally:
            self._await_worker_output()

    def _execute(self, code: str, silent: bool, parent) -> dict:
        if self._engine is not None:
            return self._execute_on_engine(code, silent, parent)
        from ..frontend.driver import Request  # the kernel starts without the engine (DuckDB, pyarrow)

        outcome = Request([code]).run(lambda: contextlib.nullcontext(self.mlsql_session()), previews=not silent,
                                      show=None if silent else lambda view: self._show(view, parent),
                                      progress_sink=None if silent else _ProgressDisplay(self, parent),
                                      interruptible=True)
        self._cell_uses_ray = uses_ray(outcome.statements)
        self._interrupted = outcome.interruption is not None
        if outcome.interruption is not None:
            evalue = outcome.interruption.text()
            return self._error(parent, "KeyboardInterrupt", evalue, [f"KeyboardInterrupt: {evalue}"])
        if outcome.error is not None:  # ``line 3, column 7: message``, its other lines, the caret; a bug's traceback
            view = outcome.error
            return self._error(parent, view.name, view.message if view.internal else view.summary(),
                               view.notebook_lines())
        return self._ok()

    def _execute_on_engine(self, code: str, silent: bool, parent) -> dict:
        """The cell run by ``$MLSQL_ENGINE_URL``'s server: its last table shown as a local cell's
        table, its error as ``line L, column C: message`` with the server's caret; an interrupt
        kills the job there."""
        from ..frontend.present import ResultView, TableView  # (as above)

        try:
            table = self._engine.run(code, "mlsql-kernel")
        except KeyboardInterrupt:
            self._interrupted = True
            evalue = f"interrupted (the job on {self._engine.url} was killed)"
            return self._error(parent, "KeyboardInterrupt", evalue, [f"KeyboardInterrupt: {evalue}"])
        except EngineUnreachable as exc:
            return self._error(parent, "EngineUnreachable", str(exc), [str(exc)])
        except EngineRefused as refused:
            where = refused.in_script
            first, *rest = (where if where is not None else refused.text).split("\n")
            if where is not None:
                line, column, message = (first.split(":", 2) + ["", ""])[:3]
                evalue = f"line {line}, column {column}:{message}"
            else:
                evalue = f"{self._engine.url} answered {refused.status}: {first}"
            return self._error(parent, "MLSQLError", evalue, [f"MLSQLError: {evalue}", *("    " + r for r in rest)])
        self._interrupted = False
        if table is not None and not silent:
            self._show(ResultView(table=TableView(table)), parent)
        return self._ok()

    def _await_worker_output(self) -> None:
        """Ray forwards what its workers print some 50-100 ms late: give it that time after a
        cell that ran work on Ray, so the lines land under this cell and not the next."""
        ray = imported_ray()
        if ray is None or self._interrupted or not self._cell_uses_ray:
            return
        try:
            if ray.is_initialized():
                time.sleep(WORKER_OUTPUT_GRACE_S)
        except Exception:  # noqa: BLE001
            pass

    def _ok(self) -> dict:
        return {"status": "ok", "execution_count": self.execution_count, "payload": [], "user_expressions": {}}

    def _error(self, parent, ename: str, evalue: str, traceback_lines: list[str]) -> dict:
        content = {"ename": ename, "evalue": evalue, "traceback": traceback_lines}
        self._flush_std()
        self.session.send(self.iopub_socket, "error", {**content, "execution_count": self.execution_count},
                          parent, ident=self._topic("error"))
        return {"status": "error", "execution_count": self.execution_count, **content}

    def _show(self, view, parent) -> None:
        for warning in view.warnings:
            self._stream(parent, "stderr", f"warning: {warning}\n")
        if view.table is None:
            self._stream(parent, "stdout", view.message + "\n")
        else:
            self._display(parent, "display_data", view.table.bundle())

    # -- sending -----------------------------------------------------------------------------------

    def _flush_std(self) -> None:
        """Python cells print through sys.stdout/stderr (buffered): flush them so messages keep their order."""
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass

    def _stream(self, parent, name: str, text: str) -> None:
        self._flush_std()
        self.session.send(self.iopub_socket, "stream", {"name": name, "text": text}, parent,
                          ident=self._topic(f"stream.{name}"))

    def _display(self, parent, msg_type: str, data: dict, display_id: str | None = None) -> None:
        self._flush_std()
        content = {"data": data, "metadata": {}, "transient": {"display_id": display_id} if display_id else {}}
        self.session.send(self.iopub_socket, msg_type, content, parent, ident=self._topic("display_data"))

    # -- completion, inspection, is_complete ---------------------------------------------------------

    async def do_complete(self, code, cursor_pos):
        cursor_pos = len(code) if cursor_pos is None else cursor_pos
        start, matches = assist.complete(code, cursor_pos, self._session)
        return {"status": "ok", "matches": matches, "cursor_start": start, "cursor_end": cursor_pos, "metadata": {}}

    async def do_inspect(self, code, cursor_pos, detail_level=0, omit_sections=()):
        cursor_pos = len(code) if cursor_pos is None else cursor_pos
        data = assist.inspect(code, cursor_pos, self._session)
        return {"status": "ok", "found": bool(data), "data": data or {}, "metadata": {}}

    async def do_is_complete(self, code):
        return assist.is_complete(code)

    async def do_shutdown(self, restart):
        if self._session is not None:
            try:
                self._session.close()
            except Exception:  # noqa: BLE001 - shutting down regardless
                pass
            self._session = None
        return {"status": "ok", "restart": restart}


#: statements that run work on Ray workers: a Python cell, run ... as Ray.``, predict, register
_RAY_STATEMENTS = (ast.PythonCell, ast.Train, ast.Register)


def uses_ray(statements: list[ast.Statement]) -> bool:
    """Whether a cell's statements run work on Ray (decided by what they are, not by their text:
    "array" or a table named "ray_results" is no reason to wait)."""
    return any(isinstance(s, _RAY_STATEMENTS) for s in statements)


# -- live training progress -------------------------------------------------------------------------

class _ProgressDisplay:
    """A progress sink: one display per training run, updated in place, ending with a plot."""

    def __init__(self, kernel: MLSQLKernel, parent):
        self.kernel = kernel
        self.parent = parent
        self.display_ids: dict[int | None, str] = {}  # a training run's display (None), each parameter group's

    def __call__(self, view) -> None:
        try:
            if view.stage != "start" and view.key not in self.display_ids:
                return
            if view.stage == "start":
                self.display_ids[view.key] = uuid.uuid4().hex
            msg_type = "display_data" if view.stage == "start" else "update_display_data"
            self.kernel._display(self.parent, msg_type, view.bundle(), self.display_ids[view.key])
            if view.stage == "end":
                del self.display_ids[view.key]
        except KeyboardInterrupt:
            raise
        except Exception:  # noqa: BLE001 - a display problem must not fail the training
            self.kernel.log.warning("progress display failed", exc_info=True)


__all__ = ["MLSQLKernel"]
