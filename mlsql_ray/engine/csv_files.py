"""Reading CSV as Spark does, on DuckDB's CSV reader.

Spark takes the columns from the first record (its names with ``header``, else ``_c0``, ``_c1``,
...) and reads a record whose field count differs from it by ``mode``: ``PERMISSIVE`` (the
default) fills missing fields with NULL and drops extra ones, ``DROPMALFORMED`` drops the record,
``FAILFAST`` stops at it. ``columnNameOfCorruptRecord`` adds a column holding such a record's raw
text (NULL for well-formed ones). A record ends at its line's end, as in Spark by default;
``multiLine="true"`` lets a quoted value span lines.

DuckDB's sniffer guesses the column count from a sample of the file and can pick the wrong line
for the header (a ragged file failed "Error when sniffing file"), so the columns are read first
and the data read with them given, the dialect fixed and detection off.
"""

from __future__ import annotations

import csv
import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import duckdb
import pyarrow as pa
from sqlglot import exp

from ..errors import MLSQLError
from ..options import choice, flag
from .files import quoted

# fields read of the first record at first, 16 times more while they are all filled: DuckDB reads a
# record of 256 declared columns ~20 times slower than one of 16, and most files have fewer
FIRST_RECORD_WIDTH = 16
PARSE_MODES = ("PERMISSIVE", "DROPMALFORMED", "FAILFAST")
_MODE_OPTIONS = {  # DuckDB's reader options for each mode, given the columns
    "PERMISSIVE": {"null_padding": True, "strict_mode": False},
    "DROPMALFORMED": {"ignore_errors": True},
    "FAILFAST": {},
}


@dataclass(frozen=True)
class Dialect:
    sep: str
    quote: str
    escape: str
    header: bool
    skip: int = 0  # lines before the header

    def duckdb(self) -> dict:
        """DuckDB's reader options for this dialect, with nothing left to detect that Spark fixes
        (no comment lines, no skipped lines)."""
        return {"sep": self.sep, "quotechar": self.quote, "escapechar": self.escape, "comment": "", "skiprows": self.skip}


def dialect(options: dict[str, str]) -> Dialect:
    quote = options.get("quote", '"')
    return Dialect(sep=options.get("sep", options.get("delimiter", ",")), quote=quote,
                   escape=options.get("escape", quote), header=flag(options, "header", False))


@dataclass(frozen=True)
class Layout:
    """What Spark takes from the files before it reads their rows: the dialect (with the blank lines
    before the header), the columns' names and their DuckDB types (all VARCHAR unless
    ``inferSchema``) with the date and timestamp formats the types need."""

    dialect: Dialect
    names: list[str]
    types: list[str]
    formats: dict


def layout(con: duckdb.DuckDBPyConnection, files: list[str], options: dict[str, str],
           opener: Callable = open) -> Layout | None:
    """The ``files``' layout with Spark's options (``opener(path, "rb")`` opens one); None when no
    file holds a record."""
    spelled = dialect(options)
    fields = _first_record(con, files, spelled)
    if not fields:
        return None
    names = safe_header(fields) if spelled.header else [f"_c{i}" for i in range(len(fields))]
    if spelled.header:  # the header is the first line that is not blank (Spark); DuckDB's is the first line
        spelled = replace(spelled, skip=_blank_lines_before_the_header(files[0], opener))
    if not flag(options, "inferSchema", False):
        return Layout(spelled, names, ["VARCHAR"] * len(names), {})
    return Layout(spelled, names, *_sniffed_types(con, files[0], spelled, len(names)))


def read_csv(con: duckdb.DuckDBPyConnection, files: list[str], options: dict[str, str],
             hive: bool = False) -> duckdb.DuckDBPyRelation:
    """The CSV ``files`` with Spark's options and defaults: ``header``/``inferSchema`` false,
    ``sep`` (or ``delimiter``) ",", ``quote`` '"', ``escape`` the quote, ``mode`` PERMISSIVE,
    ``multiLine`` false, ``columnNameOfCorruptRecord``. Lazy, except with a corrupt-record column."""
    infer = flag(options, "inferSchema", False)
    multiline = flag(options, "multiLine", False)
    mode = choice(options, "mode", PARSE_MODES, "PERMISSIVE")
    corrupt = options.get("columnNameOfCorruptRecord") or None
    found = layout(con, files, options)
    if found is None:  # no record in any file: Spark's table has no columns, DuckDB's needs one
        return con.sql("SELECT NULL::VARCHAR AS _c0 LIMIT 0")
    spelled, names, types, formats = found.dialect, found.names, found.types, found.formats
    if corrupt in names:
        raise MLSQLError(f"columnNameOfCorruptRecord {corrupt!r} is a column of the file already (columns: {', '.join(names)})")
    if corrupt and mode == "PERMISSIVE":
        if hive:
            raise MLSQLError("columnNameOfCorruptRecord cannot read a folder of Hive partitions (k=v folders)")
        return _with_corrupt_records(con, files, spelled, names, types, formats, corrupt, multiline)
    # PERMISSIVE reads strings and types them after: a value that does not fit its column's type is
    # NULL, as in Spark, where DuckDB's reader would stop at it
    permissive = mode == "PERMISSIVE"
    relation = con.read_csv(files, header=spelled.header, columns=dict(zip(names, ["VARCHAR"] * len(names) if permissive else types)),
                            auto_detect=False, hive_partitioning=hive, parallel=not multiline, **spelled.duckdb(),
                            **({} if permissive else formats), **_MODE_OPTIONS[mode])
    if permissive and infer:
        relation = relation.project(", ".join([*(f"{typed(quoted(name), kind, formats)} AS {quoted(name)}"
                                                 for name, kind in zip(names, types)),
                                               *map(quoted, relation.columns[len(names):])]))  # Hive partitions
    if len(names) == 1:  # DuckDB reads a blank line as a record of one empty field (Spark skips it), and
        # as the NULL a record whose first field is empty gives: both go
        relation = relation.filter(f"{quoted(names[0])} IS NOT NULL")
    if corrupt:  # malformed records were dropped or stopped the read: the column stays empty
        relation = relation.select("*", duckdb.ConstantExpression(None).cast("VARCHAR").alias(corrupt))
    return relation


def safe_header(fields: list[str | None]) -> list[str]:
    """Spark's column names from a header record (``CSVUtils.makeSafeHeader``): an empty name is
    ``_c<index>``, a name repeated (in any case) gets its index appended."""
    lowered = [f.lower() for f in fields if f]
    repeated = {name for name in lowered if lowered.count(name) > 1}
    return [f"_c{i}" if not f else f"{f}{i}" if f.lower() in repeated else f for i, f in enumerate(fields)]


def _first_record(con: duckdb.DuckDBPyConnection, files: list[str], spelled: Dialect) -> list[str]:
    """The fields of the first record of the first file that has one. Read as one row of ``width``
    columns (widened while the row fills them all), padded, with empty fields kept apart from
    padding by a null string that cannot occur, so a trailing empty field still counts. DuckDB's
    sniffer is not asked: it sizes the row by the widest record of its sample."""
    marker = next(c for c in ("\x00", "\x01", "\x02") if c not in spelled.sep + spelled.quote + spelled.escape)
    width = FIRST_RECORD_WIDTH
    for path in files:
        while True:
            rows = con.read_csv(path, header=False, columns={f"c{i}": "VARCHAR" for i in range(width)}, auto_detect=False,
                                null_padding=True, strict_mode=False, parallel=False, na_values=marker,
                                hive_partitioning=False,  # a k=v folder would add a column that is never null
                                **spelled.duckdb()).limit(1).fetchall()
            if not rows or rows[0][-1] is None:
                break
            width *= 16
        if rows:
            row = list(rows[0])
            while row[-1] is None:
                row.pop()
            return row
    return []


def _blank_lines_before_the_header(path: str, opener: Callable = open) -> int:
    with opener(path, "rb") as file:
        return sum(1 for _ in itertools.takewhile(lambda line: not line.strip(), file))


def _sniffed_types(con: duckdb.DuckDBPyConnection, path: str, spelled: Dialect, width: int) -> tuple[list[str], dict]:
    """inferSchema: the types DuckDB's sniffer finds for the first ``width`` columns, and the date
    and timestamp formats it found, which the reader needs once detection is off."""
    options = {
        "header": exp.Boolean(this=bool(spelled.header)), "null_padding": exp.true(),
        "strict_mode": exp.false(),  # no skip: given, the sniffer fails on ragged files; it finds leading blank lines itself
        **{name: exp.Literal.string(value) for name, value in
           (("delim", spelled.sep), ("quote", spelled.quote), ("escape", spelled.escape))},
    }
    sniff = exp.Anonymous(this="sniff_csv", expressions=[
        exp.Literal.string(path), *(exp.PropertyEQ(this=exp.to_identifier(k), expression=v) for k, v in options.items())])
    [(columns, date_format, timestamp_format)] = con.sql(
        exp.select("Columns", "DateFormat", "TimestampFormat").from_(sniff).sql("duckdb")).fetchall()
    types = [column["type"] for column in columns[:width]] + ["VARCHAR"] * (width - len(columns))
    formats = {}
    # the sniffer says %Y-%m-%d for a date it read by DuckDB's lenient ISO cast: given back, that
    # format would refuse a value such as 2024-01-03 00:00:00 the sniffer accepted
    if date_format and date_format != "%Y-%m-%d":
        formats["date_format"] = date_format
    if timestamp_format:
        formats["timestamp_format"] = timestamp_format
    return types, formats


# -- PERMISSIVE with columnNameOfCorruptRecord ----------------------------------------------------

def _with_corrupt_records(con, files: list[str], spelled: Dialect, names: list[str], types: list[str],
                          formats: dict, corrupt: str, multiline: bool) -> duckdb.DuckDBPyRelation:
    """Every record, padded or cut to the columns, with its raw text in column ``corrupt`` when it
    is malformed: a field count that differs, or (inferSchema) a value that is not of its
    column's type, which is then NULL (Spark's PERMISSIVE).

    DuckDB's reader pads and cuts records but says neither which it changed nor what they were,
    and its rejects table ties a bad record to a line number, not to the row it became: Python's
    csv module reads the records here, one by one, with their text."""
    python_dialect = _python_dialect(spelled)
    typed_sql = [typed(f"c{i}", kind, formats) for i, kind in enumerate(types)]
    unfit = [f"(c{i} IS NOT NULL AND {sql} IS NULL)" for i, sql in enumerate(typed_sql) if sql != f"c{i}"]
    values: list[list[str | None]] = [[] for _ in names]
    raw_text: list[str | None] = []
    malformed: list[bool] = []
    for path in files:
        records = _records(_lines(path), python_dialect, multiline)
        if spelled.header:
            next(records, None)
        for raw, fields in records:
            for index, column in enumerate(values):
                column.append((fields[index] or None) if index < len(fields) else None)  # Spark: empty is NULL
            malformed.append(len(fields) != len(names))
            raw_text.append(raw if malformed[-1] or unfit else None)  # typed columns may yet find it malformed
    table = pa.table({**{f"c{i}": pa.array(v, pa.string()) for i, v in enumerate(values)},
                      "raw": pa.array(raw_text, pa.string()), "malformed": pa.array(malformed, pa.bool_())})
    bad = " OR ".join(["malformed", *unfit])
    columns = [f"{sql} AS {quoted(name)}" for sql, name in zip(typed_sql, names)]
    return con.from_arrow(table).project(", ".join([*columns, f"CASE WHEN {bad} THEN raw END AS {quoted(corrupt)}"]))


def _python_dialect(spelled: Dialect) -> dict:
    if len(spelled.sep) != 1 or len(spelled.quote) > 1 or len(spelled.escape) > 1:
        raise MLSQLError("columnNameOfCorruptRecord needs a one-character sep, quote and escape")
    if not spelled.quote:
        return {"delimiter": spelled.sep, "quoting": csv.QUOTE_NONE, "escapechar": spelled.escape or None}
    return {"delimiter": spelled.sep, "quotechar": spelled.quote, "doublequote": spelled.escape == spelled.quote,
            "escapechar": None if spelled.escape in ("", spelled.quote) else spelled.escape}


def _lines(path: str) -> Iterator[str]:
    """The file's lines as text, with their line ends; a line that is not UTF-8 is an error naming it."""
    with open(path, "rb") as file:
        for number, data in enumerate(file, 1):
            try:
                yield data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise MLSQLError(f"CSV error in {Path(path)} on line {number}: this file is not UTF-8 encoded "
                                 f"(byte {data[exc.start]:#04x} at column {exc.start + 1})") from exc


def _records(lines: Iterable[str], python_dialect: dict, multiline: bool) -> Iterator[tuple[str, list[str]]]:
    """(raw text, fields) of each record that is not blank: a line each, or (``multiline``) as many
    lines as its quoted values span."""
    if multiline:
        consumed: list[str] = []

        def feed():
            for line in lines:
                consumed.append(line)
                yield line

        for fields in csv.reader(feed(), **python_dialect):
            raw = "".join(consumed).rstrip("\r\n")
            consumed.clear()
            if raw.strip():
                yield raw, fields
        return
    for line in lines:
        if line.strip():
            yield line.rstrip("\r\n"), next(csv.reader([line], **python_dialect))


def typed(column: str, kind: str, formats: dict) -> str:
    """SQL for the string ``column`` as type ``kind``, NULL where a value does not fit. TRY(CAST())
    rather than TRY_CAST: DuckDB's type pushdown hands a TRY_CAST over a CSV column to the reader,
    which then stops at the value instead (duckdb/duckdb#23818)."""
    if kind == "VARCHAR":
        return column
    if kind == "DATE" and "date_format" in formats:
        return f"try_strptime({column}, {exp.Literal.string(formats['date_format']).sql('duckdb')})::DATE"
    if kind.startswith("TIMESTAMP") and "timestamp_format" in formats:
        return f"try_strptime({column}, {exp.Literal.string(formats['timestamp_format']).sql('duckdb')})"
    return f"TRY(CAST({column} AS {kind}))"
