"""``mlsql-ray run FILE``: a thin shell over ``Session`` for batch runs of scripts and notebooks.

Errors print as ``FILE:LINE:COL: message`` on stderr with a non-zero exit; ``--verbose`` adds
the Python traceback. A bug in mlsql-ray (an ``InternalError``) says so, with a hint to run again
with ``--verbose`` for its traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path

from . import progress
from .errors import InternalError, MLSQLError, MLSQLSyntaxError

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
    run.add_argument("file", type=Path)
    run.add_argument("--set", dest="variables", action="append", type=_key_value, default=[], metavar="KEY=VALUE",
                     help="define ${KEY} for the script (a `set ... where type=\"defaultParam\"` keeps this value)")
    run.add_argument("--warehouse", help="root folder of the Delta tables (default: $MLSQL_WAREHOUSE or ./warehouse)")
    run.add_argument("--ray-address", help="Ray cluster for Python cells: auto, host:port or ray://host:port (default: $MLSQL_RAY_ADDRESS, else a local Ray started on first need)")
    run.add_argument("--allow-path", dest="allowed_paths", action="append", default=[], metavar="FOLDER",
                     help="a folder !fs and !saveFile may touch, besides the working directory and the warehouse (repeatable)")
    run.add_argument("--project-root", type=Path, metavar="FOLDER",
                     help="where include project.`path` starts (default: the folder of the script)")
    run.add_argument("--verbose", action="store_true", help="print Python tracebacks with errors")
    return parser


def run_file(args: argparse.Namespace) -> int:
    from . import lang
    from .display import render_text
    from .engine import Session

    path: Path = args.file
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        print(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}", file=sys.stderr)
        return 2
    cell = None  # for notebooks, the number of the cell being parsed or run
    try:
        cells = notebook_cells(text) if path.suffix == ".ipynb" else [text]
        # Parse everything before running anything: a typo at the end must not leave half a run.
        units = []
        for cell, source in enumerate(cells, start=1):
            units.append(lang.parse(source))
        with Session(warehouse=args.warehouse, ray_address=args.ray_address, variables=dict(args.variables),
                     allowed_paths=args.allowed_paths, project_root=args.project_root) as session, \
                progress.reporting_to(_print_progress):
            for cell, statements in enumerate(units, start=1):
                for result in session.run(statements, source=path):
                    for warning in result.warnings:
                        print(f"{path}: warning: {warning}", file=sys.stderr)
                    print(render_text(result.table, result.num_rows) if result.table is not None else result.message, flush=True)
    except MLSQLError as exc:
        print(_format_error(path, cell, exc), file=sys.stderr)
        if args.verbose:
            traceback.print_exc()
        return 1
    except KeyboardInterrupt:
        print(f"{path}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - not the user's mistake: a bug, shown as one
        internal = exc if isinstance(exc, InternalError) else InternalError(exc, None, None)
        print(_format_error(path, cell, internal), file=sys.stderr)
        if args.verbose:
            traceback.print_exception(exc)
        else:
            print("This is a bug in mlsql-ray, not in your script; run again with --verbose to see its traceback "
                  "(and please report it).", file=sys.stderr)
        return INTERNAL_ERROR_EXIT
    return 0


def _print_progress(kind: str, event: dict) -> None:
    """Training progress as one line per round, or per parameter group, on stderr."""
    if kind == "train_start":
        print(f"training: {event['total_rounds']} rounds on {event['workers']} workers", file=sys.stderr, flush=True)
    elif kind == "train_round":
        extra = "".join(f"  {k} {event[k]:.4f}" for k in ("val_loss", "val_accuracy") if k in event)
        retried = f"  (retried {event['retries']}x)" if event.get("retries") else ""
        print(f"  round {event['round']}/{event['total_rounds']}: loss {event['loss']:.4f}  "
              f"accuracy {event.get('accuracy', float('nan')):.4f}{extra}  {event['elapsed']:.1f}s{retried}",
              file=sys.stderr, flush=True)
    elif kind in ("group_start", "group_end"):
        print(progress.group_text(kind, event), file=sys.stderr, flush=True)


def _format_error(path: Path, cell: int | None, exc: MLSQLError | InternalError) -> str:
    """``FILE:LINE:COL: message``: FILE is the included script the error is in, if any; a
    notebook's error says which cell it is in."""
    included = exc.source and Path(exc.source) != path.resolve()
    where = exc.source if included else str(path)
    suffix = f" (in cell {cell})" if path.suffix == ".ipynb" and cell is not None and not included else ""
    if exc.line is None:
        return f"{where}: {exc.message}{suffix}"
    text = f"{where}:{exc.line}:{exc.column}: {exc.message}{suffix}"
    if isinstance(exc, MLSQLSyntaxError) and exc.source_line:
        text += "\n" + "\n".join("    " + line for line in exc.caret.split("\n"))
    return text


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run_file(args)


if __name__ == "__main__":
    sys.exit(main())
