"""SQL the engine writes itself (an ET's queries, a view over a table), built as sqlglot trees, as
``translate`` builds the translated SQL: no name or value is pasted into SQL text. A statement's
fixed shape is written once as DuckDB SQL with named placeholders (``$table``, ``$v``) and parsed
once (``shaped``); each use fills the placeholders with quoted identifiers (``table``,
``column``) and expressions. DuckDB's own ``?`` parameters stay as they are."""

from __future__ import annotations

from functools import lru_cache

import sqlglot
from sqlglot import exp

__all__ = ["column", "drop_view", "select_all", "shaped", "table"]


def table(name: str) -> exp.Table:
    """A table's name as a quoted identifier, whatever it holds (a quote, a space, a keyword)."""
    return exp.table_(name, quoted=True)


def column(name: str, table_name: str | None = None) -> exp.Column:
    """A column's name as a quoted identifier (optionally qualified by a table or alias)."""
    return exp.column(name, table=exp.to_identifier(table_name, quoted=True) if table_name else None, quoted=True)


def select_all(name: str) -> exp.Select:
    """``SELECT * FROM "name"``."""
    return exp.select(exp.Star()).from_(table(name))


def drop_view(name: str) -> str:
    """``DROP VIEW IF EXISTS "name"`` as DuckDB SQL."""
    return exp.Drop(tables=[table(name)], kind="VIEW", exists=True).sql("duckdb")


@lru_cache(maxsize=None)
def _parsed(shape: str) -> exp.Expression:
    return sqlglot.parse_one(shape, read="duckdb")


def shaped(shape: str, **parts: exp.Expression) -> exp.Expression:
    """The DuckDB SQL ``shape`` with its ``$name`` placeholders replaced by ``parts`` (a fresh tree:
    the parsed shape is kept for the next call)."""
    return exp.replace_placeholders(_parsed(shape).copy(), **parts)
