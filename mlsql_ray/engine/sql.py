"""DuckDB's errors mapped onto the statement; the Spark SQL → DuckDB translation itself lives in
``spark.translate`` (with ``lang.script_sql`` over it: templates) because the parser checks every
select's SQL before anything runs."""

from __future__ import annotations

import itertools
import re

import duckdb

from ..lang.script_sql import translate
from ..spark.sql_types import Schemas
from ..errors import first_line

__all__ = ["duckdb_message", "interrupted_query", "to_duckdb", "translate"]


def to_duckdb(spark_sql: str, line: int = 1, col: int = 1, schemas: Schemas | None = None) -> str:
    return translate(spark_sql, line, col, schemas).sql


def interrupted_query(exc: BaseException) -> bool:
    """Whether DuckDB ended a query because of Ctrl-C. A SIGINT during a query ends it with a bare
    ``RuntimeError("Query interrupted")``: DuckDB's client has run the signal's handler, so the
    KeyboardInterrupt is gone and only the text tells (tests/test_driver.py); ``con.interrupt()``
    (the interrupt watcher of the kernel and the magic) with ``duckdb.InterruptException``
    (tests/test_sql_trees.py)."""
    return (isinstance(exc, RuntimeError) and str(exc).strip() == "Query interrupted") or \
        isinstance(exc, duckdb.InterruptException)


def duckdb_message(exc: BaseException, tables: list[str]) -> str:
    """DuckDB's message in one line: its first line, with a hint when a table name is unknown; for
    an error reading a CSV file, where and what (DuckDB puts the cause of those on a later line,
    after the offending line itself, and ends with its own reader's options). The kind of error is
    told by DuckDB's exception class; what it names (the table, the line, the reason) only by its
    text: DuckDB's exceptions carry no fields."""
    text = str(exc).strip()
    csv_error = _csv_error(text)  # by its text: DuckDB raises a CSV error as one of several classes
    if csv_error is not None:
        return csv_error
    first = first_line(exc)
    missing = re.search(r"Table with name (\S+) does not exist", first) if _is(exc, duckdb.CatalogException) else None
    if missing:
        known = ", ".join(sorted(tables)) or "none yet"
        return f"table {missing.group(1)} is not defined (load it or select ... as it first; defined: {known})"
    first = re.sub(r"^[\w ]+ Error: ", "", first)  # the class's name, which DuckDB writes into the text too
    if _is(exc, duckdb.BinderException) and re.search(r"UNNEST\(\) can only be applied to lists, structs and NULL, not MAP", first):
        return ("explode/posexplode of this map is not supported (its type could not be known when the SQL was "
                "translated, e.g. a subquery's column): write inline(map_entries(m)) for its key and value columns, "
                "or explode(map_keys(m))")
    if _is(exc, duckdb.InvalidInputException):  # an exception raised inside a Python function (a model function) speaks for itself
        first = re.sub(r"^Python exception occurred while executing the UDF: \w+: ", "", first)
    return first


def _is(exc: BaseException, kind: type[duckdb.Error]) -> bool:
    """Whether ``exc`` is DuckDB's ``kind`` of error; an error that is not DuckDB's at all (one
    whose text crossed a stream, e.g. a save's source read through Arrow) is judged by its text."""
    return isinstance(exc, kind) or not isinstance(exc, duckdb.Error)


_CSV_LINE = re.compile(r"CSV Error on Line: (\d+)")
_CSV_FILE = re.compile(r"^\s*file = (.*)$", re.MULTILINE)
# DuckDB's words for a reason that speaks of its own options, and ours (engine/csv_files.py
# sets those options: the first comes with PERMISSIVE, the second only with FAILFAST)
_CSV_REASONS = (
    (re.compile(r"The parallel scanner does not support null_padding in conjunction with quoted new lines.*"),
     'a quoted value spans lines: add where multiLine="true" to read records that do'),
    (re.compile(r"Expected Number of Columns: (\d+) Found: (\d+)"),
     lambda m: f"malformed record (mode FAILFAST): {_fields(m[2])} where the first record has {m[1]}"),
)


def _fields(count: str) -> str:
    return f"{count} field" if count == "1" else f"{count} fields"


# how DuckDB's reasons start (csv_error.cpp); the offending record, printed before its reason, may
# span lines and hold blank ones, so the reason is found by its words
_CSV_REASON = re.compile(r"^\s*(Expected Number of Columns|Error when converting column|Maximum line size|"
                         r"Invalid unicode|Value with unterminated quote|The parallel scanner)")


def _csv_error(text: str) -> str | None:
    """"CSV error in FILE on line N: REASON" from DuckDB's CSV error text: ``CSV Error on Line: N``,
    ``Original Line: ...`` (the record), the reason, maybe ``Possible ...`` fixes, then
    ``  file = ...`` and the rest of the reader's options. DuckDB's exceptions carry no fields:
    the text is all there is. An unknown reason is taken to be the line after the record's first."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if _CSV_LINE.search(line)), None)
    if start is None:
        return None
    body = list(itertools.takewhile(lambda line: not _CSV_FILE.match(line), lines[start + 1:]))
    known = [line.strip() for line in body if _CSV_REASON.match(line)]
    if known:
        reason = known[-1]
    else:
        rest = [line.strip() for line in body[1 if body and body[0].startswith("Original Line") else 0:] if line.strip()]
        reason = rest[0] if rest else "malformed CSV"
    for theirs, ours in _CSV_REASONS:
        reason = theirs.sub(ours, reason)
    where = _CSV_FILE.search(text)
    place = f" in {where.group(1).strip()}" if where else ""
    return f"CSV error{place} on line {_CSV_LINE.search(lines[start]).group(1)}: {reason}"
