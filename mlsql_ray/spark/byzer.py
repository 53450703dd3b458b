"""DuckDB's side of Spark SQL fidelity (the tree rewrites are ``lang.spark_functions``):

- ``MACROS``: DuckDB macros defined on a connection when its queries call them, for Spark semantics too long
  to inline and for Byzer's own built-in UDFs (byzer-doc transform/udf/built_in_udf/udf_funcs.md;
  their definitions are Byzer's ``streaming.udf.Functions``), named ``spark_*`` / ``byzer_*`` so
  they never shadow a DuckDB function.
- ``spark_result`` fixes what only the bound result shows: DuckDB sums integers into HUGEINT,
  a type Spark does not have (Spark's ``sum`` of int/bigint is bigint).
"""

from __future__ import annotations

import duckdb
from sqlglot import exp

from . import arrays_maps as spark_collections, casts as spark_casts, datetimes as spark_datetime
from . import formats as spark_format, hashes as spark_hashes, maths as spark_math, regexes as spark_regex
from . import sql_build, strings as spark_strings

MACROS: dict[str, str] = {
    **spark_casts.MACROS,
    # Byzer (Functions.scala): vec1.intersect(vec2), which for distinct elements is Spark's
    # array_intersect: the elements of the first array found in the second, in the first's order,
    # without duplicates. DuckDB's list_intersect has no defined order.
    "byzer_array_intersect": "(a, b) AS list_filter(a, lambda x, i: list_position(b, x) IS NOT NULL AND list_position(a, x) = i)",
    # vec1.indexOf(word): 0-based, -1 when absent
    "byzer_array_index": "(a, e) AS CAST(coalesce(list_position(a, e), 0) - 1 AS INTEGER)",
    # vec1.slice(from, if (to == -1) length else to): 0-based, `to` exclusive, bounds clamped
    "byzer_array_slice": """(a, f, t) AS CASE WHEN t = -1 THEN list_slice(a, greatest(f, 0) + 1, len(a))
                                              ELSE list_slice(a, greatest(f, 0) + 1, greatest(t, 0)) END""",
    # a.flatMap(f => f)
    "byzer_array_concat": "(a) AS flatten(a)",
    # a.flatMap(f => f).map(_.doubleValue())
    "byzer_array_number_concat": "(a) AS list_transform(flatten(a), lambda x: CAST(x AS DOUBLE))",
    # a.map(_.toString)
    "byzer_array_number_to_string": "(a) AS list_transform(a, lambda x: CAST(x AS VARCHAR))",
    "byzer_array_string_to_double": "(a) AS list_transform(a, lambda x: CAST(x AS DOUBLE))",
    "byzer_array_string_to_float": "(a) AS list_transform(a, lambda x: CAST(x AS FLOAT))",
    "byzer_array_string_to_int": "(a) AS list_transform(a, lambda x: CAST(x AS INTEGER))",
    # words.iterator.sliding(n).withPartial(false).map(_.mkString(" ")): no window shorter than n
    "byzer_ngram": "(w, n) AS list_transform(range(1, len(w) - n + 2), lambda i: array_to_string(list_slice(w, i, i + n - 1), ' '))",
    # Byzer's uuid(): a random UUID without its dashes (udf_funcs.md)
    "byzer_uuid": "() AS replace(CAST(uuid() AS VARCHAR), '-', '')",
    **spark_datetime.MACROS,
    **spark_collections.MACROS,
    **spark_regex.MACROS, **spark_strings.MACROS, **spark_math.MACROS, **spark_hashes.MACROS, **spark_format.MACROS,
}
"""Many, and some costly to define (DuckDB binds a typed macro's body when it is created): a connection
defines those a query calls when it first prepares one (``connection.define_macros``), each after
the macros it calls (this order)."""


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
