"""The ``!`` commands: ``!desc T``, ``!delta ...``, ``!python env|conf`` here, the families of
``command_families`` (``!show``, ``!fs``, table and script commands) beside them.

Looked up by name (case-insensitive) in ``COMMANDS``; each takes the session and the command.
"""

from __future__ import annotations

import re
from typing import Callable

import pyarrow as pa
import sqlglot
import sqlglot.errors
from sqlglot import exp

from ..cluster import quiet
from ..errors import MLSQLError, first_line
from ..lang import ast
from ..storage import delta
from ..spark import type_names as spark_types
from ..options import flag
from . import assertions, macros
from .command_families import object_fs, scripts, show, tables
from .result import PREVIEW_ROWS, Result


def _desc(session, s: ast.Command):
    """``!desc T``: Spark's ``DESCRIBE`` of T (``col_name``, ``data_type``, ``comment``);
    ``!desc T json``: Spark's schema JSON of T in one row, column ``value`` (Byzer's ShowTableExt)."""
    if len(s.args) not in (1, 2) or s.args[1:] not in ((), ("json",)):
        raise MLSQLError("usage: !desc TABLE; or !desc TABLE json;")
    schema = session.catalog.schema(s.args[0])
    if len(s.args) == 2:
        table = pa.table({"value": [spark_types.schema_json(schema)]})
    else:
        table = spark_types.describe(schema, session.catalog.vectors(s.args[0]))
    return Result(s, f"{s.args[0]}: {len(schema)} columns", table=table, num_rows=table.num_rows, name=s.args[0])


_DESCRIBE = re.compile(r"\s*desc(ribe)?\s", re.IGNORECASE)


def spark_describe(session, spark_sql: str, line: int, col: int) -> pa.Table | None:
    """Spark SQL's ``DESC[RIBE] [TABLE] [EXTENDED|FORMATTED] T`` (or ``DESCRIBE SELECT ...``) as
    Spark answers it for a temporary view: ``!desc``'s table; None for any other SQL."""
    if not _DESCRIBE.match(spark_sql):
        return None
    try:
        tree = sqlglot.parse_one(spark_sql, read="spark")
    except sqlglot.errors.SqlglotError as exc:
        raise MLSQLError(f"SQL syntax error in DESCRIBE: {first_line(exc)}", line, col) from None
    if not isinstance(tree, exp.Describe):
        return None
    target = tree.this
    if isinstance(target, exp.Table) and not target.args.get("db"):
        return spark_types.describe(session.catalog.schema(target.name), session.catalog.vectors(target.name))
    schema = session.query(target.sql(dialect="spark"), line, col).limit(0).to_arrow_table().schema
    return spark_types.describe(schema)


_DELTA_USAGE = """!delta help;                                  this text
!delta show tables;                           the Delta tables of the warehouse
!delta history DB.TABLE;                      one row per version
!delta info DB.TABLE;                         the table's version, files, schema
!delta compact DB.TABLE VERSION FILE_NUM [background];  rewrite its files into about FILE_NUM files
!delta vacuum DB.TABLE [HOURS];               delete files the current version does not use, older than HOURS
                                              (default 168); older versions are then gone"""


def _delta(session, s: ast.Command):
    args = list(s.args)
    if args == ["help"]:
        return Result(s, _DELTA_USAGE, table=pa.table({"usage": _DELTA_USAGE.splitlines()}))
    if args == ["show", "tables"]:
        table = delta.list_tables(session.warehouse)
        return Result(s, f"{table.num_rows} Delta tables in {session.warehouse}", table=table, num_rows=table.num_rows)
    if len(args) in (4, 5) and args[0] == "compact" and args[2].isdigit() and args[3].isdigit() \
            and args[4:] in ([], ["background"]):
        # VERSION is Byzer's bound on the files to merge; deltalake compacts the current version's files.
        # background: run here, in the foreground (nothing outlives the statement).
        name = args[1]
        table = delta.compact(delta.table_path(session.warehouse, name, {}), name, int(args[3]))
        return Result(s, f"compacted {name}", table=table, num_rows=1, name=name)
    if args[:1] == ["vacuum"] and len(args) in (2, 3) and (len(args) == 2 or args[2].isdigit()):
        name = args[1]
        table = delta.vacuum(delta.table_path(session.warehouse, name, {}), name, int(args[2]) if args[2:] else None)
        return Result(s, f"vacuumed {name}: {table.num_rows} files deleted", table=table, num_rows=table.num_rows,
                      name=name)
    if len(args) != 2 or args[0] not in ("history", "info"):
        raise MLSQLError("usage:\n" + _DELTA_USAGE)
    name = args[1]
    path = delta.table_path(session.warehouse, name, {})
    table = delta.history(path, name) if args[0] == "history" else delta.info(path, name)
    return Result(s, f"{args[0]} of {name}", table=table, num_rows=table.num_rows, name=name)


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
    if s.args[0] == "conf" and key.strip() == "verbose":
        quiet.set_verbose(flag({"verbose": value}, "verbose", False, "!python conf"))
    target[key.strip()] = value.strip()
    return Result(s, f"python {s.args[0]} {key.strip()}={value.strip()}")


COMMANDS: dict[str, Callable] = {
    "desc": _desc, "delta": _delta, "python": _python,
    **show.COMMANDS, **object_fs.COMMANDS, **tables.COMMANDS, **scripts.COMMANDS, **assertions.COMMANDS,
}


def run_command(session, s: ast.Command):
    key = s.name.lower()
    handler = next((h for name, h in COMMANDS.items() if name.lower() == key), None)
    if handler is None:
        return unknown_command(session, s)
    result = handler(session, s)
    if result.table is not None:
        session.last_command_table = result.table  # whole, for !lastCommand named T
        result.num_rows = result.table.num_rows
        if result.num_rows > PREVIEW_ROWS:  # (slicing a table without columns would invent rows)
            result.table = result.table.slice(0, PREVIEW_ROWS)
    return result


def unknown_command(session, s: ast.Command):
    """Where every ``!NAME`` that is no command ends up: a macro the user defined with
    ``set NAME='...{}...';``, or an error listing the commands."""
    if macros.is_macro(session, s.name):
        return macros.run_macro(session, s)
    raise MLSQLError(f"unknown command !{s.name}: known are {', '.join('!' + c for c in COMMANDS)}")
