"""The Spark conformance harness (issue 23): run Spark SQL through a ``Session`` and print each
result row the way Spark's own ``spark-sql`` shell prints it, so that a case can be written as the
``Examples:`` of Spark's built-in function reference show it::

    > SELECT date_format('2016-04-08', 'y');
    2016

Values are printed as Spark's ``HiveResult.toHiveString`` does (Spark 3.3, non-ANSI): ``NULL`` at the
top level and ``null`` inside collections, strings bare at the top and quoted inside, ``[a,b]``,
``{k:v}`` (entries sorted as printed, as HiveResult does), ``{"field":v}``, doubles and floats as Java's ``toString`` writes them, decimals in plain
notation, binary decoded as UTF-8, timestamps in the session time zone without trailing zeros of
the fraction, intervals in Hive style. This printer is written here, independently of the
product's own display code, so the cases test the product against Spark rather than against itself.

Case files (``cases/*.txt``) are data, one family of functions per file:

- ``> SQL;`` starts a case (the SQL may continue on following lines until one ends with ``;``);
  the lines after it, up to the next case, directive or comment, are the expected rows, one line
  each, columns separated by a tab (``(empty)`` stands for a row that prints as the empty string).
  Rows are compared in order when the query's result has an ``ORDER BY`` (one outside all
  parentheses: not a window's or a subquery's), as a sorted list otherwise.
- ``:: TYPE`` after the rows: the Spark type of the single result column (``int``, ``array<string>``,
  ``decimal(3,1)``...), as Spark's ``typeof``/``DESCRIBE`` print it.
- ``!! TEXT`` instead of rows: the statement fails with an ``MLSQLError`` whose message contains TEXT.
- ``@ MLSQL;`` runs an MLSQL statement in the file's session before the next cases (tables, ``set``
  of ``spark.sql.session.timeZone`` ...). Each file has its own session.
- ``# ...`` is a comment (say where the case comes from: the function reference, Spark's tests).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import pyarrow as pa

CASES = Path(__file__).parent / "cases"
RESULT_NAME = "__conformance"


@dataclass
class Case:
    sql: str
    line: int  # where the case starts in its file
    rows: list[str] = field(default_factory=list)
    type: str | None = None
    error: str | None = None
    setup: list[str] = field(default_factory=list)  # the file's @ statements before this case

    @property
    def ordered(self) -> bool:
        top_level = self.sql
        while re.search(r"\([^()]*\)", top_level):  # drop parenthesised parts, innermost first
            top_level = re.sub(r"\([^()]*\)", " ", top_level)
        return re.search(r"\border\s+by\b", top_level, re.IGNORECASE) is not None


def read_cases(path: Path) -> list[Case]:
    """The cases of one file, each with the ``@`` statements that come before it."""
    cases: list[Case] = []
    setup: list[str] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("> "):
            start, sql = i + 1, [line[2:]]
            while not sql[-1].rstrip().endswith(";"):
                i += 1
                if i >= len(lines):
                    raise ValueError(f"{path.name}:{start}: the case's SQL does not end with ';'")
                sql.append(lines[i])
            cases.append(Case("\n".join(sql).rstrip().rstrip(";"), start, setup=list(setup)))
        elif line.startswith("@ "):
            setup.append(line[2:])
        elif line.startswith(":: "):
            cases[-1].type = line[3:].strip()
        elif line.startswith("!! "):
            cases[-1].error = line[3:].strip()
        elif line.startswith("#") or not line.strip():
            pass
        elif cases:
            cases[-1].rows.append("" if line == "(empty)" else line)
        else:
            raise ValueError(f"{path.name}:{i + 1}: a result row before any case")
        i += 1
    return cases


def as_select(sql: str) -> str:
    """MLSQL's select statement starts with ``select``: other queries (``WITH``, ``VALUES``,
    ``TABLE``) are read through a subquery."""
    return sql if re.match(r"\s*select\b", sql, re.IGNORECASE) else f"SELECT * FROM ({sql})"


def run(session, sql: str) -> tuple[list[str], list[str]]:
    """Rows of the query as Spark prints them, and the Spark type of each column."""
    session.execute(f"{as_select(sql)} as {RESULT_NAME};")
    table = session.table(RESULT_NAME)
    zone = session_zone(session)
    printed = ["\t".join(spark_string(v, f.type, zone) for v, f in zip(row, table.schema))
               for row in zip(*(c.to_pylist() for c in table.columns))] if table.num_columns else []
    return printed, [spark_type(f.type) for f in table.schema]


def session_zone(session) -> dt.tzinfo | None:
    """The session time zone Spark prints timestamps in (``set spark.sql.session.timeZone``), or
    None for the machine's."""
    name = getattr(session, "conf", {}).get("spark.sql.session.timeZone")
    return ZoneInfo(name) if name else None


# -- printing as Spark does ------------------------------------------------------------------------

def spark_string(value, t: pa.DataType, zone: dt.tzinfo | None = None, nested: bool = False) -> str:
    if value is None:
        return "null" if nested else "NULL"
    if pa.types.is_boolean(t):
        return "true" if value else "false"
    if pa.types.is_floating(t):
        return java_float(value, single=pa.types.is_float32(t) or pa.types.is_float16(t))
    if pa.types.is_decimal(t):
        return format(value, "f")
    if pa.types.is_integer(t):
        return str(value)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return f'"{value}"' if nested else value
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return bytes(value).decode("utf-8", errors="replace")
    if pa.types.is_date(t):
        return value.isoformat()
    if pa.types.is_timestamp(t):
        return timestamp_string(value, zone)
    if pa.types.is_time(t):
        return value.isoformat()
    if pa.types.is_interval(t):
        return interval_string(value)
    if pa.types.is_duration(t):
        return day_time_string(value.days, value.seconds * 1_000_000_000 + value.microseconds * 1000)
    if pa.types.is_map(t):  # HiveResult sorts a map's printed entries
        return "{" + ",".join(sorted(spark_string(k, t.key_type, zone, True) + ":" + spark_string(v, t.item_type, zone, True)
                                     for k, v in value)) + "}"
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t) or pa.types.is_list_view(t):
        return "[" + ",".join(spark_string(v, t.value_type, zone, True) for v in value) + "]"
    if pa.types.is_struct(t):
        return "{" + ",".join(f'"{f.name}":' + spark_string(value[f.name], f.type, zone, True) for f in t) + "}"
    if pa.types.is_null(t):
        return "null" if nested else "NULL"
    raise TypeError(f"no Spark printing for Arrow type {t}")


def java_float(x: float, single: bool = False) -> str:
    """Java's ``Double.toString``/``Float.toString``: plain between 10^-3 and 10^7, else
    ``d.dddE±n``; always a digit after the point; the shortest digits that read back."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1, x) < 0 else "0.0"
    shortest = np.format_float_scientific(np.float32(x) if single else x, unique=True, trim="-")
    mantissa, exponent = shortest.split("e")
    digits, exp10 = mantissa.lstrip("-").replace(".", ""), int(exponent)
    sign = "-" if x < 0 else ""
    if 1e-3 <= abs(x) < 1e7:
        point = exp10 + 1
        if point <= 0:
            whole, frac = "0", "0" * -point + digits
        else:
            padded = digits.ljust(point, "0")
            whole, frac = padded[:point], padded[point:]
        return f"{sign}{whole}.{frac.rstrip('0') or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exp10}"


def timestamp_string(value: dt.datetime, zone: dt.tzinfo | None) -> str:
    """``yyyy-MM-dd HH:mm:ss`` and the fraction without trailing zeros (Spark's fraction formatter);
    an instant (a time-zone-aware value) in the session time zone."""
    if value.tzinfo is not None:
        value = value.astimezone(zone) if zone is not None else value.astimezone()
    text = value.strftime("%Y-%m-%d %H:%M:%S")
    if value.microsecond:
        text += "." + f"{value.microsecond:06d}".rstrip("0")
    return text


def interval_string(value) -> str:
    """DuckDB has one INTERVAL type where Spark has two: months alone print as a year-month
    interval (``1-2``), days and time alone as a day-time interval (``1 02:03:04.000000000``),
    both as Spark's calendar interval (``1 years 2 months 3 days ...``)."""
    months, days, nanos = value.months, value.days, value.nanoseconds
    if not days and not nanos:
        sign = "-" if months < 0 else ""
        return f"{sign}{abs(months) // 12}-{abs(months) % 12}"
    if not months:
        return day_time_string(days, nanos)
    return calendar_interval_string(months, days, nanos // 1000)


def day_time_string(days: int, nanos: int) -> str:
    total = days * 86_400_000_000_000 + nanos
    sign = "-" if total < 0 else ""
    total = abs(total)
    seconds, frac = divmod(total, 1_000_000_000)
    d, rest = divmod(seconds, 86_400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    return f"{sign}{d} {h:02d}:{m:02d}:{s:02d}.{frac:09d}"


def calendar_interval_string(months: int, days: int, micros: int) -> str:
    """Spark's ``CalendarInterval.toString``."""
    parts = []
    if months:
        years, rest = int(months / 12), months - int(months / 12) * 12
        parts += [f"{years} years"] if years else []
        parts += [f"{rest} months"] if rest else []
    if days:
        parts.append(f"{days} days")
    if micros:
        sign = "-" if micros < 0 else ""
        micros = abs(micros)
        hours, rest = divmod(micros, 3_600_000_000)
        minutes, rest = divmod(rest, 60_000_000)
        parts += [f"{sign}{hours} hours"] if hours else []
        parts += [f"{sign}{minutes} minutes"] if minutes else []
        if rest:
            seconds = Decimal(rest) / Decimal(1_000_000)
            parts.append(f"{sign}{format(seconds.normalize(), 'f')} seconds")
    return " ".join(parts) or "0 seconds"


def spark_type(t: pa.DataType) -> str:
    """An Arrow type as Spark prints the type it stands for."""
    simple = {pa.int8(): "tinyint", pa.int16(): "smallint", pa.int32(): "int", pa.int64(): "bigint",
              pa.float32(): "float", pa.float64(): "double", pa.string(): "string", pa.large_string(): "string",
              pa.string_view(): "string", pa.bool_(): "boolean", pa.date32(): "date", pa.binary(): "binary",
              pa.large_binary(): "binary", pa.null(): "void"}
    if t in simple:
        return simple[t]
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_timestamp(t):
        return "timestamp" if t.tz is not None else "timestamp_ntz"
    if pa.types.is_map(t):
        return f"map<{spark_type(t.key_type)},{spark_type(t.item_type)}>"
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t) or pa.types.is_list_view(t):
        return f"array<{spark_type(t.value_type)}>"
    if pa.types.is_struct(t):
        return "struct<" + ",".join(f"{f.name}:{spark_type(f.type)}" for f in t) + ">"
    if pa.types.is_interval(t):
        return "interval"
    return str(t)
