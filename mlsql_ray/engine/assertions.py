"""``!assert`` and the data-quality family of Byzer's mlsql-assert plugin.

``!assert T '''EXPR''' "message";`` stops the script with ``message`` unless EXPR (Spark SQL,
``:col`` naming a column) holds for every row of T; ``!assert NAME in __set__ "message";`` unless
the variable is set; ``!assert __set__ '''EXPR''' "message";`` evaluates over the variables.

The family returns the offending rows (``!assertNotNull``, ``!assertUniqueKeys``,
``!assertCondition``) or columns (``!assertUniqueKey``); each ``…Throw`` form stops the script
instead, with Byzer's messages (``Assert Failed: 'T' dirty count: N``, ``Assert Failed: conflict
key: …``). Queries are built as sqlglot trees and run through the engine's Spark translation.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
from sqlglot import exp

from ..errors import MLSQLError
from ..lang import ast
from . import expressions
from .result import PREVIEW_ROWS, Result

_VARIABLE_TABLES = ("__set__", "__session__")


def _assert(session, s: ast.Command) -> Result:
    args = list(s.args)
    if len(args) == 4 and args[1] == "in" and args[2] in _VARIABLE_TABLES:
        if args[0] not in session.variables:
            raise MLSQLError(args[3].strip())
        return Result(s, f"assert passed: {args[0]} is set")
    if len(args) < 3:
        raise MLSQLError("usage: !assert TABLE '''EXPRESSION''' \"message\"; or !assert NAME in __set__ \"message\";")
    table, text, message = args[0], " ".join(args[1:-1]), args[-1].strip()
    if table in _VARIABLE_TABLES:
        holds, _ = expressions.evaluate(session, text, session.variables, s.line, s.col)
        if not holds:
            raise MLSQLError(message)
        return Result(s, "assert passed")
    failing = expressions.failing_rows(session, table, text, s.line, s.col)
    if failing:
        raise MLSQLError(message)
    return Result(s, f"assert passed on every row of {table}")


def _table_and_columns(s: ast.Command) -> tuple[str, list[str]]:
    if len(s.args) != 2:
        raise MLSQLError(f"usage: !{s.name} TABLE 'column1,column2,...';")
    columns = [c.strip() for c in s.args[1].split(",") if c.strip()]
    if not columns:
        raise MLSQLError(f"!{s.name} needs at least one column name")
    return s.args[0], columns


def _table_and_condition(s: ast.Command) -> tuple[str, exp.Expression]:
    if len(s.args) != 2:
        raise MLSQLError(f"usage: !{s.name} TABLE 'EXPRESSION';")
    condition = expressions.parse(s.args[1])
    if condition.assignments:
        raise MLSQLError(f"!{s.name} takes one Spark SQL expression over the table's columns")
    return s.args[0], expressions.bind(condition.test, _column)  # `:col` reads as the column here too


def _table(name: str) -> exp.Table:
    return exp.table_(name, quoted=True)


def _column(name: str) -> exp.Column:
    return exp.column(name, quoted=True)


def _fails(condition: exp.Expression) -> exp.Expression:
    """Rows a filter on ``condition`` would drop: false or NULL (Byzer's ``exceptAll(filter)``)."""
    return exp.not_(exp.Coalesce(this=exp.paren(condition.copy()), expressions=[exp.false()]))


def _rows(session, s: ast.Command, query: exp.Query) -> pa.Table:
    return session.query(query.sql(dialect="spark"), s.line, s.col).to_arrow_table()


def _count(session, s: ast.Command, query: exp.Query) -> int:
    counted = exp.select(exp.Count(this=exp.Star())).from_(query.subquery("q"))
    ((count,),) = session.query(counted.sql(dialect="spark"), s.line, s.col).fetchall()
    return count


def _shown(s: ast.Command, table: pa.Table, what: str) -> Result:
    return Result(s, f"{table.num_rows} {what}", table=table.slice(0, PREVIEW_ROWS), num_rows=table.num_rows)


def _null_rows(s: ast.Command) -> tuple[str, exp.Query]:
    table, columns = _table_and_columns(s)
    any_null = exp.or_(*(_column(c).is_(exp.null()) for c in columns))
    return table, exp.select("*").from_(_table(table)).where(any_null)


def _assert_not_null(session, s: ast.Command) -> Result:
    _, query = _null_rows(s)
    return _shown(s, _rows(session, s, query), "rows with a NULL in the checked columns")


def _assert_not_null_throw(session, s: ast.Command) -> Result:
    table, query = _null_rows(s)
    if (dirty := _count(session, s, query)):
        raise MLSQLError(f"Assert Failed: '{table}' dirty count: {dirty}")
    return Result(s, f"assert passed: no NULL in {s.args[1]}")


def _conflicting_columns(session, s: ast.Command) -> list[str]:
    """Columns of the list that, each on its own, repeat a non-NULL value."""
    table, columns = _table_and_columns(s)
    counts = [e for c in columns for e in (exp.Count(this=_column(c)), exp.Count(this=exp.Distinct(expressions=[_column(c)])))]
    (row,) = session.query(exp.select(*counts).from_(_table(table)).sql(dialect="spark"), s.line, s.col).fetchall()
    return [c for i, c in enumerate(columns) if row[2 * i] != row[2 * i + 1]]


def _assert_unique_key(session, s: ast.Command) -> Result:
    conflicts = _conflicting_columns(session, s)
    return _shown(s, pa.table({"ConflictKey": pa.array(conflicts, pa.string())}), "columns with repeated values")


def _assert_unique_key_throw(session, s: ast.Command) -> Result:
    if (conflicts := _conflicting_columns(session, s)):
        raise MLSQLError(f"Assert Failed: conflict key: {','.join(conflicts)}")
    return Result(s, f"assert passed: every column of {s.args[1]} is unique")


def _assert_unique_keys(session, s: ast.Command) -> Result:
    table, columns = _table_and_columns(s)
    names = session.catalog.schema(table).names
    count = exp.Window(this=exp.Count(this=exp.Star()), partition_by=[_column(c) for c in columns])
    counted = exp.select("*", exp.alias_(count, "__mlsql_count")).from_(_table(table))
    query = exp.select(*(_column(n) for n in names)).from_(counted.subquery("a")).where(
        exp.GT(this=exp.column("__mlsql_count"), expression=exp.Literal.number(1)))
    return _shown(s, _rows(session, s, query), "rows whose key repeats")


def _assert_unique_keys_throw(session, s: ast.Command) -> Result:
    table, columns = _table_and_columns(s)
    keys = [_column(c) for c in columns]
    repeated = exp.select(*keys).from_(_table(table)).group_by(*keys).having(
        exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(1)))
    if _count(session, s, repeated):
        raise MLSQLError(f"Assert Failed: conflict key: {s.args[1]}")
    return Result(s, f"assert passed: ({s.args[1]}) is unique")


def _assert_condition(session, s: ast.Command) -> Result:
    table, condition = _table_and_condition(s)
    query = exp.select("*").from_(_table(table)).where(_fails(condition))
    return _shown(s, _rows(session, s, query), "rows failing the condition")


def _assert_condition_throw(session, s: ast.Command) -> Result:
    table, condition = _table_and_condition(s)
    query = exp.select("*").from_(_table(table)).where(_fails(condition))
    if (dirty := _count(session, s, query)):
        raise MLSQLError(f"Assert Failed: '{table}' dirty count: {dirty}")
    return Result(s, f"assert passed: {s.args[1].strip()} holds on every row")


#: by lower-cased name, as ``run_command`` looks them up
COMMANDS: dict[str, Callable] = {
    "assert": _assert,
    "assertnotnull": _assert_not_null,
    "assertnotnullthrow": _assert_not_null_throw,
    "assertuniquekey": _assert_unique_key,
    "assertuniquekeythrow": _assert_unique_key_throw,
    "assertuniquekeys": _assert_unique_keys,
    "assertuniquekeysthrow": _assert_unique_keys_throw,
    "assertcondition": _assert_condition,
    "assertconditionthrow": _assert_condition_throw,
}
