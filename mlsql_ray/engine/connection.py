"""A DuckDB connection with the SQL functions every query of ours may use (Spark's and the vec_*
macros): the session's, and the one a Ray worker opens to read its partition from files."""

from __future__ import annotations

import duckdb


def new_connection() -> duckdb.DuckDBPyConnection:
    from ..ml import vectors
    from . import spark_functions

    con = duckdb.connect()
    spark_functions.install(con)
    vectors.install(con)
    return con
