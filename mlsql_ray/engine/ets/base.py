"""What the engine's ETs share besides ``ml.ets.base`` (what an ET is): their input as SQL, the
names Spark gives Arrow's types, and the example rows of Byzer's pages."""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from ...spark import sql_build
from ...spark.type_names import type_name as spark_type_name
from ...ml.ets.base import Call
from ..catalog import quoted


#: the id/parentId rows of Byzer's TableRepartition and TreeBuildExt pages
PARENT_CHILD_DATA = """set jsonStr = '''
{"id":0,"parentId":null}
{"id":1,"parentId":null}
{"id":2,"parentId":1}
{"id":3,"parentId":3}
{"id":7,"parentId":0}
{"id":199,"parentId":1}
{"id":200,"parentId":199}
{"id":201,"parentId":199}
''';
load jsonStr.`jsonStr` as data;
"""

#: the people rows of Byzer's EDA pages (ml/eda/), for the examples
PEOPLE_DATA = """set abc='''
{"name": "elena", "age": 57, "phone": 15552231521, "income": 433000, "label": 0}
{"name": "candy", "age": 67, "phone": 15552231521, "income": 1200, "label": 0}
{"name": "bob", "age": 57, "phone": 15252211521, "income": 89000, "label": 0}
{"name": "candy", "age": 25, "phone": 15552211522, "income": 36000, "label": 1}
{"name": "candy", "age": 31, "phone": 15552211521, "income": 300000, "label": 1}
{"name": "finn", "age": 23, "phone": 15552211521, "income": 238000, "label": 1}
''';
load jsonStr.`abc` as table1;
"""


def column_sql(name: str) -> str:
    """A column name as DuckDB SQL (quoted)."""
    return quoted(name)


NUMERIC_SPARK_TYPES = ("short", "integer", "long", "float", "double")


def is_numeric(arrow_type: pa.DataType) -> bool:
    """Numeric as Byzer's EDA ETs count it: short, int, long, float, double and decimal (not byte)."""
    name = spark_type_name(arrow_type)
    return name in NUMERIC_SPARK_TYPES or name.startswith("decimal")


def input_name(session, call: Call) -> exp.Table:
    """The ET's input table T as a name in a DuckDB query (``spark.sql_build``)."""
    session.catalog.relation(call.table)  # fails with the known names if T is not defined
    return sql_build.table(call.table)
