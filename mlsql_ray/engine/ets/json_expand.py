"""``JsonExpandExt`` (``extension/et/JsonExpandExt.md``): a JSON text column as one column per key."""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from ...errors import MLSQLError
from ...spark import sql_build
from ...options import Param
from ...ml.ets.base import ET, Call
from .base import input_name


def _expand(session, call: Call) -> pa.Table:
    """As Byzer does it with Spark's ``json_tuple``: T's other columns, then one string column per
    key found, sorted by name as Spark's schema inference sorts them; a nested object stays JSON
    text (run the ET again on it), a missing key is null. The keys are read from every row
    (``samplingRatio`` only made Spark's inference cheaper; reading all rows finds the same keys
    or more). A row whose text is blank or JSON's ``null`` has no keys (Spark's inference reads
    it as no record, and ``json_tuple`` gives it nulls): null in every key's column."""
    column = call.required("inputCol", "JsonExpandExt")
    table = input_name(session, call)
    names = session.catalog.schema(call.table).names
    if column not in names:
        raise MLSQLError(f"JsonExpandExt: {call.table} has no column {column!r} (columns: {', '.join(names)})")
    source = sql_build.shaped("CASE WHEN trim($v) <> '' THEN $v END", v=sql_build.column(column))
    bad = session.con.sql(sql_build.shaped(
        "SELECT count(*) FROM $table WHERE $v IS NOT NULL AND "
        "CASE WHEN json_valid($v) THEN json_type($v::JSON) NOT IN ('OBJECT', 'NULL') ELSE true END",
        table=table, v=source).sql("duckdb")).fetchall()[0][0]
    if bad:
        raise MLSQLError(f"Corrupted JSON in column {column}: {bad} rows are not JSON objects")
    keys = [row[0] for row in session.con.sql(sql_build.shaped(
        "SELECT DISTINCT unnest(json_keys($v)) AS k FROM $table WHERE $v IS NOT NULL ORDER BY k",
        table=table, v=source).sql("duckdb")).fetchall()]
    if not keys:  # Spark's json_tuple of no keys is an error too
        raise MLSQLError(f"JsonExpandExt: column {column} of {call.table} holds no JSON object with a key to expand")
    kept = [sql_build.column(n) for n in names if n != column and n not in keys]
    expanded = [exp.Anonymous(this="json_extract_string", expressions=[source.copy(), exp.Placeholder()]).as_(k, quoted=True)
                for k in keys]
    paths = ["$." + '"' + k.replace('"', '\\"') + '"' for k in keys]  # the key as one JSON path step, whatever it holds
    return session.con.sql(exp.select(*kept, *expanded).from_(table).sql("duckdb"), params=paths).to_arrow_table()


ETS = (
    ET("JsonExpandExt", "a JSON column expanded into one string column per key", _expand, (
        Param("inputCol", "", "the column holding JSON objects as text (required)"),
        Param("samplingRatio", "1.0", "accepted; the keys are read from every row"),
    ), example="""SELECT '{"name":"Michael"}' AS col_1
UNION ALL
SELECT '{"name":"Andy", "age":30}' AS col_1 AS table_1;

run table_1 as JsonExpandExt.`` where inputCol="col_1" AND samplingRatio = "1.0" as table_2;
"""),
)
