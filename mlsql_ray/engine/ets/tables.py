"""ETs that hold or shape whole tables: ``TableRepartition``, ``CacheExt``, ``EmptyTable`` and
``EmptyTableWithSchema`` (``extension/et/TableRepartition.md``, ``extension/et/CacheExt.md``)."""

from __future__ import annotations

import math

import pyarrow as pa

from ...cells.schema import parse_schema
from ...errors import MLSQLError
from ..datasources.base import Param
from .base import ET, Call, input_table

_PARTITION_TYPES = ("hash", "range")


def _repartition(session, call: Call) -> pa.Table:
    """T's rows in ``partitionNum`` Arrow chunks, which is what a partition is here: Python cells
    hand each chunk to a worker. ``partitionType="range"`` sorts by ``partitionCols`` first, so each
    chunk holds one range of their values, as Spark's RangePartitioner does; ``hash`` keeps rows
    where they are (DuckDB needs no hash placement to parallelise)."""
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
    size = max(1, math.ceil(table.num_rows / number))
    batches = table.combine_chunks().to_batches(max_chunksize=size)
    return pa.Table.from_batches(batches, schema=table.schema)


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
    ET("TableRepartition", "T's rows in partitionNum partitions (Arrow chunks)", _repartition, (
        Param("partitionNum", "", "how many partitions (required)"),
        Param("partitionType", "hash", "hash or range"),
        Param("partitionCols", "", "columns to partition by; required for range"),
        Param("shuffle", "true", "false: no partitionCols allowed"),
    )),
    ET("CacheExt", "keep T in memory for the script or the session (as !cache / !unCache)", _cache, (
        Param("execute", "cache", "cache or uncache"),
        Param("lifeTime", "script", "script, session or application"),
        Param("isEager", "false", "accepted; the rows are always read at once"),
    )),
    ET("EmptyTable", "a table without columns or rows", _empty),
    ET("EmptyTableWithSchema", "an empty table with the given schema", _empty_with_schema, (
        Param("schema", "", "st(field(a,string),...), Spark DDL, Spark's JSON schema or file (required)"),
    )),
)
