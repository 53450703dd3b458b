"""The SQL functions every query of ours may use (the macros and Python functions of Spark's
function families, ``spark.families``), as statements: run on the session's DuckDB connection, and
handed to the Ray workers that read a cell's input from files (``cells.partitions``), which may not
import the engine. The macros are defined on a connection when a query first calls them
(``define_macros``), so opening one costs DuckDB's own connect."""

from __future__ import annotations

import os
import sys

import duckdb

from ..spark import families

SETUP_SQL: tuple[str, ...] = (
    # DuckDB 2.0 prefetches every row group of a local parquet file it scans, so even a 20-row
    # preview of a load held a fifth of the file (123 MB of 600 MB); scans are no slower.
    "SET disable_parquet_prefetching = true",
)


def new_connection() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    for statement in SETUP_SQL:
        con.execute(statement)
    # DuckDB draws its progress bar on stdout for queries over 2 s: only a person at a terminal
    # wants it (in a batch run's log or pipe, and in a notebook, it is noise)
    try:
        con.execute(f"SET enable_progress_bar = {'true' if _on_a_terminal() else 'false'}")  # fixed text, no input
    except duckdb.InvalidInputException:
        pass  # inside Jupyter DuckDB refuses any change of it without ipywidgets; its default there is no bar
    families.define_python_functions(con)
    return con


def _on_a_terminal() -> bool:
    """Whether this process writes to a person's terminal: its real stdout is one, and it is not a
    Jupyter kernel (whose stdout may be the server's terminal; DuckDB would draw its bar there
    with ipywidgets, and fails without them)."""
    if "ipykernel" in sys.modules:
        return False
    try:
        return os.isatty(sys.__stdout__.fileno())
    except (AttributeError, ValueError, OSError):  # no real stdout, or closed
        return False


# every Spark, Byzer and vector macro: defining all of them when a connection opened took 100-180 ms.
# Literal DDL, not trees: the definitions are our own fixed text, and sqlglot's reading of a macro
# body could change it (lambdas, DuckDB-only functions)
ON_DEMAND_SQL: dict[str, str] = {name: f"CREATE OR REPLACE MACRO {name}{definition}"
                                 for name, definition in families.MACROS.items()}


def macro_statements(names: set[str]) -> list[str]:
    """The statements that define these on-demand macros, each after those it calls."""
    return [statement for name, statement in ON_DEMAND_SQL.items() if name in names]


def define_macros(con: duckdb.DuckDBPyConnection, sql: str, defined: set[str]) -> list[str]:
    """Define on ``con`` the on-demand macros ``sql`` calls, and those they call, that ``defined``
    (the names this connection has) lacks; the statements run, in ``families.MACROS``' order
    (each after those it calls)."""
    wanted, todo = set(), list(families.called(sql) - defined)
    while todo:
        name = todo.pop()
        if name not in wanted and name not in defined:
            wanted.add(name)
            todo.extend(families.NEEDS[name])
    statements = macro_statements(wanted)
    for statement in statements:
        con.execute(statement)
    defined.update(wanted)
    return statements
