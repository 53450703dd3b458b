"""``jsonStr``, ``csvStr`` and ``script``: a variable's text as a table (Byzer's mock data and UDF code).

``load jsonStr.`rawData` as t;`` reads the variable ``rawData`` (named without ``$``).
"""

from __future__ import annotations

import io
import re
import tempfile
from pathlib import Path

import duckdb
import pyarrow as pa

from ...errors import MLSQLError
from ..csv_files import read_csv
from ..files import json_as_spark
from ..sql import duckdb_message
from .base import DataSource, variable_text
from .file_formats import CSV_PARAMS

_TRAILING_COMMA = re.compile(r"\}[ \t]*,[ \t]*$", re.MULTILINE)


def _load_json(session, s) -> None:
    text = variable_text(session, s.path, "jsonStr")
    # Spark reads each line's first JSON value and ignores what follows it, so Byzer's docs can end
    # lines with a comma ({"a":1},); DuckDB wants bare lines
    text = _TRAILING_COMMA.sub("}", text)
    table = json_as_spark(session.con.read_json(io.StringIO(text), format="newline_delimited")).to_arrow_table()
    # Spark infers a JSON schema with its fields sorted by name
    table = table.select(sorted(table.column_names))
    session.catalog.add_arrow(s.table, table, f"jsonStr.`{s.path}`")


def _load_csv(session, s) -> None:
    text = variable_text(session, s.path, "csvStr")
    # read as a file: the CSV reader reads it more than once (its first record, its types, its rows)
    with tempfile.TemporaryDirectory(prefix="mlsql-csvstr-") as folder:
        path = Path(folder) / f"{s.path}.csv"
        path.write_text(text, encoding="utf-8")
        try:
            table = read_csv(session.con, [str(path)], s.options).to_arrow_table()
        except duckdb.Error as exc:  # an error in the text, said of the variable, not of the file it passed through
            message = duckdb_message(exc, session.catalog.names()).replace(str(path), f"the variable {s.path}")
            raise MLSQLError(message) from exc
    session.catalog.add_arrow(s.table, table, f"csvStr.`{s.path}`")


def _load_script(session, s) -> None:
    text = variable_text(session, s.path, "script")
    session.catalog.add_arrow(s.table, pa.table({"content": [text]}), f"script.`{s.path}`")


SOURCES = (
    DataSource("jsonStr", "a variable's text as JSON lines: one object per line", _load_json),
    DataSource("csvStr", "a variable's text as CSV (options as for csv)", _load_csv, params=CSV_PARAMS),
    DataSource("script", "a variable's text as a one-row table with column content (e.g. UDF code)", _load_script),
)
