"""``DataTranspose`` (``ml/eda/DataTranspose.md``; the doc page is empty, Byzer's code example is
the reference): ``method="pivot"`` turns a column's values into columns, ``"unpivot"`` back."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
from sqlglot import exp

from ...errors import MLSQLError
from ...spark import sql_build
from ...spark import type_names as spark_types
from ...options import Param
from ...spark import java_numbers as spark_format
from ...ml.ets.base import ET, Call
from .base import input_name


#: spark.sql.shuffle.partitions as Byzer runs Spark (its byzer.properties leaves Spark's default)
SHUFFLE_PARTITIONS = 200
#: the columns the placement adds to T for the pivot's order (never output)
_PLACE, _SUBPLACE, _SEEN = "__mlsql_place", "__mlsql_subplace", "__mlsql_seen"
_serial = itertools.count()


def _pivot(session, call: Call, table: exp.Table, names: list[str]) -> pa.Table:
    """Spark's ``groupBy(indexCols).pivot(inputCol).sum(aggCol)``: one column per value of
    inputCol (in value order), holding the sum of aggCol (of Spark's type: ``_sum_as_spark``);
    the rows in the order Spark gives them (``_placed``)."""
    index = call.columns("indexCols", names, "DataTranspose")
    source = call.columns("inputCol", names, "DataTranspose")
    value = call.columns("aggCol", names, "DataTranspose")
    if len(source) != 1 or len(value) != 1:
        raise MLSQLError("DataTranspose: inputCol and aggCol name one column each")
    source_column, value_column = sql_build.column(source[0]), sql_build.column(value[0])
    keys = [row[0] for row in session.con.sql(sql_build.shaped(
        "SELECT DISTINCT $v FROM $table ORDER BY 1 NULLS FIRST", v=source_column, table=table).sql("duckdb")).fetchall()]
    total = _sum_as_spark(session.catalog.schema(call.table).field(value[0]).type, value[0])
    params, columns = [], []
    for key in keys:
        label = "null" if key is None else spark_format.text(key)
        shape = "sum($v) FILTER (WHERE $key IS NULL)" if key is None else "sum($v) FILTER (WHERE $key = ?)"
        summed = sql_build.shaped(shape, v=value_column, key=source_column)
        columns.append(exp.cast(summed, total).as_(label, quoted=True))
        params += [] if key is None else [key]
    group = [sql_build.column(c) for c in index]
    helper = _placed(session, call, index, source[0])
    try:
        order = [sql_build.shaped(f"{how}($c)", c=sql_build.column(c))
                 for how, c in (("min", _PLACE), ("min", _SUBPLACE), ("min", _SEEN))]
        query = exp.select(*group, *columns).from_(sql_build.table(helper)).group_by(*group).order_by(*order)
        return session.con.sql(query.sql("duckdb"), params=params).to_arrow_table()
    finally:
        session.con.unregister(helper)


def _placed(session, call: Call, index: list[str], source: str) -> str:
    """T, registered under a new name, with what orders the pivot's rows as Spark gives them: Spark
    pivots in two aggregations, by (index, inputCol) then by index, and returns the second one's
    shuffle partitions in turn — ``pmod(hash(index), 200)``, Murmur3 as Spark's ``hash`` (its
    translation here) — and, within one, the keys in the order the first aggregation's partitions
    (``pmod(hash(index, inputCol), 200)``) hand them over; then by first appearance."""
    spark = ", ".join(exp.to_identifier(c, quoted=True).sql("spark") for c in index)
    inner = exp.to_identifier(source, quoted=True).sql("spark")
    placed = session.query(f"SELECT pmod(hash({spark}), {SHUFFLE_PARTITIONS}) AS {_PLACE}, "
                           f"pmod(hash({spark}, {inner}), {SHUFFLE_PARTITIONS}) AS {_SUBPLACE} "
                           f"FROM {exp.to_identifier(call.table, quoted=True).sql('spark')}", 1, 1).to_arrow_table()
    rows = session.catalog.arrow(call.table)
    rows = (rows.append_column(_PLACE, placed.column(_PLACE)).append_column(_SUBPLACE, placed.column(_SUBPLACE))
            .append_column(_SEEN, pa.array(np.arange(rows.num_rows))))
    helper = f"__mlsql_pivot_{next(_serial)}"
    session.con.register(helper, rows)
    return helper


def _sum_as_spark(value_type: pa.DataType, name: str) -> exp.DataType:
    """The type DuckDB's sum is cast to for Spark's type of it: bigint for whole numbers, double
    for floats, decimal(p + 10, s) (at most 38) for decimal(p, s). Spark sums numbers only."""
    if pa.types.is_integer(value_type):
        return exp.DataType.build("BIGINT")
    if pa.types.is_floating(value_type):
        return exp.DataType.build("DOUBLE")
    if pa.types.is_decimal(value_type):
        return exp.DataType.build(f"DECIMAL({min(38, value_type.precision + 10)}, {value_type.scale})")
    raise MLSQLError(f"DataTranspose: aggCol {name!r} is not a numeric column ({spark_types.simple_string(value_type)}); "
                     "pivot sums it, and sums only numbers")


def _unpivot(session, call: Call, table: exp.Table, names: list[str]) -> pa.Table:
    """Spark's ``stack``: per row, one row per unPivotCols column: the index columns, the column's
    name in mergedCol, its value in aggCol (nulls kept)."""
    index = call.columns("indexCols", names, "DataTranspose")
    spread = call.columns("unPivotCols", names, "DataTranspose")
    merged, value = call.required("mergedCol", "DataTranspose"), call.required("aggCol", "DataTranspose")
    keep = [sql_build.column(c) for c in index]
    parts = [exp.select(*keep, sql_build.column(c).as_(value, quoted=True), "seen", exp.Literal.number(k).as_("k"))
             .from_("numbered") for k, c in enumerate(spread)]
    labels = exp.values([(exp.Literal.number(k), exp.Placeholder()) for k in range(len(spread))],
                        alias="labels", columns=["k", "label"])
    query = (exp.select(*(sql_build.column(c, "u") for c in index), exp.column("label", "labels").as_(merged, quoted=True),
                        sql_build.column(value, "u"))
             .from_(exp.union(*parts, distinct=False).subquery("u"))
             .join(labels, on="u.k = labels.k")
             .order_by("u.seen", "u.k")
             .with_("numbered", as_=sql_build.shaped("SELECT *, row_number() OVER () AS seen FROM $table", table=table)))
    return session.con.sql(query.sql("duckdb"), params=spread).to_arrow_table()


_METHODS = {"pivot": _pivot, "unpivot": _unpivot}


def _transpose(session, call: Call) -> pa.Table:
    method = call.required("method", "DataTranspose").lower()
    if method not in _METHODS:
        raise MLSQLError(f"DataTranspose: method must be pivot or unpivot, not {method!r}")
    table = input_name(session, call)
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
