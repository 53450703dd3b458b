"""Commands that name, hold or write tables: ``!lastCommand``, ``!lastTableName``, ``!emptyTable``,
``!tableRepartition``, ``!cache``/``!unCache`` and ``!saveFile``."""

from __future__ import annotations

from typing import Callable

import pyarrow as pa

from ...errors import MLSQLError
from ...ml.ets.base import Call
from ..ets import find
from ..result import Result
from . import named_arguments
from .filesystem import allowed_path

LAST_TABLE_NAME = "__last_table_name__"


def _last_command(session, s) -> Result:
    """``!lastCommand named T``: the previous command's table (e.g. of ``!show datasources``) as T."""
    if len(s.args) != 2 or s.args[0].lower() != "named":
        raise MLSQLError("usage: !lastCommand named TABLE;")
    if session.last_command_table is None:
        raise MLSQLError("no command before !lastCommand returned a table")
    table = session.last_command_table
    session.catalog.add_arrow(s.args[1], table, "!lastCommand")
    return Result(s, f"{s.args[1]}: {table.num_rows} rows", table=table,
                  num_rows=table.num_rows, name=s.args[1])


def _last_table_name(session, s) -> Result:
    """``!lastTableName``: ``${__last_table_name__}`` becomes the table defined last."""
    name = session.catalog.last_defined()
    if name is None:
        raise MLSQLError("no table is defined yet for !lastTableName")
    session.variables[LAST_TABLE_NAME] = name
    return Result(s, f"{LAST_TABLE_NAME} = {name}")


def _empty_table(session, s) -> Result:
    """``!emptyTable``: the script's last answer is an empty table (nothing big sent back)."""
    return Result(s, "", table=pa.table({}), num_rows=0)


def _table_repartition(session, s) -> Result:
    """``!tableRepartition _ -i T -num N -o OUT``: the TableRepartition ET (``run T as
    TableRepartition.`` where partitionNum="N" as OUT``), as in Byzer, where both run the same code."""
    usage = "!tableRepartition _ -i TABLE -num N -o OUTPUT;"
    options = named_arguments(s.args, usage)
    if not {"i", "num", "o"} <= options.keys():
        raise MLSQLError(f"usage: {usage}")
    if not options["num"].isdigit() or int(options["num"]) < 1:
        raise MLSQLError(f"-num must be a positive whole number, not {options['num']!r}")
    parted = find("TableRepartition").run(session, Call(options["i"], {"partitionNum": options["num"]}))
    table = parted.table
    session.catalog.add_arrow(options["o"], table, f"!tableRepartition {options['i']}", partitions=parted.sizes)
    return Result(s, f"{options['o']}: {table.num_rows} rows", table=table,
                  num_rows=table.num_rows, name=options["o"])


_LIFECYCLES = ("script", "session")


def _cache(session, s) -> Result:
    if len(s.args) not in (1, 2) or (len(s.args) == 2 and s.args[1] not in _LIFECYCLES):
        raise MLSQLError("usage: !cache TABLE [script|session];")
    lifecycle = s.args[1] if len(s.args) == 2 else "script"
    if not session.catalog.cache(s.args[0], lifecycle):
        return Result(s, f"{s.args[0]} is in memory already")
    return Result(s, f"cached {s.args[0]} in memory until the {lifecycle} ends")


def _uncache(session, s) -> Result:
    if len(s.args) != 1:
        raise MLSQLError("usage: !unCache TABLE;")
    if not session.catalog.uncache(s.args[0]):
        return Result(s, f"{s.args[0]} was not cached")
    return Result(s, f"released the cached rows of {s.args[0]}")


def _save_file(session, s) -> Result:
    """``!saveFile _ -i T -o PATH``: T's single binary cell (or a file as rows: start, offset,
    value) written as the file PATH."""
    usage = "!saveFile _ -i TABLE -o PATH;"
    options = named_arguments(s.args, usage)
    if not {"i", "o"} <= options.keys():
        raise MLSQLError(f"usage: {usage}")
    table = session.catalog.arrow(options["i"])
    if {"start", "offset", "value"} <= set(table.column_names):
        table = table.sort_by("start")
        data = b"".join(table.column("value").to_pylist())
    elif table.num_columns == 1 and table.num_rows == 1 and (pa.types.is_binary(table.schema[0].type)
                                                              or pa.types.is_large_binary(table.schema[0].type)):
        data = table.column(0)[0].as_py() or b""
    else:
        raise MLSQLError(f"!saveFile needs a table with one binary cell (one column, one row), or a file as rows "
                         f"(start, offset, value); {options['i']} has {table.num_rows} rows of "
                         f"{', '.join(f'{f.name} {f.type}' for f in table.schema)}")
    path = allowed_path(session, options["o"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return Result(s, f"saved {len(data)} bytes of {options['i']} to {path}")


COMMANDS: dict[str, Callable] = {
    "lastCommand": _last_command, "lastTableName": _last_table_name, "emptyTable": _empty_table,
    "tableRepartition": _table_repartition, "cache": _cache, "unCache": _uncache, "saveFile": _save_file,
}
