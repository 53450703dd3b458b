"""The ``!`` commands: ``!show tables``, ``!desc T``, ``!delta ...``, ``!python env|conf``.

Looked up by name in ``COMMANDS``; each takes the session and the command's arguments.
"""

from __future__ import annotations

import re
from typing import Callable

import pyarrow as pa

from ..errors import MLSQLError
from ..lang import ast
from . import delta
from .result import Result


def _show(session, s: ast.Command):
    if list(s.args) != ["tables"]:
        raise MLSQLError("usage: !show tables;")
    listing = session.catalog.listing()
    return Result(s, f"{listing.num_rows} tables", table=listing, num_rows=listing.num_rows)


def _desc(session, s: ast.Command):
    if len(s.args) != 1:
        raise MLSQLError("usage: !desc TABLE;")
    schema = session.catalog.schema(s.args[0])
    table = pa.table({
        "column": schema.names,
        "type": [str(f.type) for f in schema],
        "nullable": [f.nullable for f in schema],
    })
    return Result(s, f"{s.args[0]}: {len(schema)} columns", table=table, num_rows=table.num_rows, name=s.args[0])


def _delta(session, s: ast.Command):
    usage = "usage: !delta history DB.TABLE; | !delta info DB.TABLE; | !delta show tables;"
    if list(s.args) == ["show", "tables"]:
        table = delta.list_tables(session.warehouse)
        return Result(s, f"{table.num_rows} Delta tables in {session.warehouse}", table=table, num_rows=table.num_rows)
    if len(s.args) != 2 or s.args[0] not in ("history", "info"):
        raise MLSQLError(usage)
    name = s.args[1]
    path = delta.table_path(session.warehouse, name, {})
    table = delta.history(path, name) if s.args[0] == "history" else delta.info(path, name)
    return Result(s, f"{s.args[0]} of {name}", table=table, num_rows=table.num_rows, name=name)


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _python(session, s: ast.Command):
    """``!python env "K=V"`` (the environment of Python cells, see cells/runner.py) or
    ``!python conf "k=v"`` (settings, overridden by a cell's annotations)."""
    if len(s.args) != 2 or s.args[0] not in ("env", "conf"):
        raise MLSQLError('usage: !python env "KEY=VALUE"; or !python conf "key=value";')
    key, sep, value = s.args[1].partition("=")
    if not sep or not key.strip():
        raise MLSQLError(f'expected "key=value", got {s.args[1]!r}')
    if s.args[0] == "env" and (not _ENV_NAME.fullmatch(key.strip()) or "\0" in value):
        raise MLSQLError(f"!python env needs a variable name of letters, digits and _ (not starting with a digit) "
                         f"and a value without NUL characters, not {s.args[1]!r}")
    target = session.python_env if s.args[0] == "env" else session.python_conf
    target[key.strip()] = value.strip()
    return Result(s, f"python {s.args[0]} {key.strip()}={value.strip()}")


COMMANDS: dict[str, Callable] = {"show": _show, "desc": _desc, "delta": _delta, "python": _python}


def run_command(session, s: ast.Command):
    handler = COMMANDS.get(s.name.lower())
    if handler is None:
        raise MLSQLError(f"unknown command !{s.name}: known are {', '.join('!' + c for c in COMMANDS)}")
    return handler(session, s)
