"""``spark_partition_id()``: the partition a row belongs to, as mlsql-ray partitions tables.

A table whose source read it in parts (a partitioned jdbc load) or that TableRepartition cut has
those parts (``Catalog.partitions``), numbered from 0 in order: the data servers a Python cell gets.
Any other table is read whole: one partition, 0 (a Python cell still splits such a table over the
cluster's CPUs, ``num_partitions``, when it runs). The function names no table, so the query is
rewritten: in each SELECT that calls it, the table of its FROM is read with a partition column
added, the call reads that column and ``*`` leaves it out. A SELECT whose FROM is no named table
(a subquery, a table function) reads one partition: 0.
"""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import sqlglot
from sqlglot import exp

from ..errors import MLSQLError
from ..spark import sql_build

FUNCTION = "spark_partition_id"
COLUMN = "__spark_partition_id"
_serial = itertools.count(1)


def called(spark_sql: str) -> bool:
    """Whether the query may call ``spark_partition_id()`` (cheap: the text names it)."""
    return FUNCTION in spark_sql.lower()


def rewrite(session, sql: str) -> tuple[str, list[str]]:
    """DuckDB ``sql`` with every ``spark_partition_id()`` answered, and the names of the tables
    registered for it (the caller unregisters them once the statement is done)."""
    tree = sqlglot.parse_one(sql, read="duckdb")
    helpers: list[str] = []
    sources: dict[int, exp.Expression] = {}  # id(select) -> the column its calls read
    for call in [c for c in tree.find_all(exp.Anonymous) if c.name.lower() == FUNCTION]:
        if call.expressions:
            raise MLSQLError(f"{FUNCTION}() takes no arguments")
        select = call.find_ancestor(exp.Select)
        if id(select) not in sources:
            sources[id(select)] = _partitioned_source(session, select, helpers)
        call.replace(sources[id(select)].copy())
    return tree.sql(dialect="duckdb"), helpers


def _partitioned_source(session, select: exp.Select | None, helpers: list[str]) -> exp.Expression:
    """Read the FROM table of ``select`` with the partition column; the expression a call becomes."""
    source = select.args.get("from_").this if select is not None and select.args.get("from_") else None
    if not isinstance(source, exp.Table) or source.args.get("db") or source.name not in session.catalog:
        return exp.cast(exp.Literal.number(0), exp.DataType.build("INT"))
    name = source.name
    alias = source.alias_or_name
    parts = session.catalog.partitions(name)
    if parts:
        helper = f"__mlsql_partitioned_{next(_serial)}_{name}"
        ids = np.repeat(np.arange(len(parts), dtype=np.int32), parts)
        session.con.register(helper, session.catalog.arrow(name).append_column(COLUMN, pa.array(ids)))
        helpers.append(helper)
        inner = sql_build.select_all(helper)
    else:
        inner = exp.select(exp.Star(), exp.cast(exp.Literal.number(0), exp.DataType.build("INT")).as_(COLUMN, quoted=True)
                           ).from_(sql_build.table(name))
    source.replace(exp.Subquery(this=inner,
                                alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True))))
    for star in select.expressions:
        target = star.this if isinstance(star, exp.Column) and star.table.lower() == alias.lower() else star
        if isinstance(target, exp.Star):
            target.set("except_", [*(target.args.get("except_") or []), exp.column(COLUMN, quoted=True)])
    return exp.column(COLUMN, table=exp.to_identifier(alias, quoted=True), quoted=True)
