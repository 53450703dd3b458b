"""The SQL functions every query of ours may use (Spark's and the vec_* macros), as statements:
run on the session's DuckDB connection, and handed to the Ray workers that read a cell's input
from files (``cells.partitions``), which may not import the engine."""

from __future__ import annotations

import duckdb

from ..ml import vectors
from . import spark_functions, spark_text

SETUP_SQL: tuple[str, ...] = (
    # DuckDB 2.0 prefetches every row group of a local parquet file it scans, so even a 20-row
    # preview of a load held a fifth of the file (123 MB of 600 MB); scans are no slower.
    "SET disable_parquet_prefetching = true",
    *(f"CREATE OR REPLACE MACRO {name}{definition}" for name, definition in spark_functions.MACROS.items()),
    *(f"CREATE OR REPLACE MACRO {name}({args}) AS {body}" for name, (args, body) in vectors.MACROS.items()),
)


def new_connection() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    for statement in SETUP_SQL:
        con.execute(statement)
    spark_text.register(con)
    return con
