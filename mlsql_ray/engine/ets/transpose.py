"""``DataTranspose`` (``ml/eda/DataTranspose.md``; the doc page is empty, Byzer's code example is
the reference): ``method="pivot"`` turns a column's values into columns, ``"unpivot"`` back."""

from __future__ import annotations

import pyarrow as pa

from ...errors import MLSQLError
from ...lang import spark_types
from ...options import Param
from . import spark_format
from ...ml.ets.base import ET, Call
from .base import column_sql, input_sql


def _pivot(session, call: Call, table: str, names: list[str]) -> pa.Table:
    """Spark's ``groupBy(indexCols).pivot(inputCol).sum(aggCol)``: one column per value of
    inputCol (in value order), holding the sum of aggCol (of Spark's type: ``_sum_as_spark``)."""
    index = call.columns("indexCols", names, "DataTranspose")
    source = call.columns("inputCol", names, "DataTranspose")
    value = call.columns("aggCol", names, "DataTranspose")
    if len(source) != 1 or len(value) != 1:
        raise MLSQLError("DataTranspose: inputCol and aggCol name one column each")
    source_sql, value_sql = column_sql(source[0]), column_sql(value[0])
    keys = [row[0] for row in session.con.sql(
        f"SELECT DISTINCT {source_sql} FROM {table} ORDER BY 1 NULLS FIRST").fetchall()]
    total = _sum_as_spark(session.catalog.schema(call.table).field(value[0]).type, value[0])
    params, columns = [], []
    for key in keys:
        label = "null" if key is None else spark_format.text(key)
        condition = f"{source_sql} IS NULL" if key is None else f"{source_sql} = ?"
        columns.append(f"{total.format(f'sum({value_sql}) FILTER (WHERE {condition})')} AS {column_sql(label)}")
        params += [] if key is None else [key]
    group = ", ".join(column_sql(c) for c in index)
    return session.con.sql(f"SELECT {group}, {', '.join(columns)} FROM {table} GROUP BY {group} ORDER BY {group}", params=params).to_arrow_table()


def _sum_as_spark(value_type: pa.DataType, name: str) -> str:
    """The SQL around DuckDB's sum that gives Spark's type for it: bigint for whole numbers,
    double for floats, decimal(p + 10, s) (at most 38) for decimal(p, s). Spark sums numbers only."""
    if pa.types.is_integer(value_type):
        return "CAST({} AS BIGINT)"
    if pa.types.is_floating(value_type):
        return "CAST({} AS DOUBLE)"
    if pa.types.is_decimal(value_type):
        return f"CAST({{}} AS DECIMAL({min(38, value_type.precision + 10)}, {value_type.scale}))"
    raise MLSQLError(f"DataTranspose: aggCol {name!r} is not a numeric column ({spark_types.simple_string(value_type)}); "
                     "pivot sums it, and sums only numbers")


def _unpivot(session, call: Call, table: str, names: list[str]) -> pa.Table:
    """Spark's ``stack``: per row, one row per unPivotCols column: the index columns, the column's
    name in mergedCol, its value in aggCol (nulls kept)."""
    index = call.columns("indexCols", names, "DataTranspose")
    spread = call.columns("unPivotCols", names, "DataTranspose")
    merged, value = call.required("mergedCol", "DataTranspose"), call.required("aggCol", "DataTranspose")
    keep = ", ".join(column_sql(c) for c in index)
    parts = [f"SELECT {keep}, {column_sql(c)} AS {column_sql(value)}, seen, {k} AS k FROM numbered"
             for k, c in enumerate(spread)]
    labels = ", ".join(f"({k}, ?)" for k in range(len(spread)))
    sql = (f"WITH numbered AS (SELECT *, row_number() OVER () AS seen FROM {table}), labels(k, label) AS (VALUES {labels}) "
           f"SELECT {', '.join('u.' + column_sql(c) for c in index)}, labels.label AS {column_sql(merged)}, "
           f"u.{column_sql(value)} FROM ({' UNION ALL '.join(parts)}) AS u JOIN labels ON u.k = labels.k ORDER BY u.seen, u.k")
    return session.con.sql(sql, params=spread).to_arrow_table()


_METHODS = {"pivot": _pivot, "unpivot": _unpivot}


def _transpose(session, call: Call) -> pa.Table:
    method = call.required("method", "DataTranspose").lower()
    if method not in _METHODS:
        raise MLSQLError(f"DataTranspose: method must be pivot or unpivot, not {method!r}")
    table = input_sql(session, call)
    return _METHODS[method](session, call, table, session.catalog.schema(call.table).names)


ETS = (
    ET("DataTranspose", "pivot a column's values into columns (with a sum), or unpivot columns into rows", _transpose, (
        Param("method", "", "pivot or unpivot (required)"),
        Param("indexCols", "", "the columns that identify a row, comma-separated"),
        Param("inputCol", "", "pivot: the column whose values become columns"),
        Param("aggCol", "", "pivot: the column summed; unpivot: the name of the value column"),
        Param("unPivotCols", "", "unpivot: the columns turned into rows, comma-separated"),
        Param("mergedCol", "", "unpivot: the name of the column holding the former column names"),
    ), kind="data analysis", example="""set jsonStr='''
{"subject":"数学","name":"张三","score":88}
{"subject":"语文","name":"张三","score":92}
{"subject":"数学","name":"王五","score":65}
{"subject":"语文","name":"王五","score":87}
''';
load jsonStr.`jsonStr` as data;
run data as DataTranspose.`` where method='pivot' and indexCols='name' and inputCol='subject' and aggCol='score' as data1;
"""),
)
