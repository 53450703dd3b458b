"""Spark SQL → DuckDB SQL with sqlglot, and the mapping of both tools' errors onto the statement.

SQL is only ever rewritten as sqlglot trees, never by string surgery.
"""

from __future__ import annotations

import re
from functools import lru_cache

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel, ParseError, TokenError, UnsupportedError

from ..errors import MLSQLError
from . import spark_functions, templates


@lru_cache(maxsize=512)
def translate(spark_sql: str, line: int = 1, col: int = 1) -> tuple[str, tuple[str, ...], tuple[tuple[str, str], ...]]:
    """Translate one Spark SQL query: (DuckDB SQL, names of the tables it reads, calls of
    functions sqlglot does not know, as (name, first argument) — model functions among them).

    ``line``/``col``: where the SQL starts in the script, so a parse error points into the
    script, not into the query. Cached: notebooks re-run the same cells, and translation costs
    about as much as a small query. Velocity directives (``#set``, ``#foreach``, ``#if``) are
    rendered first, as Byzer renders every statement (see ``templates``)."""
    if templates.has_template(spark_sql):
        try:
            spark_sql = templates.render(spark_sql)
        except MLSQLError as exc:
            raise exc.at(line, col) from None
    try:
        trees = sqlglot.parse(spark_sql, read="spark")
    except ParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        err_line, err_col = first.get("line") or 1, first.get("col") or 1
        where_line = line + err_line - 1
        where_col = err_col + (col - 1 if err_line == 1 else 0)
        raise MLSQLError(f"SQL syntax error{_near(first)}: {_description(first, exc)}", where_line, where_col) from exc
    except TokenError as exc:  # an unclosed quote or comment inside the SQL, e.g. x'zz' or "abc
        raise MLSQLError(f"SQL syntax error: {str(exc).splitlines()[0]}", line, col) from exc
    except RecursionError as exc:
        raise MLSQLError("SQL nested too deeply to translate (sqlglot ran out of Python stack: some hundreds of levels of parentheses or subqueries)",
                         line, col) from exc
    except Exception as exc:  # noqa: BLE001 - sqlglot trips over some odd input, e.g. IndexError on `map(0)`
        raise MLSQLError(f"cannot translate this SQL (sqlglot failed on it: {type(exc).__name__}: {exc})", line, col) from exc
    trees = [t for t in trees if t is not None]
    if len(trees) != 1:
        raise MLSQLError(f"expected one SQL query, found {len(trees)}", line, col)
    try:
        _spark_range(trees[0])
        for transform in spark_functions.TRANSFORMS:
            transform(trees[0])
        tables = tuple(sorted({t.name for t in trees[0].find_all(exp.Table) if t.name}))
        calls = tuple((f.name, f.expressions[0].sql("spark")) for f in trees[0].find_all(exp.Anonymous) if f.expressions)
        return trees[0].sql(dialect="duckdb", unsupported_level=ErrorLevel.RAISE), tables, calls
    except UnsupportedError as exc:
        raise MLSQLError(f"this SQL cannot run on DuckDB: {exc}", line, col) from exc
    except RecursionError as exc:
        raise MLSQLError("SQL nested too deeply to translate (sqlglot ran out of Python stack: some hundreds of levels of parentheses or subqueries)",
                         line, col) from exc
    except Exception as exc:  # noqa: BLE001 - as above
        raise MLSQLError(f"cannot translate this SQL (sqlglot failed on it: {type(exc).__name__}: {exc})", line, col) from exc


def _spark_range(tree: exp.Expression) -> None:
    """Spark's ``range(...)`` table has one column ``id``; DuckDB's has ``range``. Read from
    ``(SELECT range AS id FROM range(...))`` instead (Spark's 4th argument, the number of
    partitions, means nothing here)."""
    for table in list(tree.find_all(exp.Table)):
        call = table.this
        if isinstance(call, exp.Anonymous) and call.name.lower() == "range":
            rows = exp.Table(this=exp.Anonymous(this="range", expressions=call.expressions[:3]))
            select = exp.select(exp.alias_(exp.column("range"), "id")).from_(rows)
            table.replace(exp.Subquery(this=select, alias=table.args.get("alias")))


_SQLGLOT_CLASS = re.compile(r"<class 'sqlglot\.[\w.]*?(\w+)'>")


def _description(error: dict, exc: ParseError) -> str:
    """sqlglot's description without its Python class names (``<class '...EQ'>`` → ``EQ``)."""
    text = error.get("description") or str(exc).splitlines()[0]
    return _SQLGLOT_CLASS.sub(r"\1", text)


def _near(error: dict) -> str:
    token = (error.get("highlight") or "").strip()
    return f" near '{token}'" if token and "\n" not in token and len(token) <= 40 else ""


def to_duckdb(spark_sql: str, line: int = 1, col: int = 1) -> str:
    return translate(spark_sql, line, col)[0]


_DUCK_LINE = re.compile(r"LINE (\d+):")


def duckdb_message(exc: Exception, tables: list[str]) -> str:
    """DuckDB's message, first line only, with a hint when a table name is unknown."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    missing = re.search(r"Table with name (\S+) does not exist", first)
    if missing:
        known = ", ".join(sorted(tables)) or "none yet"
        return f"table {missing.group(1)} is not defined (load it or select ... as it first; defined: {known})"
    first = re.sub(r"^[\w ]+ Error: ", "", first)
    # an exception raised inside a Python function (a model function) speaks for itself
    return re.sub(r"^Python exception occurred while executing the UDF: \w+: ", "", first)
