"""Spark 3.3's datetime functions on DuckDB (issue 23, item 2).

A Spark TIMESTAMP is an instant shown in the session time zone (``spark.sql.session.timeZone``):
here it is DuckDB's TIMESTAMPTZ, and the engine keeps DuckDB's ``TimeZone`` setting equal to the
session zone, so every DuckDB function that reads local fields of a TIMESTAMPTZ (``hour``, ``CAST
AS DATE``, ``strftime``, ``date_trunc``) reads them in the session zone, as Spark does.

``FUNCTIONS``: the calls this module translates itself. ``spark_functions.parse`` reads them as plain
calls, because sqlglot's Spark dialect turns several of them into other meanings while parsing
(patterns rewritten letter by letter into strftime codes and text, ``dayofweek`` counted from 0,
``timestamp(x)`` as a time-zone-less cast). ``datetime_calls`` then writes each as DuckDB SQL, mostly
calls of the ``MACROS`` below; a constant datetime pattern is translated here, at translation time
(``datetime_patterns``). The macros are untyped: each takes a string, a date or a timestamp, as the
Spark function does, and ``typeof`` picks the conversion when DuckDB binds the query.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import sqlglot
from sqlglot import exp

from ..errors import MLSQLError
from . import datetime_patterns as patterns
from . import casts as spark_casts
from .calls import hygienic
from .family import Family, PythonFunction
from .sql_types import BIGINT, interval_fields, kind, spark_type

MACROS: dict[str, str] = {
    # Spark's casts of a string to DATE and TIMESTAMP are spark_casts' spark_str_to_date and spark_str_to_timestamp
    "spark_date": """(x) AS CASE WHEN typeof(x) = 'VARCHAR' THEN spark_str_to_date(CAST(x AS VARCHAR))
                               ELSE TRY_CAST(x AS DATE) END""",
    # Spark's implicit cast to TIMESTAMP: a number is seconds since the epoch. (Untyped, with typeof
    # folded when DuckDB binds, because other macros call it with their own untyped parameters.)
    "spark_timestamp": """(x) AS CASE WHEN typeof(x) = 'VARCHAR' THEN spark_str_to_timestamp(CAST(x AS VARCHAR))
        WHEN typeof(x) IN ('TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'HUGEINT', 'FLOAT', 'DOUBLE')
             OR typeof(x) LIKE 'DECIMAL%' THEN to_timestamp(TRY_CAST(x AS DOUBLE))
        ELSE TRY_CAST(x AS TIMESTAMPTZ) END""",
    # Spark's zone ids: 'Z' and offsets as ICU writes them
    "spark_zone": r"""(z) AS CASE WHEN z = 'Z' THEN 'UTC' WHEN regexp_full_match(z, '[+-]\d{1,2}(:\d{2}){0,2}')
                                 THEN 'GMT' || z ELSE z END""",
    # java.time's DayOfWeek names as Spark's next_day reads them (DateTimeUtils.getDayOfWeekFromString),
    # Sunday = 0 as DuckDB's dayofweek
    "spark_day_of_week_number": """(d) AS CASE upper(trim(d))
        WHEN 'SU' THEN 0 WHEN 'SUN' THEN 0 WHEN 'SUNDAY' THEN 0 WHEN 'MO' THEN 1 WHEN 'MON' THEN 1 WHEN 'MONDAY' THEN 1
        WHEN 'TU' THEN 2 WHEN 'TUE' THEN 2 WHEN 'TUESDAY' THEN 2 WHEN 'WE' THEN 3 WHEN 'WED' THEN 3 WHEN 'WEDNESDAY' THEN 3
        WHEN 'TH' THEN 4 WHEN 'THU' THEN 4 WHEN 'THURSDAY' THEN 4 WHEN 'FR' THEN 5 WHEN 'FRI' THEN 5 WHEN 'FRIDAY' THEN 5
        WHEN 'SA' THEN 6 WHEN 'SAT' THEN 6 WHEN 'SATURDAY' THEN 6 END""",
    "spark_next_day": """(x, d) AS spark_date(x)
        + CAST((spark_day_of_week_number(d) - dayofweek(spark_date(x)) + 6) % 7 + 1 AS INT)""",
    # DateTimeUtils.monthsBetween: whole months when the days of month are equal or both last days,
    # else the difference in seconds over a 31-day month; rounded to 8 digits as Math.round does
    "spark_round_off": "(x, round_off) AS CASE WHEN round_off THEN floor(x * 1e8 + 0.5) / 1e8 ELSE x END",
    "spark_months_between_of": """(t1, t2, round_off) AS CASE
        WHEN day(t1) = day(t2) OR (day(t1) = day(last_day(t1)) AND day(t2) = day(last_day(t2)))
            THEN CAST((year(t1) * 12 + month(t1)) - (year(t2) * 12 + month(t2)) AS DOUBLE)
        ELSE spark_round_off((year(t1) * 12 + month(t1)) - (year(t2) * 12 + month(t2))
             + ((day(t1) - day(t2)) * 86400 + (hour(t1) * 3600 + minute(t1) * 60 + second(t1))
                - (hour(t2) * 3600 + minute(t2) * 60 + second(t2))) / 2678400.0, round_off) END""",
    # each timestamp read once and handed over through a one-element list (as macro_expansion does for
    # calls): spark_months_between_of names t1 and t2 a dozen times each, and a copy of spark_timestamp(a)
    # in every place made DuckDB bind some 7 000 nodes, 2 s per query
    "spark_months_between": """(a, b, round_off) AS list_transform([{'t1': spark_timestamp(a), 't2': spark_timestamp(b)}],
        lambda spark_mb: spark_months_between_of(spark_mb.t1, spark_mb.t2, round_off))[1]""",
    # make_timestamp: out-of-range fields give NULL (non-ANSI); a 60th second is the next minute's 0
    "spark_make_timestamp": """(y, mo, d, h, mi, s, tz) AS CASE
        WHEN h NOT BETWEEN 0 AND 23 OR mi NOT BETWEEN 0 AND 59 OR try(make_date(y, mo, d)) IS NULL THEN NULL
        WHEN s = 60 THEN try(make_timestamptz(y, mo, d, h, mi, 0, spark_zone(tz))) + INTERVAL 1 MINUTE
        WHEN s >= 0 AND s < 60 THEN try(make_timestamptz(y, mo, d, h, mi, CAST(s AS DOUBLE), spark_zone(tz))) END""",
    # the instant as seconds since the epoch, truncated as Java's long division truncates
    "spark_epoch_seconds": "(t) AS CAST(trunc(epoch_us(t) / 1000000) AS BIGINT)",
    "spark_floor_div": "(a, b) AS CAST(floor(a / b) AS BIGINT)",
    "spark_micros_to_timestamp": "(us) AS timezone('UTC', make_timestamp(CAST(us AS BIGINT)))",
    # a datetime plus an interval (Spark's DateAddYMInterval, DateAdd of whole days, TimeAdd): a date stays a
    # date when the interval has no time of day, else it is read as a timestamp in the session time zone
    "spark_plus_date_interval": """(x DATE, i INTERVAL) AS CAST(x + i AS DATE), (x TIMESTAMP, i INTERVAL) AS x + i,
                                   (x TIMESTAMPTZ, i INTERVAL) AS x + i, (x VARCHAR, i INTERVAL) AS spark_timestamp(x) + i""",
    "spark_plus_time_interval": """(x DATE, i INTERVAL) AS CAST(x AS TIMESTAMPTZ) + i, (x TIMESTAMP, i INTERVAL) AS x + i,
                                   (x TIMESTAMPTZ, i INTERVAL) AS x + i, (x VARCHAR, i INTERVAL) AS spark_timestamp(x) + i""",
    # Spark's cast of a timestamp to a string: 'yyyy-MM-dd HH:mm:ss' in the session time zone and the
    # fraction without its trailing zeros, no offset (DuckDB's cast appends one); an interval whose Spark
    # type is not known while translating is refused (its text depends on its type's fields, which DuckDB's
    # one INTERVAL type does not keep: spark_casts writes the known ones); other types as DuckDB casts
    "spark_cast_string": """(x TIMESTAMPTZ) AS spark_timestamp_to_string(x), (x TIMESTAMP) AS spark_timestamp_to_string(x),
                            (x DATE) AS CAST(x AS VARCHAR), (x INTERVAL) AS CAST(error('an interval of unknown fields as a string is not '
                            || 'supported (Spark writes it by its type''s fields, e.g. INTERVAL ''1-2'' YEAR TO MONTH)')
                            AS VARCHAR), (x) AS CAST(x AS VARCHAR)""",
    # from_utc_timestamp/to_utc_timestamp: the wall time read in one zone, shown in the other
    "spark_from_utc_timestamp": """(x, z) AS CAST(timezone(spark_zone(z), timezone('UTC', CAST(spark_timestamp(x) AS TIMESTAMP)))
                                                AS TIMESTAMPTZ)""",
    "spark_to_utc_timestamp": """(x, z) AS CAST(timezone('UTC', timezone(spark_zone(z), CAST(spark_timestamp(x) AS TIMESTAMP)))
                                              AS TIMESTAMPTZ)""",
    **hygienic({"spark_format_by_pattern": patterns.ROW_FORMAT}),
}

FORMAT = "yyyy-MM-dd HH:mm:ss"
"""Spark's default pattern of from_unixtime and unix_timestamp."""

_TRUNC_UNITS = {"YEAR": "year", "YYYY": "year", "YY": "year", "QUARTER": "quarter", "MONTH": "month", "MM": "month",
                "MON": "month", "WEEK": "week"}
_DATE_TRUNC_UNITS = {**_TRUNC_UNITS, "DAY": "day", "DD": "day", "HOUR": "hour", "MINUTE": "minute", "SECOND": "second",
                     "MILLISECOND": "millisecond", "MICROSECOND": "microsecond"}

_FIELDS = {
    **dict.fromkeys(("YEAR", "Y", "YEARS", "YR", "YRS"), "year"), **dict.fromkeys(("YEAROFWEEK",), "isoyear"),
    **dict.fromkeys(("QUARTER", "QTR"), "quarter"), **dict.fromkeys(("MONTH", "MON", "MONS", "MONTHS"), "month"),
    **dict.fromkeys(("WEEK", "W", "WEEKS"), "week"), **dict.fromkeys(("DAY", "D", "DAYS"), "day"),
    **dict.fromkeys(("DAYOFWEEK", "DOW"), "dow"), **dict.fromkeys(("DAYOFWEEK_ISO", "DOW_ISO"), "isodow"),
    **dict.fromkeys(("DOY",), "doy"), **dict.fromkeys(("HOUR", "H", "HOURS", "HR", "HRS"), "hour"),
    **dict.fromkeys(("MINUTE", "M", "MIN", "MINS", "MINUTES"), "minute"),
    **dict.fromkeys(("SECOND", "S", "SEC", "SECONDS", "SECS"), "second"),
}
"""Spark's ``extract``/``date_part`` field names (and their synonyms) → DuckDB's."""


def _sql(template: str, *args: exp.Expression) -> exp.Expression:
    """DuckDB SQL with ``{0}``, ``{1}``... standing for the argument trees."""
    names = [f"__spark_arg_{i}" for i in range(len(args))]
    return _with(template.format(*names), dict(zip(names, args)))


def _with(duckdb_sql: str, values: dict[str, exp.Expression]) -> exp.Expression:
    """DuckDB SQL whose columns named in ``values`` stand for those trees (copied at each use)."""
    tree = sqlglot.parse_one(duckdb_sql, read="duckdb")
    for column in list(tree.find_all(exp.Column)):
        if not column.table and column.name in values:
            column.replace(values[column.name].copy())
    return tree


def _constant_text(node: exp.Expression, function: str, what: str = "pattern") -> str:
    if isinstance(node, exp.Literal) and node.is_string:
        return node.this
    raise MLSQLError(f"{function}: the {what} must be a constant string here (got {node.sql('spark')})")


def _int(node: exp.Expression) -> exp.Expression:
    return exp.Cast(this=node, to=exp.DataType.build("INT"))


def _call(name: str, *args: exp.Expression) -> exp.Anonymous:
    return exp.Anonymous(this=name, expressions=list(args))


class _WrongArity(Exception):
    """A call with a number of arguments the Spark function does not take (named by ``datetime_calls``)."""


def _arity(args: list, low: int, high: int) -> None:
    if not low <= len(args) <= high:
        expected = str(low) if low == high else f"{low} to {high}"
        raise _WrongArity(f"takes {expected} arguments, not {len(args)}")


# -- patterns ---------------------------------------------------------------------------------------

def _formatted(value: exp.Expression, pattern: exp.Expression, function: str) -> exp.Expression:
    """``value`` (a TIMESTAMPTZ) as Spark's formatter writes it: a constant pattern translated now, one
    from a column piece by piece when the query runs (``spark_format_by_pattern``)."""
    if isinstance(pattern, exp.Literal) and pattern.is_string:
        return _with(patterns.format_sql(pattern.this, function), {patterns.VALUE: value})
    pieces = _call("spark_datetime_pattern_pieces", exp.Cast(this=pattern, to=exp.DataType.build("VARCHAR")),
                   exp.Literal.string(function))
    return _call("spark_format_by_pattern", value, pieces)


def _parsed(value: exp.Expression, pattern: exp.Expression | None, function: str) -> exp.Expression:
    """Spark's ToTimestamp: a string read with the pattern (NULL when it does not parse), a date or
    timestamp as it is."""
    if pattern is None:
        return _call("spark_timestamp", value)
    form = patterns.parse_format(_constant_text(pattern, function), function)
    text = exp.Cast(this=value, to=exp.DataType.build("VARCHAR"))
    if form.prefix:
        text = exp.DPipe(this=exp.Literal.string(form.prefix), expression=text, safe=True)
    formats = [exp.Literal.string(f) for f in form.formats]
    parsed: exp.Expression = exp.Anonymous(this="try_strptime", expressions=[
        text, formats[0] if len(formats) == 1 else exp.Array(expressions=formats)])
    if form.two_digit_year:  # strptime's %y puts 69-99 in the 1900s, Spark's yy in the 2000s
        parsed = _sql("CASE WHEN year({0}) < 2000 THEN {0} + INTERVAL 100 YEAR ELSE {0} END", parsed)
    parsed = exp.Cast(this=parsed, to=exp.DataType.build("TIMESTAMPTZ"))
    return _sql("CASE WHEN typeof({0}) = 'VARCHAR' THEN {1} ELSE spark_timestamp({0}) END", value, parsed)


def _date_format(args):
    _arity(args, 2, 2)
    return _formatted(_call("spark_timestamp", args[0]), args[1], "date_format")


def _from_unixtime(args):
    _arity(args, 1, 2)
    pattern = args[1] if len(args) == 2 else exp.Literal.string(FORMAT)
    # the seconds as Spark's implicit cast reads them: 'abc' is NULL, 1.9 is 1 (DuckDB fails, rounds)
    seconds = _sql("to_timestamp({0})", spark_casts.spark_cast(args[0], BIGINT))
    return _formatted(seconds, pattern, "from_unixtime")


def _to_timestamp(args):
    _arity(args, 1, 2)
    return _parsed(args[0], args[1] if len(args) == 2 else None, "to_timestamp")


def _to_date(args):
    _arity(args, 1, 2)
    if len(args) == 1:
        return _call("spark_date", args[0])
    return exp.Cast(this=_parsed(args[0], args[1], "to_date"), to=exp.DataType.build("DATE"))


def _unix_timestamp(function: str, low: int):
    def translate(args):
        _arity(args, low, 2)
        if not args:
            return _call("spark_epoch_seconds", exp.CurrentTimestamp())
        pattern = args[1] if len(args) == 2 else exp.Literal.string(FORMAT)
        return _call("spark_epoch_seconds", _parsed(args[0], pattern, function))
    return translate


# -- fields and arithmetic --------------------------------------------------------------------------

def _field(duckdb_function: str, of: str = "spark_date", offset: int = 0):
    """A Spark function returning an INT field of its argument as a date (or timestamp)."""
    def translate(args):
        _arity(args, 1, 1)
        value = _call(duckdb_function, _call(of, args[0]))
        return _int(exp.Add(this=value, expression=exp.Literal.number(offset)) if offset else value)
    return translate


def _date_add(sign: int):
    def translate(args):
        _arity(args, 2, 2)
        days = _int(args[1])
        return _sql("CAST(spark_date({0}) " + ("+" if sign > 0 else "-") + " {1} AS DATE)", args[0], days)
    return translate


_INTERVAL_PARTS = {  # field → (ANSI interval's part, calendar interval's part): DuckDB SQL of {0}, or of us (its microseconds)
    "year": ("CAST(EXTRACT(year FROM {0}) AS INT)",) * 2,
    "month": ("CAST(EXTRACT(month FROM {0}) AS TINYINT)",) * 2,
    "day": ("CAST(us // 86400000000 AS INT)", "CAST(EXTRACT(day FROM {0}) AS INT)"),
    "hour": ("CAST(us % 86400000000 // 3600000000 AS TINYINT)", "CAST(EXTRACT(hour FROM {0}) AS BIGINT)"),
    "minute": ("CAST(us % 3600000000 // 60000000 AS TINYINT)", "CAST(EXTRACT(minute FROM {0}) AS TINYINT)"),
    "second": ("CAST(us % 60000000 / 1000000 AS DECIMAL(8,6))", "CAST(EXTRACT(microsecond FROM {0}) / 1000000 AS DECIMAL(8,6))"),
}
"""Spark's ExtractIntervalPart: of an ANSI interval (a day-time one is so many microseconds: 40 hours are
a day and 16 hours) and of a calendar interval (months, days and microseconds kept apart; its hours a
BIGINT); DuckDB's EXTRACT reads the parts as a calendar interval's."""


def _extract(field: str, source: exp.Expression, function: str) -> exp.Expression:
    """Spark's ``extract(field FROM source)``/``date_part(field, source)``: int fields, SECOND with its
    fraction as decimal(8,6); of an interval, its own fields (``_INTERVAL_PARTS``)."""
    name = _FIELDS.get(field.upper())
    if name is None:
        raise MLSQLError(f"{function}: the field '{field}' is not a datetime field Spark knows (YEAR, QUARTER, MONTH, "
                         f"WEEK, DAY, DAYOFWEEK, DAYOFWEEK_ISO, DOY, HOUR, MINUTE, SECOND or their synonyms)")
    interval = _interval_form(source)
    if interval is not None:
        if name not in _INTERVAL_PARTS:
            raise MLSQLError(f"{function}: Literals of type '{field.lower()}' are currently not supported for the interval type")
        ansi, calendar = _INTERVAL_PARTS[name]
        part = ansi if interval == "ansi" else calendar
        if re.search(r"\bus\b", part):
            part = "list_transform([epoch_us({0})], lambda us: " + part + ")[1]"
        return _sql(part, source)
    if name in ("hour", "minute"):
        return _sql("CAST(" + name + "(spark_timestamp({0})) AS INT)", source)
    if name == "second":
        return _sql("CAST(microsecond(spark_timestamp({0})) / 1000000 AS DECIMAL(8,6))", source)
    if name == "dow":
        return _sql("CAST(dayofweek(spark_date({0})) + 1 AS INT)", source)
    # EXTRACT, not date_part: a date_part call would be read again as Spark's (datetime_calls)
    return _sql("CAST(EXTRACT(" + name + " FROM spark_date({0})) AS INT)", source)


def _interval_form(node: exp.Expression) -> str | None:
    """``ansi`` for a year-month or day-time interval (a literal with units, a sum of them, ``make_ym_interval``,
    ``make_dt_interval``, a column of such a type), ``calendar`` for Spark's CalendarInterval (``make_interval``,
    a cast of a string, an interval whose Spark type was lost in a table: DuckDB keeps one INTERVAL type),
    None for anything else."""
    t = spark_type(node)
    if interval_fields(t) is not None:
        return "ansi"
    if _is_interval(node):
        return "calendar" if _calendar(node) else "ansi"
    if t is not None and t.this == exp.DataType.Type.INTERVAL:
        return "calendar"
    return None


def _calendar(node: exp.Expression) -> bool:
    if isinstance(node, (exp.Paren, exp.Neg)):
        return _calendar(node.this)
    if isinstance(node, (exp.Add, exp.Sub)):
        return _calendar(node.this) or _calendar(node.expression)
    return (isinstance(node, exp.Interval) and node.args.get("unit") is None) or (
        isinstance(node, exp.Anonymous) and node.name.lower() == "make_interval")


def _is_interval(node: exp.Expression) -> bool:
    """Whether the expression is an interval by its form: a literal, a sum of them, a make_*interval call."""
    if isinstance(node, (exp.Paren, exp.Neg)):
        return _is_interval(node.this)
    if isinstance(node, (exp.Add, exp.Sub)):
        return _is_interval(node.this) and _is_interval(node.expression)
    return isinstance(node, exp.Interval) or (isinstance(node, exp.Anonymous) and node.name.lower() in (
        "make_interval", "make_ym_interval", "make_dt_interval"))


def _interval_units(node: exp.Expression) -> set[str]:
    """The units of an interval literal (or sum of them), upper case and singular; {"TIME"} when unknown."""
    if isinstance(node, (exp.Paren, exp.Neg)):
        return _interval_units(node.this)
    if isinstance(node, (exp.Add, exp.Sub)):
        return _interval_units(node.this) | _interval_units(node.expression)
    if isinstance(node, exp.Interval) and node.unit is not None:
        unit = node.unit
        names = [unit.this, unit.expression] if isinstance(unit, exp.IntervalSpan) else [unit]
        return {n.name.upper().rstrip("S") for n in names}
    if isinstance(node, exp.Anonymous) and node.name.lower() == "make_ym_interval":
        return {"MONTH"}
    return {"TIME"}


def _date_part(args):
    _arity(args, 2, 2)
    return _extract(_constant_text(args[0], "date_part", "field"), args[1], "date_part")


def _truncation(function: str, units: dict[str, str], unit_at: int, template: str, result: str):
    """Spark's ``trunc(date, fmt)`` (a DATE) and ``date_trunc(fmt, ts)`` (a TIMESTAMP, truncated in the
    session time zone): a format Spark does not know gives NULL."""
    def translate(args):
        _arity(args, 2, 2)
        unit = units.get(_constant_text(args[unit_at], function, "format").upper())
        if unit is None:
            return exp.Cast(this=exp.Null(), to=exp.DataType.build(result))
        return _sql(template.replace("UNIT", unit), args[1 - unit_at])
    return translate


_TIMESTAMPADD_UNITS = {"YEAR": "to_years({0})", "QUARTER": "to_months(3 * {0})", "MONTH": "to_months({0})",
                       "WEEK": "to_weeks({0})", "DAY": "to_days({0})", "DAYOFYEAR": "to_days({0})",
                       "HOUR": "to_hours({0})", "MINUTE": "to_minutes({0})", "SECOND": "to_seconds({0})",
                       "MILLISECOND": "to_milliseconds({0})", "MICROSECOND": "to_microseconds({0})"}


def _timestampadd(args):
    """Spark's ``timestampadd(unit, n, x)``: a timestamp (a date is read as one), a timestamp_ntz stays one."""
    _arity(args, 3, 3)
    unit = args[0].name.upper() if isinstance(args[0], (exp.Column, exp.Var)) else _constant_text(args[0], "timestampadd", "unit").upper()
    if unit not in _TIMESTAMPADD_UNITS:
        raise MLSQLError(f"timestampadd: '{unit}' is not a unit Spark adds ({', '.join(_TIMESTAMPADD_UNITS)})")
    interval = _sql(_TIMESTAMPADD_UNITS[unit].format("CAST({0} AS BIGINT)"), args[1])
    return _call("spark_plus_time_interval", args[2], interval)


def _make_timestamp(args):
    _arity(args, 6, 7)
    zone = args[6] if len(args) == 7 else _sql("current_setting('TimeZone')")
    return _call("spark_make_timestamp", *args[:6], zone)


def _make_date(args):
    _arity(args, 3, 3)
    return _sql("try(make_date(CAST({0} AS BIGINT), CAST({1} AS BIGINT), CAST({2} AS BIGINT)))", *args)


def _interval(parts: list[tuple[str, float]], args: list) -> exp.Expression:
    """An INTERVAL built from ``args``, each scaled into the unit DuckDB's ``to_*`` function takes."""
    terms = [_sql(f"{function}(CAST({{0}} * {scale} AS BIGINT))" if scale != 1 else f"{function}(CAST({{0}} AS BIGINT))", arg)
             for (function, scale), arg in zip(parts, args)]
    total = terms[0]
    for term in terms[1:]:
        total = exp.Add(this=total, expression=term)
    return total


def _make_interval(args):
    """Spark's CalendarInterval: months (years and months), days (weeks and days), microseconds."""
    _arity(args, 0, 7)
    args = args + [exp.Literal.number(0)] * (7 - len(args))
    years, months, weeks, days, hours, minutes, seconds = args
    return exp.Paren(this=_sql("to_months(CAST({0} * 12 + {1} AS INT)) + to_days(CAST({2} * 7 + {3} AS INT)) "
                               "+ to_microseconds(CAST({4} * 3600000000 + {5} * 60000000 + round({6} * 1000000) AS BIGINT))",
                               years, months, weeks, days, hours, minutes, seconds))


def _make_ym_interval(args):
    _arity(args, 0, 2)
    args = args + [exp.Literal.number(0)] * (2 - len(args))
    return _sql("to_months(CAST({0} * 12 + {1} AS INT))", *args)


def _make_dt_interval(args):
    _arity(args, 0, 4)
    args = args + [exp.Literal.number(0)] * (4 - len(args))
    return exp.Paren(this=_sql("to_days(CAST({0} AS INT)) + to_microseconds(CAST({1} * 3600000000 + {2} * 60000000 "
                               "+ round({3} * 1000000) AS BIGINT))", *args))


def _simple(template: str, low: int, high: int | None = None):
    def translate(args):
        _arity(args, low, high if high is not None else low)
        return _sql(template, *args)
    return translate


FUNCTIONS: dict[str, Callable[[list[exp.Expression]], exp.Expression]] = {
    "date_format": _date_format,
    "from_unixtime": _from_unixtime,
    "to_timestamp": _to_timestamp,
    "to_date": _to_date,
    "unix_timestamp": _unix_timestamp("unix_timestamp", 0),
    "to_unix_timestamp": _unix_timestamp("to_unix_timestamp", 1),
    "timestamp": _simple("spark_timestamp({0})", 1),
    "date": _simple("spark_date({0})", 1),
    "year": _field("year"), "quarter": _field("quarter"), "month": _field("month"), "day": _field("day"),
    "dayofmonth": _field("day"), "dayofyear": _field("dayofyear"), "weekofyear": _field("weekofyear"),
    "dayofweek": _field("dayofweek", offset=1), "weekday": _field("isodow", offset=-1),
    "hour": _field("hour", "spark_timestamp"), "minute": _field("minute", "spark_timestamp"),
    "second": _field("second", "spark_timestamp"),
    "date_add": _date_add(1), "date_sub": _date_add(-1),
    "datediff": _simple("CAST(spark_date({0}) - spark_date({1}) AS INT)", 2),
    "add_months": _simple("CAST(spark_date({0}) + to_months(CAST({1} AS INT)) AS DATE)", 2),
    "last_day": _simple("last_day(spark_date({0}))", 1),
    "next_day": _simple("spark_next_day({0}, {1})", 2),
    "months_between": lambda args: _simple("spark_months_between({0}, {1}, {2})", 3)(
        args + [exp.true()] if len(args) == 2 else args),
    "trunc": _truncation("trunc", _TRUNC_UNITS, 1, "CAST(date_trunc('UNIT', spark_date({0})) AS DATE)", "DATE"),
    "date_trunc": _truncation("date_trunc", _DATE_TRUNC_UNITS, 0, "date_trunc('UNIT', spark_timestamp({0}))", "TIMESTAMPTZ"),
    "date_part": _date_part, "datepart": _date_part,
    "make_date": _make_date, "make_timestamp": _make_timestamp,
    "make_interval": _make_interval, "make_ym_interval": _make_ym_interval, "make_dt_interval": _make_dt_interval,
    "timestamp_seconds": _simple("spark_micros_to_timestamp(trunc(CAST({0} AS DECIMAL(38,6)) * 1000000))", 1),
    "timestamp_millis": _simple("spark_micros_to_timestamp(CAST({0} AS BIGINT) * 1000)", 1),
    "timestamp_micros": _simple("spark_micros_to_timestamp({0})", 1),
    "unix_seconds": _simple("spark_floor_div(epoch_us(spark_timestamp({0})), 1000000)", 1),
    "unix_millis": _simple("spark_floor_div(epoch_us(spark_timestamp({0})), 1000)", 1),
    "unix_micros": _simple("epoch_us(spark_timestamp({0}))", 1),
    "date_from_unix_date": _simple("CAST(DATE '1970-01-01' + CAST({0} AS INT) AS DATE)", 1),
    "unix_date": _simple("CAST(spark_date({0}) - DATE '1970-01-01' AS INT)", 1),
    "from_utc_timestamp": _simple("spark_from_utc_timestamp({0}, {1})", 2),
    "to_utc_timestamp": _simple("spark_to_utc_timestamp({0}, {1})", 2),
    "timestampadd": _timestampadd,
    "current_timezone": _simple("current_setting('TimeZone')", 0),
}
"""Spark's datetime functions, by lower-case name: each turns the call's arguments into DuckDB SQL."""


def datetime_calls(tree: exp.Expression) -> None:
    """Spark's datetime functions (``FUNCTIONS``) as DuckDB SQL that gives Spark's answers in the
    session time zone: patterns translated once here, fields as INT, ``dayofweek`` with Sunday = 1,
    dates and timestamps read from strings as Spark casts them, NULL where Spark (non-ANSI) gives
    NULL."""
    for node in reversed(list(tree.find_all(exp.Anonymous))):  # innermost first: arguments are copied
        translate = FUNCTIONS.get(node.name.lower())
        if translate is not None:
            try:
                node.replace(translate(list(node.expressions)))
            except _WrongArity as exc:
                raise MLSQLError(f"{node.name} {exc}") from None


def extract_fields(tree: exp.Expression) -> None:
    """Spark's ``extract(field FROM x)``: the field as Spark types it (int; SECOND with its fraction)."""
    for node in reversed(list(tree.find_all(exp.Extract))):
        field = node.this.name if isinstance(node.this, (exp.Var, exp.Column, exp.Identifier)) else node.this.sql()
        node.replace(_extract(field, node.expression, "extract"))


_SPAN_FIELDS = ("DAY", "HOUR", "MINUTE", "SECOND")


def _span_interval(text: str, start: str, end: str) -> exp.Expression:
    """Spark's ANSI interval literal ``INTERVAL 'text' start TO end`` as DuckDB's INTERVAL."""
    bad = MLSQLError(f"Interval string does not match {start} TO {end} format: '{text}'")
    stripped = text.strip()
    if (start, end) == ("YEAR", "MONTH"):
        match = re.fullmatch(r"([+-])?(\d+)-(\d+)", stripped)
        if match is None or int(match.group(3)) > 11:
            raise bad
        months = (int(match.group(2)) * 12 + int(match.group(3))) * (-1 if match.group(1) == "-" else 1)
        return _sql(f"to_months({months})")
    if start not in _SPAN_FIELDS or end not in _SPAN_FIELDS or _SPAN_FIELDS.index(start) >= _SPAN_FIELDS.index(end):
        raise MLSQLError(f"Intervals FROM {start} TO {end} are not supported.")
    fields = _SPAN_FIELDS[_SPAN_FIELDS.index(start):_SPAN_FIELDS.index(end) + 1]
    sign = -1 if stripped.startswith("-") else 1
    parts = re.split(r"[ :]", stripped.lstrip("+-"))
    if len(parts) != len(fields) or not all(re.fullmatch(r"\d+(\.\d{1,9})?" if f == "SECOND" else r"\d+", p)
                                            for f, p in zip(fields, parts)):
        raise bad
    values = dict(zip(fields, parts))
    micros = (int(values.get("HOUR", 0)) * 3600 + int(values.get("MINUTE", 0)) * 60) * 1_000_000
    micros += round(float(values.get("SECOND", 0)) * 1_000_000)
    return exp.Paren(this=_sql(f"to_days({sign * int(values.get('DAY', 0))}) + to_microseconds({sign * micros})"))


INTERVAL_UNITS = {**dict.fromkeys(("YEAR", "MONTH"), "year-month"),
                  **dict.fromkeys(("WEEK", "DAY", "HOUR", "MINUTE", "SECOND", "MILLISECOND", "MICROSECOND"), "day-time")}
"""The units of Spark's interval literals (each also plural), by the family of interval they make."""


def _unit_family(node: exp.Expression) -> str | None:
    unit = node.args.get("unit") if isinstance(node, exp.Interval) else None
    if unit is None or isinstance(unit, exp.IntervalSpan):
        return None
    name = unit.name.upper()
    family = INTERVAL_UNITS.get(name[:-1] if name.endswith("S") else name)
    if family is None:
        raise MLSQLError(f"Error parsing ' {node.this.name} {unit.name.lower()}' to interval, invalid unit "
                         f"'{unit.name.lower()}' (Spark's units: {', '.join(u.lower() for u in INTERVAL_UNITS)})")
    return family


def interval_units(tree: exp.Expression) -> None:
    """Spark 3.3's interval literals with units after their numbers (``interval 2 weeks 3 microseconds``):
    a unit Spark does not know (``nanoseconds``) is its error; year-month and day-time units in one
    literal are its error too ("Cannot mix year-month and day-time fields"); seconds keep microseconds,
    the digits after them dropped (``13.123456789`` is 13.123456; DuckDB rounds); and a literal of several
    units is one value, so ``interval 2 weeks 3 microseconds * 1.5`` multiplies all of it (sqlglot
    writes the sum without parentheses)."""
    for node in list(tree.find_all(exp.Interval)):
        family = _unit_family(node)
        if family == "day-time" and isinstance(node.this, exp.Literal):
            whole, point, fraction = node.this.name.partition(".")
            if len(fraction) > 6 and node.unit.name.upper().startswith("SECOND"):
                node.set("this", exp.Literal.string(f"{whole}{point}{fraction[:6]}"))
    for node in list(tree.find_all(exp.Add, exp.Sub)):
        if isinstance(node.parent, (exp.Add, exp.Sub)):
            continue  # the sum is judged whole, at its top
        literals = list(_interval_terms(node))
        if not literals:
            continue
        if {_unit_family(term) for term in literals} == {"year-month", "day-time"}:
            raise MLSQLError(f"Cannot mix year-month and day-time fields: {node.sql('spark')}")
        if isinstance(node.parent, (exp.Mul, exp.Div)):
            node.replace(exp.Paren(this=node.copy()))


def _interval_terms(node: exp.Expression):
    """The interval literals a sum of them is made of (nothing when anything else is part of it)."""
    if isinstance(node, (exp.Add, exp.Sub)):
        left, right = list(_interval_terms(node.this)), list(_interval_terms(node.expression))
        if left and right:
            yield from left + right
    elif isinstance(node, exp.Interval) and node.args.get("unit") is not None:
        yield node


def interval_literals(tree: exp.Expression) -> None:
    """Spark's ANSI interval literals ``INTERVAL '1-2' YEAR TO MONTH``, ``INTERVAL '1 02:03:04' DAY TO
    SECOND``...: DuckDB reads none of the ``start TO end`` forms."""
    for node in list(tree.find_all(exp.Interval)):
        unit = node.unit
        if isinstance(unit, exp.IntervalSpan):
            value, negate = node.this, False
            if isinstance(value, exp.Neg):
                value, negate = value.this, True
            text = _constant_text(value, "interval", "value")
            interval = _span_interval(text, unit.this.name.upper(), unit.expression.name.upper())
            node.replace(exp.Neg(this=exp.Paren(this=interval)) if negate else interval)


def interval_arithmetic(tree: exp.Expression) -> None:
    """A date, timestamp or string plus (or minus) an interval, as Spark types it: a date plus whole
    days, months or years is a date; plus a time of day it is a timestamp (an instant in the session
    time zone), not DuckDB's time-zone-less TIMESTAMP: ``date'2020-01-01' + interval '2' second`` is
    the TIMESTAMP 2020-01-01 00:00:02. The ``spark_plus_*`` macros pick by the value's type."""
    for node in reversed(list(tree.find_all(exp.Add, exp.Sub))):
        left, right = node.this, node.expression
        if _is_interval(right) and not _is_interval(left):
            value, interval = left, right
        elif isinstance(node, exp.Add) and _is_interval(left) and not _is_interval(right):
            value, interval = right, left
        else:
            continue
        units = _interval_units(interval)
        plain = units <= {"YEAR", "MONTH"} or units <= {"DAY", "WEEK"}
        if isinstance(node, exp.Sub):
            interval = exp.Neg(this=exp.Paren(this=interval))
        node.replace(_call("spark_plus_date_interval" if plain else "spark_plus_time_interval", value, interval))


def timestamp_literals(tree: exp.Expression) -> None:
    """Spark's ``timestamp'2020-01-01 00:00:00Europe/Paris'`` (a zone id right after the time) and
    ``timestamp'2020'``: read as Spark reads a timestamp string (sqlglot writes a cast DuckDB
    refuses)."""
    for node in list(tree.find_all(exp.Cast)):
        if node.to.is_type(exp.DataType.Type.TIMESTAMPTZ) and isinstance(node.this, exp.Literal) and node.this.is_string:
            node.replace(_call("spark_str_to_timestamp", node.this.copy()))


def timestamps_as_text(tree: exp.Expression) -> None:
    """Spark's ``cast(ts AS string)``/``string(ts)``: ``2020-01-01 10:00:00.5`` in the session time
    zone, where DuckDB's cast of a TIMESTAMPTZ appends the offset (``...+00``). The
    ``spark_cast_string`` macro picks by the value's type when it is not known here; a value of a
    known type is cast directly (DuckDB cannot pick the macro's overload for an aggregate's result:
    ``cast(count(*) as string)``)."""
    for node in list(tree.find_all(exp.Cast)):
        if node.to.is_type(*exp.DataType.TEXT_TYPES) and not node.to.expressions and not isinstance(node.this, exp.Null):
            family = kind(spark_type(node.this))
            if family == "timestamp":
                node.replace(_call("spark_timestamp_to_string", node.this))
            elif family is None or family == "other":
                node.replace(_call("spark_cast_string", node.this))


_STEPS = (interval_units, extract_fields, interval_arithmetic, timestamp_literals, timestamps_as_text, datetime_calls, interval_literals)
"""In this order: units checked first; ``extract`` and ``+``/``-`` read interval literals before they are rewritten."""


def datetime_semantics(tree: exp.Expression) -> None:
    """The steps above, for a query that has anything they rewrite: one walk over a query without
    datetime calls, casts, intervals or ``extract``."""
    if any(isinstance(node, (exp.Extract, exp.Interval, exp.Cast))
           or (isinstance(node, exp.Anonymous) and node.name.lower() in FUNCTIONS) for node in tree.walk()):
        for step in _STEPS:
            step(tree)


TRANSFORMS: tuple[Callable[[exp.Expression], None], ...] = (datetime_semantics,)

FAMILY = Family("datetimes", transforms=TRANSFORMS, macros=MACROS, python_functions=(
    PythonFunction("spark_datetime_pattern_pieces", 2, "datetime_patterns:pattern_pieces"),
))
