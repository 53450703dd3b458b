"""DuckDB's errors mapped onto the statement; the Spark SQL → DuckDB translation itself lives in
``lang.sql`` because the parser checks every select's SQL before anything runs."""

from __future__ import annotations

import re

from ..lang.sql import translate

__all__ = ["duckdb_message", "to_duckdb", "translate"]


def to_duckdb(spark_sql: str, line: int = 1, col: int = 1) -> str:
    return translate(spark_sql, line, col)[0]


def duckdb_message(exc: BaseException, tables: list[str]) -> str:
    """DuckDB's message in one line: its first line, with a hint when a table name is unknown; for
    an error reading a CSV file, where and what (DuckDB puts the cause of those on a later line,
    after the offending line itself, and ends with its own reader's options)."""
    text = str(exc).strip()
    csv_error = _csv_error(text)
    if csv_error is not None:
        return csv_error
    first = text.splitlines()[0] if text else type(exc).__name__
    missing = re.search(r"Table with name (\S+) does not exist", first)
    if missing:
        known = ", ".join(sorted(tables)) or "none yet"
        return f"table {missing.group(1)} is not defined (load it or select ... as it first; defined: {known})"
    first = re.sub(r"^[\w ]+ Error: ", "", first)
    # an exception raised inside a Python function (a model function) speaks for itself
    return re.sub(r"^Python exception occurred while executing the UDF: \w+: ", "", first)


_CSV_LINE = re.compile(r"CSV Error on Line: (\d+)")
_CSV_FILE = re.compile(r"^\s*file = (.*)$", re.MULTILINE)
# DuckDB's words for a reason that speaks of its own options, and ours (engine/csv_files.py
# sets those options: the first comes with PERMISSIVE, the second only with FAILFAST)
_CSV_REASONS = (
    (re.compile(r"The parallel scanner does not support null_padding in conjunction with quoted new lines.*"),
     'a quoted value spans lines: add where multiLine="true" to read records that do'),
    (re.compile(r"Expected Number of Columns: (\d+) Found: (\d+)"),
     r"malformed record (mode FAILFAST): \2 fields where the first record has \1"),
)


def _csv_error(text: str) -> str | None:
    """"CSV error in FILE on line N: REASON" from DuckDB's CSV error text, whose lines are
    ``CSV Error on Line: N``, ``Original Line: ...`` (the record, which may itself span lines),
    the reason, then a blank line or ``Possible ...`` fixes, then ``  file = ...`` and the rest of
    the reader's options. DuckDB's exceptions carry no fields: the text is all there is."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if _CSV_LINE.search(line)), None)
    if start is None:
        return None
    block = []
    for line in lines[start + 1:]:
        if not line.strip() or line.startswith("Possible") or _CSV_FILE.match(line):
            break
        block.append(line.strip())
    reason = block[-1] if block else "malformed CSV"
    for theirs, ours in _CSV_REASONS:
        reason = theirs.sub(ours, reason)
    where = _CSV_FILE.search(text)
    place = f" in {where.group(1).strip()}" if where else ""
    return f"CSV error{place} on line {_CSV_LINE.search(lines[start]).group(1)}: {reason}"
