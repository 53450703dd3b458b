"""DuckDB's errors mapped onto the statement; the Spark SQL → DuckDB translation itself lives in
``lang.sql`` because the parser checks every select's SQL before anything runs."""

from __future__ import annotations

import re

from ..lang.sql import translate
from ..lang.sql_types import Schemas

__all__ = ["duckdb_message", "to_duckdb", "translate"]


def to_duckdb(spark_sql: str, line: int = 1, col: int = 1, schemas: Schemas | None = None) -> str:
    return translate(spark_sql, line, col, schemas).sql


def duckdb_message(exc: Exception, tables: list[str]) -> str:
    """DuckDB's message, first line only, with a hint when a table name is unknown."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    missing = re.search(r"Table with name (\S+) does not exist", first)
    if missing:
        known = ", ".join(sorted(tables)) or "none yet"
        return f"table {missing.group(1)} is not defined (load it or select ... as it first; defined: {known})"
    first = re.sub(r"^[\w ]+ Error: ", "", first)
    if re.search(r"UNNEST\(\) can only be applied to lists, structs and NULL, not MAP", first):
        return ("explode/posexplode of a map column is not supported yet (the column's type is not known when the SQL "
                "is translated): write inline(map_entries(m)) for its key and value columns, or explode(map_keys(m))")
    # an exception raised inside a Python function (a model function) speaks for itself
    return re.sub(r"^Python exception occurred while executing the UDF: \w+: ", "", first)
