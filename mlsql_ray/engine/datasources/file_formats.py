"""``parquet``, ``csv``, ``json`` and ``text``: files on disk, read and written by ``engine.files``."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ...objectstore import ObjectPath
from .. import object_files
from ..csv_files import read_csv
from ..files import located, read_json, read_parquet, read_text, write
from ..result import Result
from ...options import Param
from .base import DataSource

_READERS: dict[str, Callable] = {"parquet": read_parquet, "csv": read_csv, "json": read_json, "text": read_text}


def add_files(session, table: str, fmt: str, path: Path | ObjectPath, options: dict, origin: str) -> None:
    """Name ``table`` in the session's catalog: the ``fmt`` files at ``path`` (a file or a folder,
    local or on an object store: see ``object_files``)."""
    if isinstance(path, ObjectPath):
        if fmt == "parquet":
            session.catalog.add_arrow(table, object_files.parquet_dataset(path), origin, kind="lazy")
            return
        path = object_files.fetch(path, fmt, session.staging())
    files, hive = located(path, fmt)
    read = _READERS[fmt]
    session.catalog.add_relation(table, read(session.con, files, options, hive), origin,
                                 parquet_files=tuple(files) if fmt == "parquet" else (), hive=hive)


def _loader(fmt: str) -> Callable:
    def load(session, s) -> None:
        add_files(session, s.table, fmt, session.location(s.path, s.options), s.options, f"{fmt}.`{s.path}`")

    return load


def _saver(fmt: str) -> Callable:
    def save(session, s) -> Result:
        path = session.location(s.path, s.options)
        if isinstance(path, ObjectPath):
            rows = object_files.save(session.con, s.table, fmt, path, s.mode, s.options, s.partition_by,
                                     session.staging())
        else:
            rows = write(session.con, s.table, fmt, path, s.mode, s.options, s.partition_by)
        if rows is None:
            return Result(s, f"{s.path} exists; nothing written (mode ignore)")
        return Result(s, f"saved {rows} rows of {s.table} to {fmt}.`{s.path}` (mode {s.mode})", num_rows=rows)

    return save


CSV_PARAMS = (
    Param("header", "false", "the first line holds the column names (load and save)"),
    Param("inferSchema", "false", "guess column types from the data; otherwise every column is a string"),
    Param("sep", ",", "the character between fields (also spelled delimiter; load and save)"),
    Param("delimiter", ",", "sep's other spelling"),
    Param("quote", '"', "the character around values that hold the separator"),
    Param("escape", '"', "the character that escapes a quote inside a quoted value"),
    Param("mode", "PERMISSIVE", "a record with fewer or more fields than the first: PERMISSIVE fills in NULLs and "
                                "drops the extra, DROPMALFORMED drops it, FAILFAST stops at it"),
    Param("columnNameOfCorruptRecord", "", "add a column of this name holding each malformed record's text"),
    Param("multiLine", "false", "a quoted value may span lines"),
)

SOURCES = (
    DataSource("parquet", "Parquet files: a file or a folder of part files", _loader("parquet"),
               _saver("parquet")),
    DataSource("csv", "CSV files: a file or a folder of part files", _loader("csv"), _saver("csv"), CSV_PARAMS),
    DataSource("json", "JSON lines files: one object per line", _loader("json"), _saver("json")),
    DataSource("text", "text files as rows (file, value), one row per line; load only (save as csv, json or parquet)",
               _loader("text")),
)
