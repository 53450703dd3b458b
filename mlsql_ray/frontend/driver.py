"""The one front-end driver: what the CLI, the Jupyter kernel and the ``%%mlsql`` magic do with a
request. Each of them is a shell that only renders what the driver hands it, for its medium.

A request is one text (a script, a cell) or several cells (a notebook the CLI runs). The driver
parses all of it before anything runs (a typo in the last cell must not leave half a run), then
opens the shell's session and runs each cell as one ``Session.run``. It hands each result's view
(``present.present_result``) to the shell's ``show`` and each training progress view
(``present.ProgressPresenter``) to its ``progress`` sink. The request ends in one ``Outcome``: ok,
an error view (``present.present_error``, with the cell it is in), or an interruption (the line that
was running, and what a save had committed already).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, ContextManager

from .. import lang, progress
from ..errors import InterruptedAfterCommit
from ..lang import ast
from .interrupts import Interrupts
from .present import ErrorView, ProgressPresenter, ProgressView, ResultView, present_error, present_result

if TYPE_CHECKING:
    from ..engine.result import Result

Show = Callable[[ResultView], None]
ProgressSink = Callable[[ProgressView], None]


@dataclass(frozen=True)
class Interruption:
    """Ctrl-C ended the request: the line (in its cell) that was running, what a save committed
    before the interrupt could stop it (``InterruptedAfterCommit``), and the interrupt's own text."""

    line: int | None = None
    table: str | None = None
    version: int | None = None
    reason: str = ""

    def text(self) -> str:
        """``interrupted at line 3, after demo.t was committed as version 4`` (a notebook's ``evalue``)."""
        text = f"interrupted at line {self.line}" if self.line else "interrupted"
        if self.table is not None:  # too late to stop a save: say what it committed
            text += f", after {self.table} was committed as version {self.version}"
        return text


@dataclass(frozen=True)
class Outcome:
    """How a request ended: ok, or ``error`` (in ``cell``, counted from 1, when it was in one), or
    ``interruption``. ``exception`` is what ended it (the magic raises it again for IPython);
    ``statements`` all that parsed, ``last`` the last result."""

    statements: list[ast.Statement] = field(default_factory=list)
    last: Result | None = None
    error: ErrorView | None = None
    cell: int | None = None
    interruption: Interruption | None = None
    exception: BaseException | None = None

    @property
    def ok(self) -> bool:
        return self.exception is None


def failed(exc: BaseException, code: str, source: str | os.PathLike | None = None, cell: int | None = None) -> Outcome:
    """The outcome of an error while ``code`` (a cell, or the whole text) was read or run."""
    return Outcome(error=present_error(exc, code, source), cell=cell, exception=exc)


class Request:
    """One request: its cells' texts and ``source``, the file they came from (for includes and for
    error positions), and while it runs, which cell and which of its statements run."""

    def __init__(self, cells: list[str] | tuple[str, ...] = (), source: str | os.PathLike | None = None):
        self.cells = list(cells)
        self.source = source
        self.cell: int | None = None  # the cell being parsed or run
        self.statements: list[ast.Statement] = []
        self.lines: list[int] = []  # the running cell's statements' lines
        self.running = 0  # which of them runs now, for "interrupted at line N"
        self.last = None
        self.results: list[Result] = []  # every result, in order (a service answers with the last one's rows)

    def run(self, open_session: Callable[[], ContextManager], *, previews: bool = False, show: Show | None = None,
            progress_sink: ProgressSink | None = None, interruptible: bool = False) -> Outcome:
        """Parse every cell, then open the session (``open_session()``: a context manager giving
        it) and run the cells in order. ``previews``: each select computes its first rows as it
        runs (``Session.run``); ``show`` gets each result's view (none is made without it);
        ``interruptible``: Ctrl-C stops the running statement and the shell lives on
        (``interrupts``: a DuckDB query is cancelled too)."""
        interrupts = Interrupts() if interruptible else None
        try:
            with interrupts or contextlib.nullcontext():
                units = []
                for self.cell, text in enumerate(self.cells, start=1):
                    units.append(lang.parse(text))
                    self.statements.extend(units[-1])
                self.cell = None
                with open_session() as session, _reporting(progress_sink):
                    if interrupts is not None:
                        interrupts.connection = session.con
                    for self.cell, statements in enumerate(units, start=1):
                        self.run_statements(session, statements, previews=previews, show=show)
        except KeyboardInterrupt as exc:  # its text, if any, says what the interrupt came too late to stop
            return self._interrupted(exc, _python_cell_line(exc) or self._running_line())
        except Exception as exc:  # noqa: BLE001 - the user's mistake, or a bug shown as one
            if interrupts is not None and interrupts.interrupted:  # a query cancelled by interrupt() ends as an error
                return self._interrupted(exc, getattr(exc, "line", None) or self._running_line())
            code = self.cells[(self.cell or 1) - 1] if self.cells else ""
            return Outcome(self.statements, self.last, present_error(exc, code, self.source), self.cell, exception=exc)
        return Outcome(self.statements, self.last)

    def run_statements(self, session, statements: list[ast.Statement], *, previews: bool = False,
                       show: Show | None = None) -> None:
        """Run parsed statements as one request of ``session``, showing each result as it comes
        (a select's first rows are computed then, unless ``previews`` computed them already)."""
        self.lines = [s.line for s in statements]
        self.running = 0
        for result in session.run(statements, source=self.source, previews=previews):
            self.last = result
            self.results.append(result)
            if show is not None:  # its view may run a query (a load's first rows): still this statement's line
                show(present_result(result, session.catalog))
            if result.statement.line in self.lines:
                self.running = self.lines.index(result.statement.line) + 1

    def _running_line(self) -> int | None:
        return self.lines[self.running] if 0 <= self.running < len(self.lines) else None

    def _interrupted(self, exc: BaseException, line: int | None) -> Outcome:
        table, version = (exc.table, exc.version) if isinstance(exc, InterruptedAfterCommit) else (None, None)
        interruption = Interruption(line, table, version, str(exc) if isinstance(exc, KeyboardInterrupt) else "")
        return Outcome(self.statements, self.last, cell=self.cell, interruption=interruption, exception=exc)


@contextlib.contextmanager
def _reporting(sink: ProgressSink | None):
    """Training progress as views for ``sink``, for as long as the request runs."""
    if sink is None:
        yield
        return
    presenter = ProgressPresenter()

    def report(kind: str, fields: dict) -> None:
        view = presenter(kind, fields)
        if view is not None:
            sink(view)

    with progress.reporting_to(report):
        yield


def _python_cell_line(exc: BaseException) -> int | None:
    """The line of the Python cell that was running when an interrupt came, if any."""
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.startswith("<mlsql cell"):
            line = tb.tb_lineno
        tb = tb.tb_next
    return line
