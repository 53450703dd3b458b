"""Spark SQL as a script writes it: its Velocity directives (``#set``, ``#foreach``, ``#if``)
rendered first, as Byzer renders every statement (``templates``), then translated to DuckDB SQL
(``spark.translate``), errors positioned in the script."""

from __future__ import annotations

from functools import lru_cache

from ..errors import MLSQLError
from ..spark import translate as spark_translate
from ..spark.sql_types import Schemas
from ..spark.translate import Translation
from . import templates

__all__ = ["Translation", "rendered", "translate"]


@lru_cache(maxsize=1024)
def rendered(spark_sql: str) -> str:
    """``spark_sql`` with its Velocity directives run (an error is positioned within it). Cached:
    a select's text is rendered when the parser checks it and again when it runs."""
    return templates.render(spark_sql) if templates.has_template(spark_sql) else spark_sql


def translate(spark_sql: str, line: int = 1, col: int = 1, schemas: Schemas | None = None,
              query: bool = False) -> Translation:
    """``spark.translate.translate`` of the rendered text (its arguments are explained there)."""
    try:
        text = rendered(spark_sql)
    except MLSQLError as exc:
        raise spark_translate.placed(exc, line, col) from exc.__cause__
    return spark_translate.translate(text, line, col, schemas, query)
