"""``SyntaxAnalyzeExt`` (``extension/et/SyntaxAnalyzeExt.md``): what a Spark SQL statement reads,
found by sqlglot's parser — the statement is never run."""

from __future__ import annotations

import pyarrow as pa
import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from ...errors import MLSQLError, first_line
from ...options import Param
from ...ml.ets.base import ET, Call


def _parse(text: str) -> exp.Expression:
    text = text.strip().removesuffix(";").strip()
    try:
        tree = sqlglot.parse_one(text, read="spark")
    except (ParseError, TokenError) as exc:
        raise MLSQLError(f"SyntaxAnalyzeExt: the sql option is not valid Spark SQL: {first_line(exc)}") from exc
    return tree


def _source_tables(tree: exp.Expression) -> list[exp.Table]:
    """Tables the statement reads, in the order written: named tables, not CTEs or aliases."""
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    return [t for t in tree.find_all(exp.Table, bfs=False) if t.name and t.name.lower() not in ctes]


def _table_name(table: exp.Table) -> str:
    return ".".join(part for part in (table.catalog, table.db, table.name) if part)


def _extract_tables(tree: exp.Expression) -> pa.Table:
    names = list(dict.fromkeys(_table_name(t) for t in _source_tables(tree)))
    return pa.table({"tableName": pa.array(names, pa.string())})


def _extract_columns(tree: exp.Expression) -> pa.Table:
    """(tableName, columnName) per column the statement names. A column's table is found in the
    SELECT it appears in: through its qualifier (an alias resolves to its table), or, unqualified,
    the only table that SELECT reads; empty where the text alone cannot tell (a CTE, a subquery,
    several tables)."""
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    rows = []
    for column in tree.find_all(exp.Column, bfs=False):
        if isinstance(column.this, exp.Star):
            continue
        scope = column.find_ancestor(exp.Select)
        tables = [t for t in (scope.find_all(exp.Table) if scope else ()) if t.find_ancestor(exp.Select) is scope]
        named = {t.alias_or_name.lower(): "" if t.name.lower() in ctes else _table_name(t) for t in tables}
        if column.table:
            table = named.get(column.table.lower(), "")
        else:
            table = next(iter(named.values())) if len(named) == 1 else ""
        rows.append((table, column.name))
    rows = list(dict.fromkeys(rows))
    return pa.table({"tableName": pa.array([r[0] for r in rows], pa.string()),
                     "columnName": pa.array([r[1] for r in rows], pa.string())})


_ACTIONS = {"extracttables": _extract_tables, "extractcolumns": _extract_columns}


def _analyze(session, call: Call) -> pa.Table:
    action = call.option("action", "extractTables").strip()
    handler = _ACTIONS.get(action.lower())
    if handler is None:
        raise MLSQLError(f"SyntaxAnalyzeExt: unknown action {action!r} (known: extractTables, extractColumns)")
    return handler(_parse(call.required("sql", "SyntaxAnalyzeExt")))


ETS = (
    ET("SyntaxAnalyzeExt", "the tables (or columns) a Spark SQL statement reads, without running it", _analyze, (
        Param("action", "extractTables", "extractTables (column tableName) or extractColumns (tableName, columnName)"),
        Param("sql", "", "the Spark SQL statement to analyse (required)"),
    ), example="""run command as SyntaxAnalyzeExt.`` where action="extractTables" and sql='''
select * from (select * from table1 as c) as d left join table2 as e on d.id=e.id
''' as extractedTables;
"""),
)
