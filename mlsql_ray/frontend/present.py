"""What to show for a statement's result, an error and a training progress event, decided once
for every front end. The CLI (stdout/stderr), the kernel (Jupyter messages) and the IPython
magic (``IPython.display``) only render these views for their medium, so a ``load`` shows its
first rows and a runtime error its caret wherever it runs.

``display`` renders tables as text and HTML; this module decides which table, heading, warnings,
error lines and progress texts there are.
"""

from __future__ import annotations

import base64
import html
import io
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from ..errors import InternalError, MLSQLError, MLSQLSyntaxError, first_line
from ..lang import ast
from ..masking import mask, mask_at
from .display import render_html, render_text

PREVIEW_ROWS = 20
INTERNAL_HINT = ("This is a bug in mlsql-ray, not in your script; run again with --verbose to see its traceback "
                 "(and please report it).")


# -- results ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TableView:
    """A table preview: the first rows, the full count if known (``more``: there are more rows,
    not counted), and a heading (what a ``load`` loaded)."""

    table: pa.Table
    num_rows: int | None = None
    more: bool = False
    heading: str | None = None

    def text(self) -> str:
        body = render_text(self.table, self.num_rows, PREVIEW_ROWS, more=self.more)
        return f"{self.heading}\n{body}" if self.heading else body

    def html(self) -> str:
        body = render_html(self.table, self.num_rows, PREVIEW_ROWS, more=self.more)
        if not self.heading:
            return body
        return f'<p style="margin:0 0 0.3em 0"><code>{html.escape(self.heading)}</code></p>{body}'

    def bundle(self) -> dict[str, str]:
        """The MIME bundle notebooks display: HTML, and text for consoles and plain viewers."""
        return {"text/plain": self.text(), "text/html": self.html()}


@dataclass(frozen=True)
class ResultView:
    """One statement's output: warnings (for stderr), then a table or else a one-line message."""

    warnings: list[str] = field(default_factory=list)
    table: TableView | None = None
    message: str = ""


def present_result(result, catalog) -> ResultView:
    """The view of an engine ``Result``; ``catalog`` (the session's) gives a ``load`` its preview."""
    warnings = [str(w) for w in result.warnings]
    if result.table is not None:
        return ResultView(warnings, TableView(result.table, result.num_rows, result.more), result.message)
    preview = _load_preview(result, catalog, warnings)
    return ResultView(warnings, preview, result.message)


def _load_preview(result, catalog, warnings: list[str]) -> TableView | None:
    """A ``load`` names a lazy table: show its first rows (counting them all could read a big file)."""
    if not isinstance(result.statement, ast.Load) or not result.name:
        return None
    try:
        head = catalog.head(result.name, PREVIEW_ROWS + 1)
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # noqa: BLE001 - the load itself worked (lazily); only its preview did not
        from ..engine.sql import interrupted_query  # here: it imports DuckDB, which a kernel imports after its start

        # Ctrl-C while the preview's query ran: the run stops, as anywhere. Taken for a failed preview,
        # it left a warning ("cannot preview t: Query interrupted") and the run went on
        if interrupted_query(exc):
            raise KeyboardInterrupt(f"interrupted at line {result.statement.line}") from exc
        warnings.append(f"cannot preview {result.name}: {first_line(exc)}")
        return None
    return TableView(head.slice(0, PREVIEW_ROWS), None, head.num_rows > PREVIEW_ROWS, heading=result.message)


# -- errors -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ErrorView:
    """An error as its parts: where (``source`` is another file than the one run, e.g. an
    included script), the message's first line (``headline``, naming what failed inside a
    Python cell) and its other lines, the source line with a caret, and for a bug in mlsql-ray
    its traceback and a hint that it is one."""

    name: str
    message: str
    headline: str
    details: list[str]
    line: int | None = None
    column: int | None = None
    source: str | None = None
    excerpt: list[str] = field(default_factory=list)
    internal: bool = False
    traceback: list[str] = field(default_factory=list)
    hint: str | None = None

    def where_words(self) -> str:
        """``inner.mlsql, line 3, column 7`` (for notebooks, where a line is the cell's line)."""
        where = f"line {self.line}, column {self.column}" if self.line is not None else ""
        if self.source:
            where = f"{self.source}, {where}" if where else self.source
        return where

    def summary(self) -> str:
        """``line 3, column 7: message``: the one-line form (a notebook's ``evalue``)."""
        where = self.where_words()
        return f"{where}: {self.headline}" if where else self.headline

    def located(self, path: str, suffix: str = "") -> str:
        """``FILE:LINE:COL: message`` and the line with a caret (what the CLI prints and the
        service answers): FILE is the included script the error is in, if any, else ``path``;
        ``suffix`` follows the message (the CLI's ``(in cell N)``)."""
        where = self.source or path
        if self.line is None:
            return f"{where}: {self.message}{suffix}"
        return "\n".join([f"{where}:{self.line}:{self.column}: {self.message}{suffix}",
                          *("    " + line for line in self.excerpt)])

    def notebook_lines(self) -> list[str]:
        """What a notebook shows (the kernel's and the magic's error ``traceback``): the summary,
        the message's other lines and the caret, indented; a bug's Python traceback."""
        if self.internal:
            return self.traceback
        return [f"{self.name}: {self.summary()}", *self.details, *("    " + line for line in self.excerpt)]


def present_error(exc: BaseException, code: str, path: Path | None = None) -> ErrorView:
    """The view of an error raised while ``code`` (the cell or script run from ``path``) ran.
    Anything that is not an ``MLSQLError`` is a bug in mlsql-ray, shown with its traceback."""
    if not isinstance(exc, MLSQLError):
        internal = exc if isinstance(exc, InternalError) else InternalError(exc, None, None)
        lines = mask("".join(traceback.format_exception(exc)).rstrip("\n")).split("\n")  # with its cause's
        source = internal.source if internal.source and not _is_run_file(internal.source, path) else None
        message = mask(internal.message)
        return ErrorView(type(exc).__name__, message, message, [], internal.line,
                         internal.column, source, _excerpt(_text_of(source, code), internal.line, internal.column),
                         internal=True, traceback=lines, hint=INTERNAL_HINT)
    message = mask(exc.message)
    first, _, rest = message.partition("\n")
    last = rest.strip().split("\n")[-1].strip() if rest.strip() else ""
    headline = f"{first} {last}" if last and first.endswith(":") else first  # "the Python cell failed:" + why
    source = exc.source if exc.source and not _is_run_file(exc.source, path) else None
    if isinstance(exc, MLSQLSyntaxError) and exc.source_line:
        excerpt = exc.caret.split("\n")
    elif not rest:  # a traceback already says where; a caret would add nothing
        excerpt = _excerpt(_text_of(source, code), exc.line, exc.column)
    else:
        excerpt = []
    return ErrorView(type(exc).__name__, message, headline, rest.split("\n") if rest else [], exc.line,
                     exc.column, source, excerpt)


def _is_run_file(source: str, path: Path | None) -> bool:
    return path is not None and Path(source) == Path(path).resolve()


def _text_of(source: str | None, code: str) -> str:
    """The text an error's line numbers count in: the included script it is in, else ``code``."""
    if source is None:
        return code
    try:
        return Path(source).read_text()
    except (OSError, UnicodeDecodeError):
        return ""


def _excerpt(code: str, line: int | None, column: int | None) -> list[str]:
    """The line of ``code`` an error is on (secrets masked), and a caret under its column."""
    lines = code.split("\n")
    if line is None or not 1 <= line <= len(lines):
        return []
    source_line, column = mask_at(lines[line - 1].rstrip("\r"), column or 1)
    pad = "".join("\t" if ch == "\t" else " " for ch in source_line[: column - 1])
    return [source_line, f"{pad}^"]


# -- training progress --------------------------------------------------------------------------------

@dataclass(frozen=True)
class ProgressView:
    """What a progress event shows: ``stage`` is start (a new display), round (update it) or end
    (update it with the summary; ``history`` is what ``plot_png`` draws)."""

    stage: str
    text: str
    history: list[dict] = field(default_factory=list)
    key: int | None = None  # which display: None for a training run, N for parameter group N

    def html(self) -> str:
        return f'<pre style="margin:0">{html.escape(self.text)}</pre>'

    def bundle(self) -> dict[str, str]:
        """At the end, the loss/accuracy plot too. JupyterLab renders only the richest type of a
        bundle (the HTML), so the plot is inside the HTML as a ``data:`` image; it is also the
        bundle's ``image/png`` for front ends and converters that pick an image first (classic
        Notebook, nbconvert)."""
        data = {"text/plain": self.text, "text/html": self.html()}
        if self.stage == "end":
            png = plot_png(self.history)
            if png is not None:
                data["text/html"] += (f'<img class="mlsql-plot" alt="loss and accuracy per round" '
                                      f'src="data:image/png;base64,{png}">')
                data["image/png"] = png
        return data


class ProgressPresenter:
    """Turns ``mlsql_ray.progress`` events into views; remembers a run's worker count."""

    def __init__(self) -> None:
        self.workers = None

    def __call__(self, kind: str, fields: dict) -> ProgressView | None:
        if kind == "train_start":
            self.workers = fields.get("workers")
            return ProgressView("start", f"training: {self.workers} workers, {fields.get('total_rounds')} rounds, "
                                         "starting…")
        if kind == "train_round":
            return ProgressView("round", round_text(fields, self.workers))
        if kind == "train_end":
            history = fields.get("history") or []
            return ProgressView("end", summary_text(history, fields.get("elapsed")), history)
        if kind in ("group_start", "group_end"):  # parameter groups of `train ... as ALG`, which overlap
            return ProgressView("start" if kind == "group_start" else "end", group_text(kind, fields),
                                key=fields["group"])
        return None


def group_text(kind: str, event: dict) -> str:
    """One line for a parameter group's ``group_start`` or ``group_end`` (the CLI and the kernel show it)."""
    head = f"{event['alg']} group {event['group']} ({event['groups']} in all)"
    if kind == "group_start":
        return f"{head}: training…"
    elapsed = f" in {event['elapsed']:.1f}s" if event.get("elapsed") is not None else ""
    if event["status"] != "success":
        return f"{head}: {event['status']}{elapsed}: {event.get('message', '')}"
    metrics = "".join(f"  {name} {value:.4f}" for name, value in event.get("metrics", {}).items())
    return f"{head}: {event['status']}{elapsed}{metrics}"


def _fmt(value, digits: int = 4) -> str:
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) else "–"


def round_text(fields: dict, workers=None) -> str:
    parts = [f"round {fields.get('round')}/{fields.get('total_rounds')}",
             f"loss {_fmt(fields.get('loss'))}", f"accuracy {_fmt(fields.get('accuracy'))}"]
    for key in ("val_loss", "val_accuracy"):
        if fields.get(key) is not None:
            parts.append(f"{key} {_fmt(fields.get(key))}")
    parts.append(f"elapsed {_fmt(fields.get('elapsed'), 1)} s")
    if workers:
        parts.append(f"{workers} workers")
    if fields.get("retries"):
        parts.append(f"retried {fields['retries']}x")
    return "training: " + ", ".join(parts)


def summary_text(history: list[dict], elapsed) -> str:
    if not history:
        return f"training done in {_fmt(elapsed, 1)} s"
    last = history[-1]
    text = (f"training done: {len(history)} rounds in {_fmt(elapsed, 1)} s, "
            f"final loss {_fmt(last.get('loss'))}, accuracy {_fmt(last.get('accuracy'))}")
    if last.get("val_accuracy") is not None:
        text += f", val_accuracy {_fmt(last.get('val_accuracy'))}"
    return text


def plot_png(history: list[dict]) -> str | None:
    """Loss and accuracy per round as a base64 PNG (matplotlib's Agg canvas, no pyplot state)."""
    if not history:
        return None
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # heavy: matplotlib, only once a training ends
    from matplotlib.figure import Figure

    rounds = [h.get("round", i + 1) for i, h in enumerate(history)]
    figure = Figure(figsize=(8, 3), dpi=100)
    FigureCanvasAgg(figure)
    for axes, metric in zip(figure.subplots(1, 2), ("loss", "accuracy")):
        for key, style in ((metric, "o-"), (f"val_{metric}", "s--")):
            values = [h.get(key) for h in history]
            if any(v is not None for v in values):
                points = [(r, v) for r, v in zip(rounds, values) if v is not None]
                axes.plot([p[0] for p in points], [p[1] for p in points], style, label=key)
        axes.set_xlabel("round")
        axes.set_title(metric)
        axes.grid(True, alpha=0.3)
        axes.legend(loc="best")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return base64.b64encode(buffer.getvalue()).decode("ascii")
