"""``parquet``, ``csv``, ``json`` and ``text``: files on disk, read and written by ``engine.files``."""

from __future__ import annotations

from functools import partial

from ..files import read, write
from ..result import Result
from .base import DataSource, Param


def _load(fmt: str, session, s) -> None:
    relation = read(session.con, fmt, session._path(s.path), s.options)
    session.catalog.add_relation(s.table, relation, f"{fmt}.`{s.path}`")


def _save(fmt: str, session, s) -> Result:
    rows = write(session.con, s.table, fmt, session._path(s.path), s.mode, s.options, s.partition_by)
    if rows is None:
        return Result(s, f"{s.path} exists; nothing written (mode ignore)")
    return Result(s, f"saved {rows} rows of {s.table} to {fmt}.`{s.path}` (mode {s.mode})", num_rows=rows)


CSV_PARAMS = (
    Param("header", "false", "the first line holds the column names (load and save)"),
    Param("inferSchema", "false", "guess column types from the data; otherwise every column is a string"),
    Param("sep", ",", "the character between fields (also spelled delimiter)"),
    Param("quote", '"', "the character around values that hold the separator"),
    Param("escape", '"', "the character that escapes a quote inside a quoted value"),
)

SOURCES = (
    DataSource("parquet", "Parquet files: a file or a folder of part files", partial(_load, "parquet"),
               partial(_save, "parquet")),
    DataSource("csv", "CSV files: a file or a folder of part files", partial(_load, "csv"), partial(_save, "csv"),
               CSV_PARAMS),
    DataSource("json", "JSON lines files: one object per line", partial(_load, "json"), partial(_save, "json")),
    DataSource("text", "text files as rows (file, value): one row per file; load only", partial(_load, "text"),
               partial(_save, "text")),
)
