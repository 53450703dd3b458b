"""Completion, inspection and "is this cell complete?" for the kernel.

Plain functions of (cell text, cursor, session or None) so they are easy to test. Inside a
``--%python`` cell, completion is jedi's over the cell's code. Elsewhere the words offered come
from the library itself (the parser's statement table, the engine's formats and
commands, the Python cell settings) and from the session's catalog: nothing is listed twice.
A kernel whose first cell has not run yet has no session; completion then offers language words
only and never starts one.
"""

from __future__ import annotations

import html
import os
import re

from .. import lang
from ..errors import MLSQLSyntaxError
from ..lang import ast
from ..lang.branches import BRANCH_COMMANDS
from ..lang.parser import STATEMENT_PARSERS
from ..lang.lexicon import CLAUSE_WORDS, SAVE_MODES
from ..lang.tokens import ANNOTATION_START, pieces

SQL_WORDS = ["from", "where", "group by", "order by", "having", "join", "left join", "on", "limit",
             "distinct", "count", "sum", "avg", "min", "max", "case", "when", "then", "else", "end",
             "union all", "with"]
MAX_TABLES_FOR_COLUMNS = 20  # reading schemas costs a query each
COMMAND_ARGS = {"show": ["version", "commands", "tables", "datasources", "et", "functions", "jobs", "resource"],
                "delta": ["help", "show", "history", "info", "compact", "vacuum"], "python": ["env", "conf"],
                "profiler": ["sql", "explain", "conf"]}

_ANNOTATION_LINE = re.compile(rf"{ANNOTATION_START}(\w*)$")  # an annotation's name being typed
_WORD_BEFORE = re.compile(r"(?:`?(\w+)`?\.)?(\w*)$")
_BACKQUOTED_BEFORE = re.compile(r"(\w+)\.`([^`\n]*)$")


# -- the vocabulary, from the library -------------------------------------------------------------

def statement_keywords() -> list[str]:
    return list(STATEMENT_PARSERS)


def formats() -> list[str]:
    from ..engine.datasources import sources  # the kernel starts without the engine (DuckDB, pyarrow)

    return [source.name for source in sources().values()]


def include_formats() -> list[str]:
    """What ``include`` can read here (``lib`` is refused: it downloads)."""
    from ..engine.includes import RESOLVERS  # the kernel starts without the engine (DuckDB, pyarrow)

    return [name for name in RESOLVERS if name != "lib"]


def commands() -> list[str]:
    from ..engine.commands import COMMANDS  # the kernel starts without the engine (DuckDB, pyarrow)

    return [*COMMANDS, *BRANCH_COMMANDS]


def annotations() -> list[str]:
    """``--%`` names: ``python`` plus every Python cell setting."""
    from ..cells.runner import KNOWN_SETTINGS  # they import pyarrow, which the kernel's start goes without

    return ["python", *KNOWN_SETTINGS]


# -- completion -------------------------------------------------------------------------------------

def complete(code: str, cursor: int, session=None) -> tuple[int, list[str]]:
    """(where the replaced text starts, the matches) for the cursor position."""
    before = code[:cursor]
    line_before = before[before.rfind("\n") + 1:]

    annotation = _ANNOTATION_LINE.match(line_before)
    if annotation:
        prefix = annotation.group(1)
        names = [n if n == "python" else f"{n}=" for n in annotations()]
        return cursor - len(prefix), _starting(names, prefix)
    cell = lang.python_cell(code)
    if cell is not None and not re.match(ANNOTATION_START, line_before):
        return _complete_python(cell, before, cursor)
    cut = pieces(before)
    if cut and cut[-1][0] == "comment":
        return cursor, []  # in a comment

    path = _BACKQUOTED_BEFORE.search(_current_statement_raw(before))
    if path:  # inside `...`: a file path, or a Delta table name after delta.
        fmt, typed = path.group(1).lower(), path.group(2)
        if fmt == "delta":
            return cursor - len(typed), _starting(_delta_tables(session), typed)
        if fmt == "jdbc":
            return cursor - len(typed), _starting(_jdbc_names(session, typed), typed)
        return _complete_path(typed, cursor)

    match = _WORD_BEFORE.search(before)
    qualifier, prefix = match.group(1), match.group(2)
    start = cursor - len(prefix)
    tables = _table_names(session)

    if qualifier is not None:  # `table.col`
        table = _find(tables, qualifier)
        return start, _starting(_columns(session, table), prefix) if table else []

    statement = _current_statement(before[: start])
    words = re.findall(r"!?\w+", statement)
    previous = words[-1].lower() if words else ""
    first = words[0].lower() if words else ""

    if before[:start].endswith("!"):
        return start, _starting(commands(), prefix)
    if not words:  # the statement's first word
        return start, _cased(_starting(statement_keywords(), prefix), prefix)
    if first.startswith("!"):
        return start, _starting(_command_args(first[1:], words[1:], tables, session), prefix)
    if previous in ("load", "connect", "register", "unregister") or (previous == "as" and first in ("save", "register")):
        return start, _starting(formats(), prefix)
    if previous == "include":
        return start, _starting(include_formats(), prefix)
    if previous == "as" and first in ("run", "train", "predict"):
        return start, _starting(["Ray", *formats()], prefix)
    if first == "save" and (previous == "save" or previous in {m.lower() for m in SAVE_MODES}):
        return start, _starting([*SAVE_MODES, *tables] if previous == "save" else tables, prefix)
    if previous in ("from", "join", "desc", "predict", "run", "train"):
        return start, _starting(tables, prefix)

    candidates: list[str] = []
    if first == "select":
        whole = statement + _statement_after(code[cursor:])
        used = [t for t in tables if re.search(rf"(?<![\w.]){re.escape(t)}(?!\w)", whole, re.IGNORECASE)]
        if not used:  # the select list written before its FROM: any table's columns
            used = tables[:MAX_TABLES_FOR_COLUMNS]
        for table in used:
            candidates += _columns(session, table)
        candidates += tables + _cased(SQL_WORDS, prefix)
    else:
        candidates += tables + _cased(CLAUSE_WORDS, prefix) + formats()
    return start, _unique(_starting(candidates, prefix))


def _complete_python(cell, before: str, cursor: int) -> tuple[int, list[str]]:
    """jedi's completions at the cursor, over the cell's code with the globals a cell starts
    with (``RayContext``, ``context``)."""
    import jedi  # heavy: jedi, and the cells' modules import pyarrow: only when asked

    from ..cells.context import CellContext
    from ..cells.runner import cell_globals

    line = before.count("\n") - (cell.line - 1) + 1  # the cell's code starts at its first annotation
    column = len(before) - (before.rfind("\n") + 1)
    try:
        found = jedi.Interpreter(cell.code, [cell_globals(CellContext(conf={}))]).complete(line, column)
    except Exception:  # noqa: BLE001 - completion never fails
        return cursor, []
    if not found:
        return cursor, []
    typed = len(found[0].name_with_symbols) - len(found[0].complete)
    return cursor - typed, [c.name_with_symbols for c in found]


def _command_args(name: str, args: list[str], tables: list[str], session) -> list[str]:
    if name == "desc":
        return tables
    if name == "delta" and len(args) == 1 and args[0].lower() in ("history", "info"):
        return _delta_tables(session)
    if name == "delta" and len(args) == 1 and args[0].lower() == "show":
        return ["tables"]
    return COMMAND_ARGS.get(name, []) if not args else []


def _delta_tables(session) -> list[str]:
    if session is None:
        return []
    try:
        from ..storage.delta import list_tables  # they import pyarrow, which the kernel's start goes without

        listing = list_tables(session.warehouse).to_pydict()
        return [f"{db}.{table}" for db, table in zip(listing.get("db", []), listing.get("table", []))]
    except Exception:  # noqa: BLE001 - completion never fails
        return []


def _jdbc_names(session, typed: str) -> list[str]:
    if session is None:
        return []
    from ..engine.datasources.jdbc import completions  # the kernel starts without the engine (DuckDB, pyarrow)

    return completions(session.connections, typed)


def _statement_pieces(before: str) -> list[tuple[str, int, int]]:
    """The tokenizer's pieces of the statement the cursor is in (after the last ``;``), up to the cursor."""
    cut = pieces(before)
    ends = [i for i, (kind, start, _) in enumerate(cut) if kind == "symbol" and before[start] == ";"]
    return cut[ends[-1] + 1:] if ends else cut


def _current_statement_raw(before: str) -> str:
    """The statement's text up to the cursor, strings and all (to see an open backquote)."""
    cut = _statement_pieces(before)
    return before[cut[0][1]:] if cut else ""


def _statement_after(after: str) -> str:
    """The text of the statement the cursor is in, from the cursor to its ``;``."""
    ends = (start for kind, start, _ in pieces(after) if kind == "symbol" and after[start] == ";")
    return after[:next(ends, len(after))]


def _complete_path(typed: str, cursor: int) -> tuple[int, list[str]]:
    """Files and folders (folders with a trailing /) whose path starts with ``typed``; relative
    paths are relative to the kernel's folder, as when the statement runs."""
    folder, _, name = typed.rpartition("/")
    base = os.path.expanduser(folder + "/" if folder or typed.startswith("/") else ".")
    try:
        entries = sorted(os.scandir(base or "/"), key=lambda e: e.name)
    except OSError:
        return cursor, []
    matches = [e.name + ("/" if e.is_dir() else "") for e in entries
               if e.name.startswith(name) and (name.startswith(".") or not e.name.startswith("."))]
    return cursor - len(name), matches


def _current_statement(before: str) -> str:
    """The text of the statement the cursor is in, up to the cursor: its words and symbols, its
    strings, quoted names and comments blanked (their contents are not words)."""
    return "".join(before[start:end] if kind in ("word", "symbol") else " "
                   for kind, start, end in _statement_pieces(before))


def _table_names(session) -> list[str]:
    if session is None:
        return []
    return sorted(session.catalog.names(), key=str.lower)


def _find(tables: list[str], name: str) -> str | None:
    for table in tables:
        if table.lower() == name.lower():
            return table
    return None


def _columns(session, table: str) -> list[str]:
    try:
        return list(session.catalog.schema(table).names)
    except Exception:  # noqa: BLE001 - a table that cannot be read has no columns to offer
        return []


def _starting(words: list[str], prefix: str) -> list[str]:
    low = prefix.lower()
    return [w for w in words if w.lower().startswith(low)]


def _cased(words: list[str], prefix: str) -> list[str]:
    """Keywords in the case the user types them in."""
    return [w.upper() for w in words] if prefix and prefix.isupper() else list(words)


def _unique(words: list[str]) -> list[str]:
    seen: set[str] = set()
    return [w for w in words if not (w in seen or seen.add(w))]


# -- inspection -------------------------------------------------------------------------------------

def inspect(code: str, cursor: int, session=None) -> dict | None:
    """The word under the cursor: a table → its schema; a statement keyword → its syntax.
    As text/plain and text/html."""
    left = re.search(r"\w*$", code[:cursor]).group(0)
    right = re.match(r"\w*", code[cursor:]).group(0)
    word = left + right
    if not word:
        return None
    table = _find(_table_names(session), word)
    if table is not None:
        return _table_help(session, table)
    return _keyword_help(word)


def _table_help(session, table: str) -> dict:
    from ..frontend.display import _short_type  # the kernel starts without the engine (DuckDB, pyarrow)

    schema = session.catalog.schema(table)
    listing = session.catalog.listing().to_pylist()
    source = next((row["source"] for row in listing if row["name"] == table), "")
    types = [_short_type(f.type) for f in schema]
    width = max([len(n) for n in schema.names] + [6])
    text = "\n".join([f"{table}: {len(schema)} columns" + (f" (from {source})" if source else ""),
                      *(f"  {n.ljust(width)}  {t}" for n, t in zip(schema.names, types))])
    rows = "".join(f"<tr><td><code>{html.escape(n)}</code></td><td>{html.escape(t)}</td></tr>"
                   for n, t in zip(schema.names, types))
    page = (f"<p><b>{html.escape(table)}</b>: {len(schema)} columns"
            + (f" (from <code>{html.escape(source)}</code>)" if source else "")
            + f"</p><table><thead><tr><th>column</th><th>type</th></tr></thead><tbody>{rows}</tbody></table>")
    return {"text/plain": text, "text/html": page}


def _keyword_help(word: str) -> dict | None:
    """The statement's grammar line, from the docstring of its class in ``lang.ast``."""
    keyword = word.lower()
    if keyword not in statement_keywords():
        return None
    if keyword in ("run", "predict"):
        keyword = "train"
    for cls in vars(ast).values():
        if isinstance(cls, type) and issubclass(cls, ast.Statement) and cls.__doc__:
            if cls.keyword == keyword or (cls.keyword == "sql" and keyword in ("insert", "create", "drop", "refresh")):
                syntax = cls.__doc__.strip().split("\n")[0].replace("``", "").split(" — ")[0]
                return {"text/plain": f"{word}: {syntax}", "text/html": f"<code>{html.escape(syntax)}</code>"}
    return None


# -- is_complete ------------------------------------------------------------------------------------

def is_complete(code: str) -> dict:
    """``complete``, ``incomplete`` (a statement without its ``;``, an open string or comment) or
    ``invalid`` (a syntax error that more typing at the end cannot fix)."""
    if not code.strip() or lang.python_cell(code) is not None:
        return {"status": "complete"}
    try:
        lang.parse(code)
    except MLSQLSyntaxError as exc:
        if exc.reason == MLSQLSyntaxError.UNFINISHED:
            return {"status": "incomplete", "indent": ""}
        return {"status": "invalid"}
    except Exception:  # noqa: BLE001 - e.g. a ${} error: let the execution say what is wrong
        return {"status": "complete"}
    return {"status": "complete"}
