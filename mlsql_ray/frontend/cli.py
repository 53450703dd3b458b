"""``mlsql-ray run FILE``: a thin shell over the front-end driver (``mlsql_ray.frontend.driver``) for
batch runs of scripts and notebooks (``mlsql-ray submit FILE`` sends one to a cluster as a Ray job:
``mlsql_ray.frontend.submit``).

The driver parses the whole file (every cell of a notebook) before anything runs and hands over
what to show, as in the kernel; this shell prints it: tables (a ``load``'s first rows
too) on stdout, warnings and training progress on stderr. Errors print as
``FILE:LINE:COL: message`` on stderr, then the line with a caret under the column, with a
non-zero exit; ``--verbose`` adds the Python traceback. A bug in mlsql-ray (an ``InternalError``)
says so, with a hint to run again with ``--verbose`` for its traceback.

Ctrl-C (SIGINT) stops a run at any moment, and is never taken for success (see ``main``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import threading
import traceback
from pathlib import Path

from ..cluster import quiet
from ..errors import MLSQLError
from ..masking import mask
from . import submit as submit_job
from .engine_client import ENGINE_TOKEN_ENV, ENGINE_URL_ENV, Engine, EngineRefused, EngineUnreachable

INTERNAL_ERROR_EXIT = 3  # 1: the script has an error; 2: the file cannot be read; 3: a bug in mlsql-ray


def notebook_cells(text: str) -> list[str]:
    """The code cells of an ``.ipynb`` notebook, in order."""
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MLSQLError(f"not a notebook (an .ipynb file is JSON): {exc.msg}", exc.lineno, exc.colno) from exc
    cells = []
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") == "code":
            source = cell.get("source", "")
            cells.append("".join(source) if isinstance(source, list) else source)
    return cells


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mlsql-ray", description="Run MLSQL scripts and notebooks.")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a .mlsql script or an .ipynb notebook written for the mlsql kernel")
    _script_arguments(run)
    run.add_argument("--ray-address", help="Ray cluster for Python cells: auto or host:port (ray://host:port only with RAY_AUTH_MODE=disabled; else use mlsql-ray submit) (default: $MLSQL_RAY_ADDRESS, else a local Ray started on first need)")
    run.add_argument("--sql-engine", metavar="duckdb|daft",  # checked by the Session (config.sql_engine_named)
                     help="what runs the selects: duckdb in this process, or daft over the Ray cluster "
                          "(docs/daft.md; default: $MLSQL_SQL_ENGINE, else duckdb)")
    run.add_argument("--allow-path", dest="allowed_paths", action="append", default=[], metavar="FOLDER",
                     help="a folder !fs and !saveFile may touch, besides the working directory and the warehouse (repeatable)")
    run.add_argument("--project-root", type=Path, metavar="FOLDER",
                     help="where include project.`path` starts (default: the folder of the script)")
    run.add_argument("--engine-url", default=os.environ.get(ENGINE_URL_ENV) or None, metavar="URL",
                     help=f"run the script on a running `mlsql-ray serve` (http://HOST:PORT) instead of here; its "
                          f"token from ${ENGINE_TOKEN_ENV}, Ctrl-C kills the job there (default: ${ENGINE_URL_ENV})")
    _verbose_argument(run)
    submit = commands.add_parser("submit", help="run a script on a Ray cluster as a Ray job (needs mlsql-ray[cluster])")
    _script_arguments(submit)
    submit.add_argument("--address", help="the head's dashboard, http://HOST:8265 (default: $RAY_API_SERVER_ADDRESS, "
                                          "$RAY_ADDRESS, else a local cluster's)")
    submit.add_argument("--project-root", type=Path, metavar="FOLDER",
                        help="the folder uploaded as the job's working directory, where include project.`path` starts "
                             "(default: the folder of the script)")
    submit.add_argument("--exclude", dest="excludes", action="append", default=[], metavar="PATTERN",
                        help="leave files matching this gitignore-style pattern out of the upload (repeatable; "
                             ".gitignore and .rayignore are honoured too)")
    submit.add_argument("--max-upload-mib", type=float, default=submit_job.DEFAULT_MAX_UPLOAD_MIB, metavar="MIB",
                        help=f"refuse to upload more than this (default: {submit_job.DEFAULT_MAX_UPLOAD_MIB:g} MiB)")
    install = submit.add_mutually_exclusive_group()
    install.add_argument("--pip", action="append", metavar="REQUIREMENT",
                         help="pip requirements the job installs instead of mlsql-ray==<this version> (repeatable)")
    install.add_argument("--image", help="a container image with mlsql-ray in it, for the job (Ray's image_uri)")
    install.add_argument("--no-install", action="store_true",
                         help="install nothing: the cluster's Python has mlsql-ray already")
    _verbose_argument(submit)
    serve = commands.add_parser("serve", help="run the engine as a service speaking Byzer's REST API "
                                              "(/run/script, /model/predict; needs mlsql-ray[serve])")
    from ..service.server import add_arguments  # noqa: PLC0415 - only its arguments: uvicorn is imported by serve

    add_arguments(serve)
    return parser


def _script_arguments(parser: argparse.ArgumentParser) -> None:
    """What ``run`` and ``submit`` both take: the script, its variables, the warehouse."""
    parser.add_argument("file", type=Path)
    parser.add_argument("--set", dest="variables", action="append", type=_key_value, default=[], metavar="KEY=VALUE",
                        help="define ${KEY} for the script (a `set ... where type=\"defaultParam\"` keeps this value)")
    parser.add_argument("--warehouse", help="root of the Delta tables, a folder or s3://bucket/prefix (default: "
                                            "$MLSQL_WAREHOUSE or ./warehouse; for submit, where the job runs)")


def _verbose_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--verbose", action="store_true",
                        help="print Python tracebacks with errors, and the log lines of TensorFlow, absl and Ray "
                             "that are left out by default")


def run_file(args: argparse.Namespace) -> int:
    """Run the script or notebook; its results on stdout, warnings, progress and errors on stderr."""
    from . import driver  # the engine (DuckDB, pyarrow) only for a run, not for submit or --help

    path: Path = args.file
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        print(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}", file=sys.stderr)
        return 2
    try:
        cells = notebook_cells(text) if path.suffix == ".ipynb" else [text]
    except Exception as exc:  # noqa: BLE001 - not a notebook, or a bug shown as one
        outcome = driver.failed(exc, text, path)
    else:
        if args.engine_url:
            return _run_on_engine(args.engine_url.rstrip("/"), path, "\n".join(cells))
        outcome = driver.Request(cells, path).run(lambda: _session(args), show=lambda view: _print_result(view, path),
                                                  progress_sink=_print_progress)
    if outcome.interruption is not None:
        print(f"{path}: {outcome.interruption.reason or 'interrupted'}", file=sys.stderr)
        return 130
    if outcome.error is not None:
        view = outcome.error
        print(_format_error(path, outcome.cell, view), file=sys.stderr)
        if view.internal and not args.verbose:
            print(view.hint, file=sys.stderr)
        elif args.verbose:
            print("\n".join(view.traceback) if view.internal else _traceback_text(outcome.exception), file=sys.stderr)
        return INTERNAL_ERROR_EXIT if view.internal else 1
    return 0


def _run_on_engine(url: str, path: Path, script: str) -> int:
    """The script sent to a running ``mlsql-ray serve`` (``engine_client``); its last table printed
    as a local run prints it, its error as ``FILE:LINE:COL``; Ctrl-C kills the job there."""
    from .present import TableView  # a run on an engine only: a local run and --help go without it

    try:
        table = Engine(url).run(script, "mlsql-ray-run")
    except KeyboardInterrupt:
        print(f"{path}: interrupted (the job on {url} was killed)", file=sys.stderr)
        return 130
    except EngineUnreachable as exc:
        print(exc, file=sys.stderr)
        return 2
    except EngineRefused as refused:
        where = refused.in_script
        print(f"{path}:{where}" if where is not None else f"{path}: {url} answered {refused.status}: {refused.text}",
              file=sys.stderr)
        return 1
    if table is not None:
        print(TableView(table).text())
    return 0


@contextlib.contextmanager
def _session(args: argparse.Namespace):
    """The run's Session, with Ray's and TensorFlow's log lines left out unless ``--verbose``."""
    from ..engine import Session  # the engine (DuckDB, pyarrow) only for a run, not for submit or --help

    quiet.set_verbose(args.verbose)
    with contextlib.nullcontext() if args.verbose else quiet.filtered_stderr(), \
            Session(warehouse=args.warehouse, ray_address=args.ray_address, variables=dict(args.variables),
                    allowed_paths=args.allowed_paths, project_root=args.project_root,
                    sql_engine=args.sql_engine) as session:
        yield session


def print_results(session, statements, path: Path) -> None:
    """Run ``statements`` and print each result as it comes. A select's first rows are computed
    when they are printed, by reading its result (``PreviewedResult``): the run itself asks for no
    previews, so what the CLI does not print is never computed. Every select is printed today, so
    each one's first rows are computed once, right after it ran, and a run-time error in them
    still stops the run at that select."""
    from .driver import Request  # the engine (DuckDB, pyarrow) only for a run, not for submit or --help

    Request(source=path).run_statements(session, statements, show=lambda view: _print_result(view, path))


def _print_result(view, path: Path) -> None:
    for warning in view.warnings:
        print(f"{path}: warning: {warning}", file=sys.stderr)
    print(view.table.text() if view.table is not None else view.message, flush=True)


def _traceback_text(exc: BaseException) -> str:
    return mask("".join(traceback.format_exception(exc)).rstrip("\n"))


def _print_progress(view) -> None:
    """Training progress as one line per round, or per parameter group, on stderr (no plot here)."""
    indent = "  " if view.stage != "start" and view.key is None else ""  # a run's rounds under its first line
    print(f"{indent}{view.text}", file=sys.stderr, flush=True)


def _format_error(path: Path, cell: int | None, view) -> str:
    """The error as ``FILE:LINE:COL: message`` with its caret; a notebook's error says which cell it is in."""
    suffix = f" (in cell {cell})" if path.suffix == ".ipynb" and cell is not None and not view.source else ""
    return view.located(str(path), suffix)


def main(argv: list[str] | None = None) -> int:
    """``mlsql-ray``: the exit status of the run, or of the submitted job.

    Ctrl-C (SIGINT) during ``run`` is never taken for success, whenever it comes:

    * while a statement runs (a load's first rows being computed for the screen included), it stops
      the run there: exit 130 and ``FILE: interrupted`` on stderr (``... at line N`` when a query
      was running). A save it comes too late to stop (every row handed over, the commit under way)
      says what it committed: ``FILE: interrupted after db.t was committed as version N``;
    * after the last statement, while the session closes (DuckDB, Ray), or while the outcome is
      printed: still exit 130 and ``FILE: interrupted``, every result having been printed already;
    * once that is done, SIGINT ends the process at once, as it ends any program without a handler
      for it: killed by SIGINT, which a shell reports as 130. (Left to Python, a KeyboardInterrupt
      while the interpreter shuts down, e.g. waiting for a save's writer thread, is printed as
      "Exception ignored" and the process exits 0.)

    A process started with SIGINT ignored (``trap '' INT``, or ``cmd &`` in a shell without job
    control) keeps ignoring it, as commands do: such a process is not the one Ctrl-C is meant for."""
    args = build_parser().parse_args(argv)
    if args.command == "submit":
        return submit_job.submit(args)
    if args.command == "serve":
        from ..service.server import serve  # the service (uvicorn) only for serve

        return serve(args)
    try:
        return run_file(args)
    except KeyboardInterrupt:  # before the run began (reading the file), or while its outcome was printed
        print(f"{args.file}: interrupted", file=sys.stderr)
        return 130
    finally:
        _sigint_ends_the_process()


def _sigint_ends_the_process() -> None:
    """From here on, SIGINT ends the process with the system's default action, if it had Python's
    (a handler someone else installed, and an ignored SIGINT, stay as they are)."""
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, signal.SIG_DFL)

