"""ETs that hold or shape whole tables: ``TableRepartition``, ``CacheExt``, ``EmptyTable`` and
``EmptyTableWithSchema`` (``extension/et/TableRepartition.md``, ``extension/et/CacheExt.md``)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...cells.schema import parse_schema
from ...errors import MLSQLError
from ...options import Param
from ...ml.ets.base import ET, Call, Partitioned, input_table
from .base import PARENT_CHILD_DATA, column_sql

_PARTITION_TYPES = ("hash", "range")



def _repartition(session, call: Call) -> Partitioned:
    """T's rows in ``partitionNum`` partitions, recorded with the table: Python cells get one data
    server per partition and ``spark_partition_id()`` numbers them. Without ``partitionCols`` the
    rows are dealt out evenly in their order (the first ``rows % N`` partitions one row more);
    ``hash`` with columns puts the rows of one key in one partition (DuckDB's ``hash(cols) % N``,
    as Spark's HashPartitioner does with its own hash); ``range`` sorts by ``partitionCols`` and
    cuts the sorted rows evenly, so each partition holds one range of their values (equal values
    at a cut may fall on both sides, which Spark's RangePartitioner avoids)."""
    call.required("partitionNum", "TableRepartition")
    number = call.integer("partitionNum", 1, minimum=1)
    kind = call.option("partitionType", "hash").strip().lower()
    if kind not in _PARTITION_TYPES:
        raise MLSQLError(f"partitionType must be hash or range, not {kind!r}")
    table = input_table(session, call)
    columns = call.columns("partitionCols", table.column_names, "TableRepartition", required=kind == "range")
    if columns and not call.flag("shuffle", True):
        raise MLSQLError("TableRepartition: partitionCols cannot be given with shuffle=\"false\"")
    if kind == "range":
        table = table.sort_by([(c, "ascending") for c in columns])
    elif columns:
        return _hash_partitioned(session, table, columns, number)
    base, extra = divmod(table.num_rows, number)
    return Partitioned(table, tuple(base + (index < extra) for index in range(number)))


def _hash_partitioned(session, table: pa.Table, columns: list[str], number: int) -> Partitioned:
    """The rows grouped by ``hash(columns) % number``, partition 0 first, each keeping its rows' order."""
    key = ", ".join(column_sql(c) for c in columns)
    part = session.con.from_arrow(table).project(f"hash({key}) % {number} AS part").to_arrow_table()
    part = part.column("part").to_numpy().astype(np.int64)
    order = np.argsort(part, kind="stable")
    counts = np.bincount(part, minlength=number)
    return Partitioned(table.take(order), tuple(int(c) for c in counts))


_LIFETIMES = {"script": "script", "session": "session", "application": "session"}


def _cache(session, call: Call) -> None:
    """``!cache``/``!unCache`` as an ET. ``application``: a session is the whole engine here, so it
    lasts as long as ``session``. ``isEager`` is accepted: caching here always reads at once."""
    action = call.option("execute", "cache").strip().lower()
    if action == "uncache":
        session.catalog.uncache(call.table)
        return
    if action != "cache":
        raise MLSQLError(f"CacheExt: execute must be cache or uncache, not {action!r}")
    lifetime = call.option("lifeTime", "script").strip().lower()
    if lifetime not in _LIFETIMES:
        raise MLSQLError(f"CacheExt: lifeTime must be script, session or application, not {lifetime!r}")
    call.flag("isEager", False)
    session.catalog.cache(call.table, _LIFETIMES[lifetime])


def _empty(session, call: Call) -> pa.Table:
    return pa.table({})


def _empty_with_schema(session, call: Call) -> pa.Table:
    """Schema as for a cell's ``--%schema``: ``st(field(a,string))``, Spark DDL, Spark's JSON, ``file``."""
    return parse_schema(call.required("schema", "EmptyTableWithSchema")).empty_table()


ETS = (
    ET("TableRepartition", "T's rows in partitionNum partitions (Python cells' data servers, spark_partition_id())",
       _repartition, (
        Param("partitionNum", "", "how many partitions (required)"),
        Param("partitionType", "hash", "hash or range"),
        Param("partitionCols", "", "columns to partition by; required for range"),
        Param("shuffle", "true", "false: no partitionCols allowed"),
    ), example=PARENT_CHILD_DATA + """
run data as TableRepartition.`` where partitionNum="3" and partitionType="range" and partitionCols="id" as simpleData;
!profiler sql '''select spark_partition_id() as partition, min(id) as min_id, max(id) as max_id, count(id) as count
from simpleData group by partition order by partition''';
"""),
    ET("CacheExt", "keep T in memory for the script or the session (as !cache / !unCache)", _cache, (
        Param("execute", "cache", "cache or uncache"),
        Param("lifeTime", "script", "script, session or application"),
        Param("isEager", "false", "accepted; the rows are always read at once"),
    ), example="""select 1 as a as table1;
run table1 as CacheExt.`` where execute="cache" and lifeTime="session";
run table1 as CacheExt.`` where execute="uncache";
"""),
    ET("EmptyTable", "a table without columns or rows", _empty, example="run command as EmptyTable.`` as e;\n"),
    ET("EmptyTableWithSchema", "an empty table with the given schema", _empty_with_schema, (
        Param("schema", "", "st(field(a,string),...), Spark DDL, Spark's JSON schema or file (required)"),
    ), example='run command as EmptyTableWithSchema.`` where schema="st(field(a,string),field(b,long))" as s;\n'),
)
