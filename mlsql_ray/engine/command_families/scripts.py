"""Commands about running text: ``!println``, ``!runScript``, ``!profiler`` and ``!kill``."""

from __future__ import annotations

from typing import Callable

import pyarrow as pa
from sqlglot import exp

from ... import lang
from ...errors import MLSQLError
from ..result import Result


def _println(session, s) -> Result:
    return Result(s, " ".join(s.args))


def _run_script(session, s) -> Result:
    """``!runScript '''TEXT''' named T``: run TEXT as a script; T is the last table it defined."""
    if len(s.args) != 3 or s.args[1].lower() != "named":
        raise MLSQLError("usage: !runScript '''SCRIPT''' named TABLE;")
    last = None
    try:
        for result in session.run_script(lang.parse(s.args[0]), None):
            if result.name and result.name in session.catalog:
                last = result.name
    except MLSQLError as exc:  # the position is the command's; say where in the text it went wrong
        where = f" at line {exc.line}, column {exc.column} of the text" if exc.line is not None else ""
        raise MLSQLError(f"!runScript failed{where}: {exc.message}") from exc
    if last is None:
        raise MLSQLError("the !runScript text defined no table to name")
    table = session.catalog.arrow(last)
    session.catalog.add_arrow(s.args[2], table, "!runScript")
    return Result(s, f"{s.args[2]}: {table.num_rows} rows", table=table,
                  num_rows=table.num_rows, name=s.args[2])


def _profiler(session, s) -> Result:
    """``!profiler sql '''…'''`` runs Spark SQL as is; ``explain SQL|TABLE`` shows DuckDB's plan;
    ``conf`` lists DuckDB's settings (the engine under the SQL, as Spark's are under Byzer's)."""
    usage = "usage: !profiler sql '''SQL'''; | !profiler explain SQL|TABLE; | !profiler conf;"
    if s.args[:1] == ("conf",) and len(s.args) == 1:
        table = session.con.sql("SELECT name, value, description FROM duckdb_settings() ORDER BY name").to_arrow_table()
    elif len(s.args) >= 2 and s.args[0] in ("sql", "explain"):
        text = " ".join(s.args[1:])
        if s.args[0] == "explain" and text in session.catalog:
            text = exp.select("*").from_(exp.table_(text, quoted=True)).sql("spark")
        relation = session.query(text, s.line, s.col)
        table = relation.to_arrow_table() if s.args[0] == "sql" else pa.table({"plan": [relation.explain()]})
    else:
        raise MLSQLError(usage)
    return Result(s, f"{table.num_rows} rows", table=table, num_rows=table.num_rows)


def _kill(session, s) -> Result:
    """``!kill ID``: stop the job another thread runs (``engine.jobs``); ``!show jobs`` lists the ids."""
    if len(s.args) != 1:
        raise MLSQLError("usage: !kill JOB_ID; (!show jobs lists the ids)")
    job = session.jobs.kill(s.args[0], session.con.interrupt)
    return Result(s, f"killing job {job.id}: {job.text}")


COMMANDS: dict[str, Callable] = {"println": _println, "runScript": _run_script, "profiler": _profiler, "kill": _kill}
