"""Spark SQL → DuckDB SQL with sqlglot (the rewrites of every family in ``families.py``), and the
mapping of sqlglot's errors onto the script.

Pure (sqlglot only, no I/O): the parser translates every select whose SQL is fully known while it
parses the script (``lang.script_sql``, which renders Velocity directives first), so a SQL syntax
error stops the script before anything runs; the engine asks again when the statement runs and gets
the cached translation. SQL is only ever rewritten as sqlglot trees, never by string surgery.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from sqlglot import exp
from sqlglot.errors import ErrorLevel, ParseError, TokenError, UnsupportedError

from . import casts as spark_casts, families, functions as spark_functions, macro_expansion, sql_types
from ..errors import MLSQLError, first_line
from .sql_types import Schemas


class Translation(NamedTuple):
    sql: str  # DuckDB SQL
    tables: tuple[str, ...]  # names of the tables it reads
    calls: tuple[tuple[str, str], ...]  # calls of functions sqlglot does not know, as (name, first argument)
    bound_types: bool  # whether a result's Spark type is only known once DuckDB binds the SQL (results.spark_result)
    is_query: bool  # a SELECT, a set operation or VALUES (not a command such as COPY ... TO)
    #: whether some rewrite asked a type it could not know here (``complete`` of ``sql_types.typing_of``): only
    #: then may the tables' schemas change the translation
    wants_schemas: bool = True


_TOO_DEEP = ("SQL nested too deeply to translate (sqlglot ran out of Python stack: some hundreds of levels of "
             "parentheses or subqueries)")


def translate(spark_sql: str, line: int = 1, col: int = 1, schemas: Schemas | None = None,
              query: bool = False) -> Translation:
    """Translate one Spark SQL statement (see ``Translation``; the unknown functions it calls
    include model functions).

    ``line``/``col``: where the SQL starts in the script, so an error points into the script,
    not into the query. ``schemas``: the columns and types of the tables it reads, from the
    catalog, so that the rewrites know Spark's type of each expression (``sql_types``); without
    them (the parser's check before anything runs) a rewrite that needs a type it cannot know
    writes SQL that decides when DuckDB binds it. ``query``: refuse any statement but a query (a
    SELECT, a set operation, VALUES): DuckDB would run a COPY ... TO, an ATTACH or an INSTALL as a
    command."""
    try:
        translation = _translate(spark_sql, schemas)
        if query and not translation.is_query:
            verb = spark_sql.split(maxsplit=1)[0].upper()
            raise MLSQLError(f"expected a query (SELECT ...), not {verb}: anything but a query would run as a command")
        return translation
    except MLSQLError as exc:
        raise placed(exc, line, col) from exc.__cause__


def placed(exc: MLSQLError, line: int, col: int) -> MLSQLError:
    """An error positioned within SQL text that starts at ``line``/``col`` of the script, moved to the script."""
    where_line = line + (exc.line or 1) - 1
    where_col = (exc.column or 1) + (col - 1 if (exc.line or 1) == 1 else 0)
    return MLSQLError(exc.message, where_line, where_col)


@lru_cache(maxsize=1024)
def _translate(spark_sql: str, schemas: Schemas | None) -> Translation:
    """``translate`` with errors positioned in ``spark_sql`` itself. Cached by the text and the
    schemas: notebooks re-run the same cells, and translating costs about as much as running a
    small query."""
    try:
        trees = spark_functions.parse(spark_sql)
    except ParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        raise MLSQLError(f"SQL syntax error{_near(first)}: {parse_error_description(first, exc)}",
                         first.get("line") or 1, first.get("col") or 1) from exc
    except TokenError as exc:  # an unclosed quote or comment inside the SQL, e.g. x'zz' or "abc
        raise MLSQLError(f"SQL syntax error: {first_line(exc)}") from exc
    except RecursionError as exc:
        raise MLSQLError(_TOO_DEEP) from exc
    except Exception as exc:  # noqa: BLE001 - sqlglot trips over some odd input, e.g. IndexError on `map(0)`
        raise MLSQLError(f"cannot translate this SQL (sqlglot failed on it: {type(exc).__name__}: {exc})") from exc
    trees = [t for t in trees if t is not None]
    if len(trees) != 1:
        raise MLSQLError(f"expected one SQL query, found {len(trees)}")
    return translate_tree(trees[0], schemas, spark_sql)


def translate_tree(tree: exp.Expression, schemas: Schemas | None, spark_sql: str) -> Translation:
    """``translate`` of a tree parsed from (or cut out of the tree of) ``spark_sql``, whose text its
    literals' positions point into; the tree is rewritten in place."""
    try:
        with sql_types.typing_of(tree, schemas, spark_sql) as typing:
            for transform in families.TRANSFORMS:
                transform(tree)
        tables = tuple(sorted({t.name for t in tree.find_all(exp.Table) if t.name}))
        calls = tuple((f.name, f.expressions[0].sql("spark")) for f in tree.find_all(exp.Anonymous) if f.expressions)
        # copy=False: the tree is not needed after this, and copying it costs as much as the rewrites
        bound_types = spark_casts.sums_left_untyped(tree)
        is_query = isinstance(tree, (exp.Query, exp.Values))
        macro_expansion.compute_arguments_once(tree)
        return Translation(tree.sql(dialect="duckdb", unsupported_level=ErrorLevel.RAISE, copy=False), tables, calls,
                           bound_types, is_query, wants_schemas=not typing.complete)
    except MLSQLError:  # a rewrite's own verdict on the query (a cast Spark refuses, an illegal datetime pattern)
        raise
    except UnsupportedError as exc:
        raise MLSQLError(f"this SQL cannot run on DuckDB: {exc}") from exc
    except RecursionError as exc:
        raise MLSQLError(_TOO_DEEP) from exc
    except Exception as exc:  # noqa: BLE001 - as above
        raise MLSQLError(f"cannot translate this SQL (sqlglot failed on it: {type(exc).__name__}: {exc})") from exc


_SQLGLOT_CLASS = re.compile(r"<class 'sqlglot\.[\w.]*?(\w+)'>")


def parse_error_description(error: dict, exc: ParseError) -> str:
    """sqlglot's description without its Python class names (``<class '...EQ'>`` → ``EQ``)."""
    text = error.get("description") or first_line(exc)
    return _SQLGLOT_CLASS.sub(r"\1", text)


def _near(error: dict) -> str:
    token = (error.get("highlight") or "").strip()
    return f" near '{token}'" if token and "\n" not in token and len(token) <= 40 else ""
