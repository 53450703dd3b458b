"""Spark's types of a query's result where only the bound result shows them: DuckDB sums integers
into HUGEINT, a type Spark does not have (Spark's ``sum`` of int/bigint is bigint)."""

from __future__ import annotations

import duckdb
from sqlglot import exp

from . import sql_build


def spark_result(relation: duckdb.DuckDBPyRelation, sql: str) -> tuple[str, duckdb.DuckDBPyRelation]:
    """The query ``sql`` (bound as ``relation``) with its HUGEINT result columns (DuckDB's sum of
    integers) cast to BIGINT, Spark's type for them: its SQL and its relation. The cast is a
    projection over the bound relation, so the query is not bound again."""
    types = [str(t) for t in relation.types]
    if "HUGEINT" not in types or len(set(relation.columns)) != len(relation.columns):
        return sql, relation
    columns = ", ".join((exp.cast(sql_build.column(c), exp.DataType.build("BIGINT")).as_(c, quoted=True) if t == "HUGEINT"
                         else sql_build.column(c)).sql("duckdb") for c, t in zip(relation.columns, types))
    # the query stays the text translate() generated from a tree (parsing it again would cost a parse per select)
    return f"SELECT {columns} FROM ({sql}) AS spark_result", relation.project(columns)
