"""Spark's casts, coercions, literals and arithmetic (non-ANSI, as Byzer runs Spark), on DuckDB
(issue 23, items 1 and 4's result types).

A Spark cast that cannot convert gives NULL, never an error; a fractional number cast to an integer
is truncated; an integer that overflows wraps as Java's does; ``x / 0`` and ``x % 0`` are NULL;
a string meets a number, a date or a boolean by being cast to that type. DuckDB differs on each
(it rounds, fails the query, or reads other forms of text), so ``spark_cast`` writes each
conversion from the Spark type of its argument (``sql_types``) to its target as DuckDB SQL,
calling the ``MACROS`` below where Spark's rules are too long to inline (a connection defines them
as its queries call them: ``families.MACROS``). A conversion Spark refuses is an
``MLSQLError`` naming both types. Where the argument's type cannot be known here, the SQL
decides by ``typeof`` when DuckDB binds it (folded then: no per-row cost).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from functools import lru_cache

import sqlglot
from sqlglot import exp

from ..errors import MLSQLError
from .sql_types import ARITHMETIC, BIGINT, DOUBLE, INTEGRAL, STRING, aggregate_type, arithmetic_type, cast_target
from .sql_types import build, interval_fields, interval_type, kind
from .sql_types import TYPED_LITERAL as _TYPED_LITERAL
from .sql_types import literal_type, precision_scale, set_type, spark_type, text_before, wider_type, written
from .family import Family

T = exp.DataType.Type

_BLANK = r"'^[\x00-\x20\x7F]+|[\x00-\x20\x7F]+$'"  # what Spark's UTF8String.trimAll strips
DATE_TEXT = r"(?s)^([+-]?)([0-9]{4,7})(?:-([0-9]{1,2})(?:-([0-9]{1,2})(?:[ T].*)?)?)?$"
"""Spark's ``stringToDate`` forms: [+-]yyyy[yyy], then -[m]m, then -[d]d and ' ' or 'T' and anything."""
TIMESTAMP_TEXT = (r"(?s)^(?:([+-]?[0-9]{4,7})(?:-([0-9]{1,2})(?:-([0-9]{1,2})(?:[ T]([0-9]{1,2})?(?::([0-9]{1,2})"
                  r"(?::([0-9]{1,2})(?:\.([0-9]*))?)?)?)?)?)?|T?([0-9]{1,2}):([0-9]{1,2})(?::([0-9]{1,2})(?:\.([0-9]*))?)?)"
                  r"(?:\s*((?:Z|[+-]|UTC|GMT|UT|[A-Za-z]+/).*))?$")
"""Spark's ``stringToTimestamp`` forms: a date as above, then [h]h[:[m]m[:[s]s[.fraction]]], or a time
alone (of today); after the seconds a zone (Z, +hh:mm, UTC+1, Europe/Paris)."""
ZONE_OFFSET = r"^(?:UTC|GMT|UT)?([+-])([0-9]{1,2})(?::?([0-9]{2}))?(?::?([0-9]{2}))?$"
"""A zone written as an offset from UTC, as java.time's ``ZoneId.of`` reads one."""
_NUMBER = r"'[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?'"  # java.math.BigDecimal's syntax

MACROS: dict[str, str] = {  # each after the macros it calls
    "spark_trim_all": f"(s) AS regexp_replace(s, {_BLANK}, '', 'g')",
    # UTF8String.toLong: [+-]digits, a fraction after '.' dropped (its digits checked), else NULL
    "spark_text_to_bigint": r"""(t) AS CASE WHEN regexp_full_match(t, '[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]*)')
        THEN TRY_CAST(regexp_extract(t, '^[+-]?') || '0' || regexp_extract(t, '^[+-]?([0-9]*)', 1) AS BIGINT) END""",
    "spark_str_to_bigint": """(s) AS spark_text_to_bigint(spark_trim_all(s))""",
    "spark_bigint_within": "(v, low, high) AS CASE WHEN v BETWEEN low AND high THEN v END",
    # java.lang.Double.parseDouble (suffixes d/f, NaN, Infinity), then Spark's inf/nan in any case
    "spark_text_to_double": rf"""(t) AS CASE
        WHEN regexp_full_match(t, {_NUMBER[:-1]}[dDfF]?') THEN TRY_CAST(rtrim(t, 'dDfF') AS DOUBLE)
        WHEN regexp_full_match(t, '[+-]?NaN') OR lower(t) = 'nan' THEN CAST('NaN' AS DOUBLE)
        WHEN regexp_full_match(t, '[+]?Infinity') OR lower(t) IN ('inf', '+inf', 'infinity', '+infinity')
            THEN CAST('Infinity' AS DOUBLE)
        WHEN t = '-Infinity' OR lower(t) IN ('-inf', '-infinity') THEN CAST('-Infinity' AS DOUBLE) END""",
    "spark_str_to_double": """(s) AS spark_text_to_double(spark_trim_all(s))""",
    # Java's (float) of a double: out of range is an infinity, not an error
    "spark_double_to_float": """(d) AS CASE WHEN isnan(d) THEN CAST('NaN' AS FLOAT) WHEN d > 3.4028235677973366e38 THEN CAST('Infinity' AS FLOAT)
        WHEN d < -3.4028235677973366e38 THEN CAST('-Infinity' AS FLOAT) ELSE CAST(d AS FLOAT) END""",
    # the text of a java.math.BigDecimal, or NULL (Decimal.fromString); TRY_CAST then rounds HALF_UP
    "spark_decimal_text": f"""(s) AS CASE WHEN regexp_full_match(trim(s), {_NUMBER}) THEN trim(s) END""",
    # StringUtils.isTrueString / isFalseString
    "spark_str_to_boolean": """(s) AS CASE WHEN lower(spark_trim_all(s)) IN ('t', 'true', 'y', 'yes', '1') THEN true
        WHEN lower(spark_trim_all(s)) IN ('f', 'false', 'n', 'no', '0') THEN false END""",
    # DateTimeUtils.stringToDate (DATE_TEXT's parts; a year before 1 is DuckDB's BC)
    "spark_date_of": """(p) AS CASE WHEN p.y = '' THEN NULL
        WHEN p.sign = '-' THEN TRY_CAST(lpad(CAST(CAST(p.y AS INTEGER) + 1 AS VARCHAR), 4, '0') || '-'
            || coalesce(nullif(p.m, ''), '1') || '-' || coalesce(nullif(p.d, ''), '1') || ' (BC)' AS DATE)
        ELSE TRY_CAST(p.y || '-' || coalesce(nullif(p.m, ''), '1') || '-' || coalesce(nullif(p.d, ''), '1') AS DATE) END""",
    # (the text's parts computed once, through a one-element list: a macro's argument is copied
    # wherever its body names it, and the parts are named 10-22 times)
    "spark_str_to_date": f"""(s) AS list_transform([regexp_extract(spark_trim_all(s), '{DATE_TEXT}', ['sign', 'y', 'm', 'd'])],
        lambda p: spark_date_of(p))[1]""",
    # a zone offset as java.time's ZoneId reads one ([UTC|GMT|UT]+h, +hh, +hh:mm, +hhmm, +hh:mm:ss, +hhmmss), as
    # +hh:mm:ss for DuckDB (which reads neither the prefix before an offset nor an offset without its colons)
    "spark_zone_offset": rf"""(z) AS list_transform([regexp_extract(z, '{ZONE_OFFSET}', ['sign', 'h', 'm', 's'])], lambda o:
        o.sign || lpad(o.h, 2, '0') || ':' || coalesce(nullif(o.m, ''), '00') || ':' || coalesce(nullif(o.s, ''), '00'))[1]""",
    # DateTimeUtils.stringToTimestamp (TIMESTAMP_TEXT's parts), in the session time zone unless the text has one
    "spark_timestamp_of": f"""(p) AS CASE WHEN p.y = '' AND p.th = '' THEN NULL
        WHEN p.z <> '' AND p.s = '' AND p.ts = '' THEN NULL
        ELSE TRY_CAST(CASE WHEN p.y <> '' THEN p.y || '-' || coalesce(nullif(p.mo, ''), '1') || '-' || coalesce(nullif(p.d, ''), '1')
                           ELSE strftime(current_date, '%Y-%m-%d') END
            || ' ' || lpad(coalesce(nullif(p.h || p.th, ''), '0'), 2, '0')
            || ':' || lpad(coalesce(nullif(p.mi || p.tmi, ''), '0'), 2, '0')
            || ':' || lpad(coalesce(nullif(p.s || p.ts, ''), '0'), 2, '0')
            || '.' || rpad(left(p.f || p.tf, 6), 6, '0')
            || CASE WHEN p.z = 'Z' THEN '+00:00' WHEN p.z = '' THEN p.z
                    WHEN regexp_full_match(p.z, '{ZONE_OFFSET}') THEN spark_zone_offset(p.z) ELSE ' ' || p.z END AS TIMESTAMPTZ) END""",
    "spark_str_to_timestamp": f"""(s) AS list_transform([regexp_extract(spark_trim_all(s), '{TIMESTAMP_TEXT}',
        ['y', 'mo', 'd', 'h', 'mi', 's', 'f', 'th', 'tmi', 'ts', 'tf', 'z'])], lambda p: spark_timestamp_of(p))[1]""",
    # Java's narrowing of integers: the low bits, as two's complement (the remainder first, so that
    # nothing on the way overflows the argument's own type)
    "spark_wrap_tinyint": "(x) AS CAST((x % 256 + 384) % 256 - 128 AS TINYINT)",
    "spark_wrap_smallint": "(x) AS CAST((x % 65536 + 98304) % 65536 - 32768 AS SMALLINT)",
    "spark_wrap_int": "(x) AS CAST((x % 4294967296 + 6442450944) % 4294967296 - 2147483648 AS INTEGER)",
    "spark_wrap_bigint": """(x) AS CAST((CAST(x AS HUGEINT) % 18446744073709551616 + 27670116110564327424)
        % 18446744073709551616 - 9223372036854775808 AS BIGINT)""",
    # Java's (int)/(long) of a double: toward zero, NaN is 0, beyond the range the nearest end
    "spark_double_to_int": """(d) AS CAST(CASE WHEN isnan(CAST(d AS DOUBLE)) THEN 0 WHEN CAST(d AS DOUBLE) >= 2147483647 THEN 2147483647
        WHEN CAST(d AS DOUBLE) <= -2147483648 THEN -2147483648 ELSE CAST(trunc(CAST(d AS DOUBLE)) AS BIGINT) END AS INTEGER)""",
    "spark_double_to_bigint": """(d) AS CASE WHEN isnan(CAST(d AS DOUBLE)) THEN 0 WHEN CAST(d AS DOUBLE) >= 9223372036854775807 THEN 9223372036854775807
        WHEN CAST(d AS DOUBLE) <= -9223372036854775808 THEN -9223372036854775808 ELSE CAST(trunc(CAST(d AS DOUBLE)) AS BIGINT) END""",
    # Java's Double.toString / Float.toString, from the shortest digits that read back (DuckDB's own
    # text of the number: '1.5e+20', '0.00123', '1234.0'): its significant digits and power of ten,
    # then plain from 10^-3 to 10^7, else d.dddE±n
    "spark_shortest_digits": """(t) AS coalesce(nullif(rtrim(ltrim(replace(split_part(t, 'e', 1), '.', ''), '0'), '0'), ''), '0')""",
    "spark_decimal_exponent": """(t) AS coalesce(TRY_CAST(nullif(split_part(t, 'e', 2), '') AS INTEGER), 0)
        + length(split_part(split_part(t, 'e', 1), '.', 1)) - 1
        - (length(replace(split_part(t, 'e', 1), '.', '')) - length(ltrim(replace(split_part(t, 'e', 1), '.', ''), '0')))""",
    "spark_digits_to_string": """(digits, e) AS CASE
        WHEN e >= 7 OR e < -3 THEN left(digits, 1) || '.' || coalesce(nullif(substr(digits, 2), ''), '0') || 'E' || CAST(e AS VARCHAR)
        WHEN e < 0 THEN '0.' || repeat('0', -e - 1) || digits
        WHEN length(digits) > e + 1 THEN left(digits, e + 1) || '.' || substr(digits, e + 2)
        ELSE rpad(digits, CAST(e + 1 AS INTEGER), '0') || '.0' END""",
    # (the text's digits and exponent computed once each, through one-element lists: a macro's
    # argument is copied wherever it is named, and copied 43 times this took 15 us a value)
    "spark_real_to_string": """(d, text) AS CASE WHEN isnan(d) THEN 'NaN' WHEN isinf(d) THEN CASE WHEN d > 0 THEN 'Infinity' ELSE '-Infinity' END
        WHEN d = 0 THEN CASE WHEN signbit(d) THEN '-0.0' ELSE '0.0' END
        ELSE (CASE WHEN d < 0 THEN '-' ELSE '' END) || list_transform([ltrim(text, '-')], lambda t: list_transform(
            [{'digits': spark_shortest_digits(t), 'e': spark_decimal_exponent(t)}],
            lambda p: spark_digits_to_string(p.digits, p.e))[1])[1] END""",
    # a timestamp as Spark prints it: no fraction when it is zero, else without trailing zeros
    "spark_timestamp_to_string": """(t) AS strftime(t, '%Y-%m-%d %H:%M:%S') || rtrim(rtrim(strftime(t, '.%f'), '0'), '.')""",
    # an integer's bytes, big-endian two's complement (Spark's cast of tinyint ... bigint to binary)
    "spark_integer_to_binary": """(x, width) AS unhex(right(lpad(hex(CAST(x AS BIGINT)), 16, CASE WHEN x < 0 THEN 'F' ELSE '0' END), width * 2))""",
    # Spark's pmod: the remainder, made positive for a positive divisor; NULL for a zero divisor
    "spark_pmod": """(a, n) AS CASE WHEN a % NULLIF(n, 0) < 0 THEN (a % NULLIF(n, 0) + n) % NULLIF(n, 0) ELSE a % NULLIF(n, 0) END""",
    # a decimal's digits without the point, as an integer (its unscaled value)
    "spark_unscaled": """(x) AS CAST(replace(CAST(x AS VARCHAR), '.', '') AS HUGEINT)""",
    # n / d rounded half away from zero (java.math.RoundingMode.HALF_UP), NULL for d = 0, without
    # overflowing on the way (the remainder is compared with what is left of d, not doubled)
    "spark_rounded_quotient": """(n, d) AS CASE WHEN d <> 0 THEN sign(n) * sign(d) * (abs(n) // abs(d)
        + CASE WHEN abs(n) % abs(d) >= abs(d) - abs(n) % abs(d) THEN 1 ELSE 0 END) END""",
    # seconds since the epoch of a timestamp, floored (Spark's cast of a timestamp to an integer)
    "spark_timestamp_seconds": """(t) AS CAST(floor(epoch_us(t) / 1000000) AS BIGINT)""",
    # a day-time interval of so many microseconds, as DuckDB's days and microseconds (a day is 24 hours)
    "spark_day_time_of_micros": """(us) AS list_transform([CAST(us AS BIGINT)], lambda n:
        to_days(CAST(n // 86400000000 AS INTEGER)) + to_microseconds(n % 86400000000))[1]""",
    # an ANSI interval as Cast writes it (IntervalUtils' ANSI style): INTERVAL '-13-2' YEAR TO MONTH, INTERVAL '3' DAY,
    # INTERVAL '1 02:03:04.5' DAY TO SECOND; the fields are its Spark type's, known while translating
    "spark_interval_sign": "(n) AS CASE WHEN n < 0 THEN '-' ELSE '' END",
    "spark_year_month_text": """(i, fields) AS list_transform([datepart('year', i) * 12 + datepart('month', i)], lambda n:
        'INTERVAL ''' || spark_interval_sign(n) || CASE fields WHEN 'YEAR' THEN CAST(abs(n) // 12 AS VARCHAR)
            WHEN 'MONTH' THEN CAST(abs(n) AS VARCHAR) ELSE CAST(abs(n) // 12 AS VARCHAR) || '-' || CAST(abs(n) % 12 AS VARCHAR) END
        || ''' ' || fields)[1]""",
    # the seconds with a leading zero and the fraction without its trailing zeros (BigDecimal.stripTrailingZeros)
    "spark_interval_seconds": """(us) AS CASE WHEN us < 10000000 THEN '0' ELSE '' END || CAST(us // 1000000 AS VARCHAR)
        || CASE WHEN us % 1000000 = 0 THEN '' ELSE '.' || rtrim(printf('%06d', us % 1000000), '0') END""",
    "spark_day_time_text": """(i, first, last) AS list_transform([epoch_us(i)], lambda us: list_transform([abs(us)], lambda a:
        'INTERVAL ''' || spark_interval_sign(us) || CASE first WHEN 'DAY' THEN CAST(a // 86400000000 AS VARCHAR)
            WHEN 'HOUR' THEN printf('%02d', a // 3600000000) WHEN 'MINUTE' THEN printf('%02d', a // 60000000)
            ELSE spark_interval_seconds(a) END
        || CASE WHEN first = 'DAY' AND last <> 'DAY' THEN ' ' || printf('%02d', a % 86400000000 // 3600000000) ELSE '' END
        || CASE WHEN first IN ('DAY', 'HOUR') AND last IN ('MINUTE', 'SECOND') THEN ':' || printf('%02d', a % 3600000000 // 60000000) ELSE '' END
        || CASE WHEN first <> 'SECOND' AND last = 'SECOND' THEN ':' || spark_interval_seconds(a % 60000000) ELSE '' END
        || ''' ' || CASE WHEN first = last THEN first ELSE first || ' TO ' || last END)[1])[1]""",
}


def _sql(template: str, move: bool = False, **args: exp.Expression) -> exp.Expression:
    """DuckDB SQL from a template whose placeholders ``_name`` are columns, filled with copies of
    ``args``; ``move``: the first use of each takes the node itself (the caller gives it up: no
    copy of a subtree at every level of nested arithmetic)."""
    tree = _template(template).copy()
    used: set[str] = set()
    for column in list(tree.find_all(exp.Column)):
        name = column.name[1:]
        if column.name.startswith("_") and name in args:
            column.replace(args[name] if move and name not in used else args[name].copy())
            used.add(name)
    return tree


@lru_cache(maxsize=512)
def _template(template: str) -> exp.Expression:
    """A DuckDB template as a tree whose DuckDB built-ins ``typeof`` and ``format`` are plain calls:
    the Spark rewrites that run after this family read ``exp.Typeof``/``exp.Format`` as Spark's
    ``typeof``/``format_string`` and would rewrite the guards written here (``typeof(x) = 'VARCHAR'``
    would compare Spark's type name ``string``)."""
    def plain(node: exp.Expression) -> exp.Expression:
        if isinstance(node, (exp.Typeof, exp.Format)):
            name = "typeof" if isinstance(node, exp.Typeof) else "format"
            return exp.Anonymous(this=name, expressions=[node.this, *node.expressions])
        return node

    return sqlglot.parse_one(template, read="duckdb").transform(plain, copy=False)


def spark_name(t: exp.DataType) -> str:
    """A type as Spark names it in messages (``int``, ``decimal(10,2)``, ``string``)."""
    return t.sql("spark").lower().replace(" ", "")


# -- casts ----------------------------------------------------------------------------------------------

_INTEGRAL_NAMES = {T.TINYINT: "tinyint", T.SMALLINT: "smallint", T.INT: "int", T.BIGINT: "bigint"}
_RANGES = {T.TINYINT: (-2**7, 2**7 - 1), T.SMALLINT: (-2**15, 2**15 - 1), T.INT: (-2**31, 2**31 - 1),
           T.BIGINT: (-2**63, 2**63 - 1)}
_BYTES = {T.TINYINT: 1, T.SMALLINT: 2, T.INT: 4, T.BIGINT: 8}


def spark_cast(node: exp.Expression, target: exp.DataType, source: exp.DataType | None = None) -> exp.Expression:
    """DuckDB SQL for Spark's ``CAST(node AS target)`` (non-ANSI); ``source``: Spark's type of
    ``node`` when the caller knows it. Raises ``MLSQLError`` for a conversion Spark refuses."""
    target = cast_target(target)
    source = source or spark_type(node)
    to, of = kind(target), kind(source)
    if to == "string" and source is not None and source.this in (T.ARRAY, T.MAP, T.STRUCT):
        result = _nested_to_string(node, source)
    elif to == "string" and interval_fields(source) is not None:
        result = _interval_to_string(node, *interval_fields(source))
    elif to not in _CONVERTERS:  # arrays, maps, structs, intervals: DuckDB's TRY_CAST
        result = _try(node, target)
    elif of == "other":  # an interval, a time: the cast as written, for the datetime rewrites (spark_datetime)
        result = _plain(node, target)
    elif of is None:
        result = _cast_of_unknown(node, target)
    elif source == target:  # still a cast: CAST(2 AS INT) is no literal to decimal arithmetic
        result = _plain(node, target) if isinstance(node, (exp.Literal, exp.Neg)) else node.copy()
    elif of == "null" or (of == to and to in ("string", "boolean", "binary", "date")):
        result = _plain(node, target)
    else:
        convert = _CONVERTERS[to].get(of)
        if convert is None:
            raise MLSQLError(f"cannot cast {spark_name(source)} to {spark_name(target)} (Spark's CAST does not convert these)")
        result = convert(node, target, source)
    return set_type(result, target)


def _plain(node: exp.Expression, target: exp.DataType) -> exp.Expression:
    return exp.Cast(this=node.copy(), to=target.copy())


def _try(node: exp.Expression, target: exp.DataType, move: bool = False) -> exp.Expression:
    return exp.TryCast(this=node if move else node.copy(), to=target.copy())


def _null(node: exp.Expression, target: exp.DataType) -> exp.Expression:
    return exp.Cast(this=exp.Null(), to=target.copy())


def _to_integral(node, target, source):
    """Strings parse as ``UTF8String.toLong`` (fraction dropped; out of range NULL); wider
    integers, decimals and timestamps (their seconds) wrap; fractional numbers truncate toward zero
    and saturate at int/bigint's ends (then wrap to tinyint/smallint); dates give NULL."""
    name, of = _INTEGRAL_NAMES[target.this], kind(source)
    low, high = _RANGES[target.this]
    if of == "string":
        parsed = _sql("spark_str_to_bigint(_x)", x=node)
        if target.this != T.BIGINT:
            parsed = _sql(f"spark_bigint_within(_x, {low}, {high})", x=parsed)
        return _plain(parsed, target)
    if of == "boolean":
        return _plain(node, target)
    if of == "integral":
        if INTEGRAL.index(source.this) <= INTEGRAL.index(target.this):
            return _plain(node, target)
        return _sql(f"spark_wrap_{name}(_x)", x=node)
    if of == "fractional":
        saturated = _sql(f"spark_double_to_{'bigint' if target.this == T.BIGINT else 'int'}(_x)", x=node)
        return saturated if target.this in (T.INT, T.BIGINT) else _sql(f"spark_wrap_{name}(_x)", x=saturated)
    if of == "decimal":
        return _sql(f"spark_wrap_{name}(CAST(trunc(_x) AS HUGEINT))", x=node)
    if of == "timestamp":
        seconds = _sql("spark_timestamp_seconds(_x)", x=node)
        return seconds if target.this == T.BIGINT else _sql(f"spark_wrap_{name}(_x)", x=seconds)
    return _null(node, target)  # a date


def _to_fractional(node, target, source):
    """Strings parse as Java's ``Double.parseDouble``; a timestamp is its seconds; a date NULL."""
    of, single = kind(source), target.this == T.FLOAT
    if of == "string":
        parsed = _sql("spark_str_to_double(_x)", x=node)
    elif of == "timestamp":
        parsed = _sql("epoch_us(_x) / 1000000.0", x=node)
    elif of == "date":
        return _null(node, target)
    elif single and of in ("fractional", "decimal", "integral") and source.this != T.FLOAT:
        parsed = _plain(node, exp.DataType.build("DOUBLE"))
    else:
        return _plain(node, target)
    return _sql("spark_double_to_float(_x)", x=parsed) if single else parsed


def _to_decimal(node, target, source):
    """Rounded HALF_UP to the scale, NULL when it does not fit (``Decimal.changePrecision``); a
    string read as ``java.math.BigDecimal``; a double by its shortest digits (``Decimal(double)``);
    NaN and infinities NULL; a timestamp its seconds; a date NULL."""
    of = kind(source)
    if of == "string":
        return _try(_sql("spark_decimal_text(_x)", x=node), target)
    if of == "fractional":  # a FLOAT widened to DOUBLE first, as Spark does
        return _try(_sql("CASE WHEN isfinite(_x) THEN CAST(CAST(_x AS DOUBLE) AS VARCHAR) END", x=node), target)
    if of == "timestamp":
        return _try(_sql("epoch_us(_x) / 1000000", x=node), target)
    if of == "date":
        return _null(node, target)
    return _try(node, target)


def _by_template(templates: dict[str, str | None], otherwise: str) -> Callable:
    """A converter that writes the DuckDB template of the source's family (``_x`` the value; None:
    a NULL of the target type)."""
    def convert(node, target, source):
        template = templates.get(kind(source), otherwise)
        return _null(node, target) if template is None else _sql(template, x=node)
    return convert


_to_string = _by_template({"fractional": "spark_real_to_string(_x, CAST(_x AS VARCHAR))",
                           "timestamp": "spark_timestamp_to_string(_x)", "binary": "decode(_x)"}, "CAST(_x AS VARCHAR)")


def _nested_to_string(node: exp.Expression, source: exp.DataType) -> exp.Expression:
    """Spark's text of an array (``[1, null]``), a map (``{a -> 1}``) and a struct (``{1, x}``): each
    element cast to a string as Spark casts it, ``null`` for NULL."""
    def element(value: exp.Expression, t: exp.DataType) -> exp.Expression:
        return _sql("coalesce(_v, 'null')", v=spark_cast(value, STRING, t))

    if source.this == T.ARRAY:
        item = element(exp.column("spark_e"), source.expressions[0])
        return _sql("'[' || array_to_string(list_transform(_x, lambda spark_e: _item), ', ') || ']'", x=node, item=item)
    if source.this == T.MAP:
        key, value = source.expressions
        entry = _sql("_k || ' -> ' || _v", k=element(_sql("spark_e.key"), key), v=element(_sql("spark_e.value"), value))
        return _sql("'{' || array_to_string(list_transform(map_entries(_x), lambda spark_e: _entry), ', ') || '}'",
                    x=node, entry=entry)
    fields = [element(_sql("struct_extract(_x, _name)", x=node, name=exp.Literal.string(f.name)), f.args["kind"])
              for f in source.expressions]
    return _sql("'{' || " + " || ', ' || ".join(f"_f{i}" for i in range(len(fields))) + " || '}'",
                **{f"f{i}": f for i, f in enumerate(fields)}) if fields else exp.Literal.string("{}")


def _interval_to_string(node: exp.Expression, start: str, end: str) -> exp.Expression:
    """Spark's cast of an ANSI interval to a string, by the fields of its type (``spark_year_month_text``,
    ``spark_day_time_text``)."""
    if start in ("YEAR", "MONTH"):
        fields = start if start == end else f"{start} TO {end}"
        return _sql("spark_year_month_text(_x, _f)", x=node, f=exp.Literal.string(fields))
    return _sql("spark_day_time_text(_x, _s, _e)", x=node, s=exp.Literal.string(start), e=exp.Literal.string(end))


# a string as StringUtils.isTrueString/isFalseString; a number or timestamp: not zero; a date NULL
_to_boolean = _by_template({"string": "spark_str_to_boolean(_x)", "timestamp": "epoch_us(_x) <> 0", "date": None}, "_x <> 0")


def _to_date(node, target, source):
    if kind(source) == "string":
        return _sql("spark_str_to_date(_x)", x=node)
    return _plain(node, target)  # a timestamp: its date in the session time zone


def _to_timestamp(node, target, source):
    """A string as ``DateTimeUtils.stringToTimestamp``; numbers are seconds since the epoch (NaN
    and infinities NULL); true is one microsecond."""
    of = kind(source)
    if of == "string":
        parsed = _sql("spark_str_to_timestamp(_x)", x=node)
    elif of in ("integral", "decimal", "fractional"):
        parsed = _sql("CASE WHEN isfinite(CAST(_x AS DOUBLE)) THEN make_timestamptz(CAST(trunc(CAST(_x AS DOUBLE) * 1000000) AS BIGINT)) END",
                      x=node)
    elif of == "boolean":
        parsed = _sql("make_timestamptz(CAST(_x AS BIGINT))", x=node)
    else:
        parsed = _plain(node, exp.DataType.build("TIMESTAMPTZ"))
    return parsed if target.this == T.TIMESTAMPTZ else _plain(parsed, target)


def _to_binary(node, target, source):
    if kind(source) == "string":
        return _sql("encode(_x)", x=node)
    return _sql(f"spark_integer_to_binary(_x, {_BYTES[source.this]})", x=node)


_NUMERIC_SOURCES = ("string", "boolean", "integral", "fractional", "decimal", "date", "timestamp")
_CONVERTERS: dict[str, dict[str, Callable]] = {
    "integral": dict.fromkeys(_NUMERIC_SOURCES, _to_integral),
    "fractional": dict.fromkeys(_NUMERIC_SOURCES, _to_fractional),
    "decimal": dict.fromkeys(_NUMERIC_SOURCES, _to_decimal),
    "string": dict.fromkeys(_NUMERIC_SOURCES + ("binary",), _to_string),
    "boolean": dict.fromkeys(_NUMERIC_SOURCES, _to_boolean),
    "date": dict.fromkeys(("string", "date", "timestamp"), _to_date),
    "timestamp": dict.fromkeys(_NUMERIC_SOURCES, _to_timestamp),
    "binary": dict.fromkeys(("string", "integral"), _to_binary),
}
"""Spark's ``Cast.canCast`` (non-ANSI): target family → source family → how; a pair not here is an error."""


def as_text(node: exp.Expression) -> exp.Expression:
    """A value of a type only DuckDB's binding knows, as text, in a branch taken only for text: a call
    that binds for every type (a cast would be rewritten by the datetime family, whose macro cannot
    bind an argument of no type yet, such as an alias in HAVING)."""
    return _sql("format('{}', _x)", x=node)


def _cast_of_unknown(node: exp.Expression, target: exp.DataType) -> exp.Expression:
    """A cast of a value whose type only DuckDB's binding knows (a UDF's result): text takes Spark's
    parsing, anything else DuckDB's ``TRY_CAST``; ``typeof`` is folded when the query is bound."""
    to = kind(target)
    if to not in ("integral", "fractional", "decimal", "boolean", "date", "timestamp"):
        return _try(node, target)
    text = spark_cast(as_text(node), target, STRING)
    otherwise = _try(node, target)
    if to == "integral":  # a DOUBLE truncates
        as_double = spark_cast(_sql("TRY_CAST(_x AS DOUBLE)", x=node), target, DOUBLE)
        otherwise = _sql("CASE WHEN typeof(_x) IN ('DOUBLE', 'FLOAT') THEN _double ELSE _other END",
                         x=node, double=as_double, other=otherwise)
    return _sql("CASE WHEN typeof(_x) = 'VARCHAR' THEN _text ELSE _other END", x=node, text=text, other=otherwise)


def innermost_first(tree: exp.Expression, *types: type) -> list[exp.Expression]:
    """The nodes of those types, each after the nodes inside it and left to right (the order Spark
    meets them in: an outer rewrite knows its arguments' types, and an error names the first).
    From sqlglot's own depth-first walk (compiled): a node is let out once the walk has left it."""
    found: list[exp.Expression] = []
    open_: list[exp.Expression] = []
    for node in tree.find_all(*types, bfs=False):
        while open_ and not _inside_of(node, open_[-1]):
            found.append(open_.pop())
        open_.append(node)
    found.extend(reversed(open_))
    return found


def _inside_of(node: exp.Expression, ancestor: exp.Expression) -> bool:
    while node is not None:
        node = node.parent
        if node is ancestor:
            return True
    return False


def casts_as_spark_does(tree: exp.Expression) -> None:
    """Spark's ``CAST(x AS t)``, ``t(x)`` (``int(x)``, ``string(x)`` ...) with Spark's results
    (``spark_cast``), innermost first."""
    for node in innermost_first(tree, exp.Cast, exp.TryCast):
        if not node.meta.get(_TYPED_LITERAL):
            node.replace(spark_cast(node.this, node.to))


# -- result types -------------------------------------------------------------------------------------

_TEXT_OF = ("timestamp", "date", "fractional", "decimal", "boolean", "integral")

STRING_ARGUMENTS: dict[type, tuple[str, ...]] = {
    exp.Length: ("this",), exp.Upper: ("this",), exp.Lower: ("this",), exp.Initcap: ("this",), exp.Substring: ("this",),
    exp.StrPosition: ("this", "substr"), exp.Trim: ("this",), exp.Left: ("this",), exp.Right: ("this",),
    exp.Like: ("this", "expression"), exp.RegexpLike: ("this",), exp.Pad: ("this",), exp.Replace: ("this",),
    exp.RegexpReplace: ("this",), exp.RegexpSplit: ("this",), exp.Ascii: ("this",), exp.Repeat: ("this",),
}
"""The string functions whose arguments Spark casts to a string (ImplicitTypeCasts), by sqlglot's class: which arguments."""


def text_arguments_cast_as_spark_does(tree: exp.Expression) -> None:
    """Where Spark wants a string it casts another simple type as its CAST does (ImplicitTypeCasts): the
    arguments of ``concat``, ``||``, ``concat_ws`` and the string functions (``STRING_ARGUMENTS``), the
    elements of ``array_join``'s array. A timestamp is ``2020-01-01 10:11:12.5`` in the session time zone
    (DuckDB's own cast appends the offset: ``length(timestamp'...')`` would count it), a double as
    Java writes it."""
    for node in list(tree.find_all(exp.Concat, exp.DPipe, exp.ConcatWs, exp.ArrayToString, *STRING_ARGUMENTS)):
        if isinstance(node, exp.ArrayToString):
            _elements_as_text(node.this)
            continue
        if isinstance(node, (exp.Concat, exp.DPipe, exp.ConcatWs)):
            arguments = [node.this, node.expression] if isinstance(node, exp.DPipe) else list(node.expressions)
        else:
            arguments = [node.args.get(key) for key in STRING_ARGUMENTS[type(node)]]
        for argument in arguments:
            t = spark_type(argument) if isinstance(argument, exp.Expression) else None
            if kind(t) in _TEXT_OF:
                argument.replace(spark_cast(argument.copy(), STRING, t))


def _elements_as_text(array: exp.Expression) -> None:
    t = spark_type(array)
    element = t.expressions[0] if t is not None and t.this == T.ARRAY and t.expressions else None
    if kind(element) in _TEXT_OF:
        text = spark_cast(exp.column("spark_e"), STRING, element)
        array.replace(set_type(_sql("list_transform(_x, lambda spark_e: _text)", x=array.copy(), text=text),
                               exp.DataType(this=T.ARRAY, nested=True, expressions=[STRING])))


def _call_of(aggregate: exp.Expression) -> exp.Expression:
    """The whole call of an aggregate: with its FILTER and OVER clauses, which come after it."""
    call = aggregate
    while isinstance(call.parent, (exp.Filter, exp.Window, exp.IgnoreNulls, exp.RespectNulls)) and call.arg_key == "this":
        call = call.parent
    return call


def sums_typed_as_spark(tree: exp.Expression) -> None:
    """Spark's ``sum`` of integers is a BIGINT that wraps on overflow, of DECIMAL(p, s) a DECIMAL(p + 10, s)
    (NULL on overflow); DuckDB's are HUGEINT and DECIMAL(38, s). A sum whose argument's type is not
    known here is left for the engine to fix once DuckDB has bound the query (``sums_left_untyped``)."""
    for node in list(tree.find_all(exp.Sum)):
        argument, result = spark_type(node.this), spark_type(node)
        if result is None:
            continue  # left for binding: see sums_left_untyped
        node.meta[TYPED_SUM] = True
        call = _call_of(node)
        if kind(argument) == "integral":
            call.replace(set_type(_sql("spark_wrap_bigint(_x)", x=call), BIGINT))
        elif kind(argument) == "decimal":
            call.replace(set_type(_try(call, result), result))


TYPED_SUM = "spark_typed_sum"  # meta flag of a sum given Spark's type here


_HUGEINT_CALLS = frozenset({"count_if", "countif", "list_sum", "array_sum", "list_aggregate", "array_aggregate",
                            "sum_no_overflow"})
"""DuckDB functions that may return a HUGEINT, a type Spark does not have."""


def sums_left_untyped(tree: exp.Expression) -> bool:
    """Whether the translated query may still give a HUGEINT: a sum without Spark's type (its argument's
    type was not known here, or a later rewrite made the sum) or another DuckDB call that sums
    integers. The engine then fixes the result's types when it binds the query."""
    return any(node.meta.get(TYPED_SUM) is None if isinstance(node, exp.Sum)
               else isinstance(node, exp.CountIf) or node.name.lower() in _HUGEINT_CALLS
               for node in tree.find_all(exp.Sum, exp.CountIf, exp.Anonymous, exp.ArraySum))


def averages_typed_as_spark(tree: exp.Expression) -> None:
    """Spark's ``avg`` of DECIMAL(p, s) is a DECIMAL(p + 4, s + 4), exact (DuckDB's is a DOUBLE);
    ``sum`` and ``avg`` of strings read them as DOUBLEs (DuckDB cannot sum text)."""
    for node in list(tree.find_all(exp.Sum, exp.Avg)):
        argument = spark_type(node.this)
        if kind(argument) == "string":
            node.set("this", spark_cast(node.this, DOUBLE, argument))
        if isinstance(node, exp.Avg) and kind(argument) == "decimal" and _call_of(node) is node:
            # the sum over the count, divided exactly (DuckDB's avg of decimals is a DOUBLE)
            result = spark_type(node)
            total_type = aggregate_type(exp.Sum(), argument)
            total = set_type(exp.Sum(this=node.this.copy()), total_type)
            count = exp.Count(this=node.this.copy())
            node.replace(set_type(_decimal_quotient(total, count, total_type, 0, result), result))
        elif isinstance(node, exp.Avg) and kind(argument) == "decimal":  # with FILTER or OVER: from DuckDB's DOUBLE
            result = spark_type(node)
            call = _call_of(node)
            call.replace(set_type(_try(call, result), result))


# -- literals ---------------------------------------------------------------------------------------

_SUFFIXES = {T.TINYINT: "Y", T.SMALLINT: "S", T.BIGINT: "L", T.DOUBLE: "D", T.FLOAT: "F"}
_DOUBLE_RANGE = "[-1.7976931348623157E+308, 1.7976931348623157E+308]"
_FLOAT_RANGE = "[-3.4028234663852886E+38, 3.4028234663852886E+38]"


def literals_as_spark_reads_them(tree: exp.Expression) -> None:
    """Spark's literals: ``1Y 1S 1L 1D 1F 1BD`` must fit their type (``128Y`` is an error, as in
    Spark's parser, not a NULL); a whole number beyond BIGINT is a DECIMAL, one beyond 38 digits an
    error; a number with a point is a DECIMAL of exactly its digits (DuckDB counts ``0.001`` as
    DECIMAL(4, 3), Spark as DECIMAL(3, 3)); ``date'...'`` and ``timestamp'...'`` must be in one
    of the forms Spark's casts read. (Interval literals are ``spark_datetime``'s.)"""
    for node in list(tree.find_all(exp.Literal)):
        if isinstance(node.parent, (exp.Cast, exp.TryCast)) and node.arg_key == "this":
            _typed_literal(node.parent)
        elif not node.is_string:
            _number_literal(node)


def _signed(literal: exp.Literal) -> tuple[exp.Expression, str]:
    """The literal with its sign (``-5`` is one literal in Spark), and its text."""
    if isinstance(literal.parent, exp.Neg):
        return literal.parent, "-" + literal.this
    return literal, literal.this


def _number_literal(literal: exp.Literal) -> None:
    whole, text = _signed(literal)
    t = literal_type(whole)
    if t is None:
        return
    if kind(t) == "decimal":
        digits = text.lstrip("-").replace(".", "")
        if t.expressions and int(t.expressions[0].this.this) > 38:
            raise MLSQLError(f"decimal can only support precision up to 38: {text}")
        if digits.lstrip("0") != digits or "." not in text:  # DuckDB would type it otherwise
            cast = exp.Cast(this=literal.copy(), to=t)
            cast.meta[_TYPED_LITERAL] = True
            literal.replace(set_type(cast, t))
    elif t == DOUBLE and float(text) in (float("inf"), float("-inf")):
        raise MLSQLError(f"Numeric literal {text} does not fit in range {_DOUBLE_RANGE} for type double")


def _typed_literal(cast: exp.Expression) -> None:
    literal, to = cast.this, cast.to
    source = written(literal)
    if not literal.is_string and source is not None and _SUFFIXES.get(to.this) == source[-1:].upper():
        negative = isinstance(cast.parent, exp.Neg)  # -128Y is one literal
        _check_range(("-" if negative else "") + literal.this, to)
        typed = exp.Cast(this=exp.Neg(this=literal.copy()) if negative else literal.copy(), to=to.copy())
        typed.meta[_TYPED_LITERAL] = True
        (cast.parent if negative else cast).replace(set_type(typed, to))
        return
    if literal.is_string and not literal.meta and to.this == T.DECIMAL:  # 1.5BD
        if len(literal.this.replace(".", "").lstrip("-")) > 38:
            raise MLSQLError(f"decimal can only support precision up to 38: {literal.this}BD")
        typed = exp.Cast(this=exp.Literal.number(literal.this), to=to.copy())
        typed.meta[_TYPED_LITERAL] = True
        cast.replace(set_type(typed, to))
        return
    if literal.is_string and isinstance(cast, exp.Cast) and to.this in (T.DATE, T.TIMESTAMPTZ) \
            and not text_before(literal).endswith("("):  # date'...', not date('...')
        name = "DATE" if to.this == T.DATE else "TIMESTAMP"
        if not _valid_datetime(literal.this, to.this == T.DATE):
            raise MLSQLError(f"Cannot parse the {name} value: {literal.this}")


def _valid_datetime(text: str, date: bool) -> bool:
    """Whether Spark's cast reads ``text`` as a date (or timestamp): one of its forms (the macros'
    patterns), with a real day and time of day."""
    match = re.match(DATE_TEXT if date else TIMESTAMP_TEXT, text.strip("".join(map(chr, range(33))) + "\x7f"))
    if match is None:
        return False
    if date:
        year, month, day, hour, minute, second = match.group(2), match.group(3), match.group(4), None, None, None
    else:
        year, month, day, hour, minute, second = match.group(1, 2, 3, 4, 5, 6)
        hour, minute, second = hour or match.group(8), minute or match.group(9), second or match.group(10)
    try:
        if year is not None:
            dt.date(min(abs(int(year)), 9999) or 1, int(month or 1), int(day or 1))
        dt.time(int(hour or 0), int(minute or 0), int(second or 0))
    except ValueError:
        return False
    return True


def _check_range(text: str, to: exp.DataType) -> None:
    if to.this in _RANGES:
        low, high = _RANGES[to.this]
        if not low <= int(text) <= high:
            raise MLSQLError(f"Numeric literal {text} does not fit in range [{low}, {high}] for type "
                             f"{_INTEGRAL_NAMES[to.this]}")
    elif to.this == T.DOUBLE and abs(float(text)) == float("inf"):
        raise MLSQLError(f"Numeric literal {text} does not fit in range {_DOUBLE_RANGE} for type double")
    elif to.this == T.FLOAT and abs(float(text)) > 3.4028234663852886e38:
        raise MLSQLError(f"Numeric literal {text} does not fit in range {_FLOAT_RANGE} for type float")


# -- arithmetic -------------------------------------------------------------------------------------

_WIDER = {T.TINYINT: "BIGINT", T.SMALLINT: "BIGINT", T.INT: "BIGINT", T.BIGINT: "HUGEINT"}
_OPERATORS = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*"}


def arithmetic_as_spark_does(tree: exp.Expression) -> None:
    """Spark's ``+ - * / % div pmod`` (non-ANSI): a string operand is read as a DOUBLE; integers
    wrap on overflow as Java's do (DuckDB fails the query); ``x % 0``, ``x div 0`` and
    ``pmod(x, 0)`` are NULL; ``/`` of integers is a DOUBLE; decimal results have Spark's precision
    and scale (``sql_types.arithmetic_type``), NULL when they overflow; ``pmod`` is never negative
    for a positive divisor. Innermost first: an outer operation knows its operands' types."""
    nodes = [n for n in innermost_first(tree, *ARITHMETIC, exp.Anonymous)
             if not isinstance(n, exp.Anonymous) or (n.name.lower() == "pmod" and len(n.expressions) == 2)]
    for node in nodes:
        if isinstance(node, exp.Anonymous):
            left, right = node.expressions
        else:
            left, right = node.left, node.right
        lt, rt = spark_type(left), spark_type(right)
        if any(kind(t) == "string" for t in (lt, rt)) and all(kind(t) in _NUMERIC for t in (lt, rt)):
            left, lt = _as_double(left, lt)
            right, rt = _as_double(right, rt)
            if isinstance(node, exp.Anonymous):
                node.set("expressions", [left, right])
            else:
                node.set("this", left)
                node.set("expression", right)
        scaled = _scaled_day_time(node, left, right, lt, rt)
        if scaled is not None:
            node.replace(scaled)
            continue
        result = arithmetic_type(node if not isinstance(node, exp.Anonymous) else exp.Mod(this=left, expression=right), lt, rt)
        written_ = _arithmetic(node, left, right, lt, rt, result)
        if written_ is not node:
            node.replace(written_)
        set_type(written_, result)


_NUMERIC = ("integral", "fractional", "decimal", "string", "null")


def _scaled_day_time(node, left, right, lt, rt) -> exp.Expression | None:
    """A day-time interval times or over a number (Spark's MultiplyDTInterval, DivideDTInterval): its
    microseconds scaled and rounded HALF_UP (``interval 2 weeks 3 microseconds * 1.5`` is 21 days and 5
    microseconds; DuckDB truncates the 4.5), typed INTERVAL DAY TO SECOND; a string is read as a double."""
    if not isinstance(node, (exp.Mul, exp.Div)):
        return None
    if isinstance(node, exp.Mul) and interval_fields(rt) is not None:
        left, right, lt, rt = right, left, rt, lt
    fields = interval_fields(lt)
    if fields is None or fields[0] in ("YEAR", "MONTH") or kind(rt) not in ("integral", "fractional", "decimal", "string"):
        return None
    operator = "*" if isinstance(node, exp.Mul) else "/"
    scaled = _sql(f"spark_day_time_of_micros(round(epoch_us(_i) {operator} _n))", i=left, n=spark_cast(right, DOUBLE, rt))
    return set_type(scaled, interval_type("DAY", "SECOND"))


def _as_double(node: exp.Expression, t: exp.DataType | None) -> tuple[exp.Expression, exp.DataType | None]:
    return (spark_cast(node, DOUBLE, t), DOUBLE) if kind(t) == "string" else (node, t)


def _arithmetic(node, left, right, lt, rt, result) -> exp.Expression:
    """The DuckDB SQL of one operation, made of ``left`` and ``right`` themselves (not copies)."""
    def sql(template: str) -> exp.Expression:
        return _sql(template, move=True, l=left, r=right)

    if isinstance(node, exp.Anonymous):  # pmod
        return sql("spark_pmod(_l, _r)") if kind(result) != "decimal" else _try(sql("spark_pmod(_l, _r)"), result, move=True)
    if isinstance(node, exp.Sub) and kind(rt) == "date" and interval_fields(result) == ("DAY", "DAY"):
        # Spark's SubtractDates: the days between, a string or NULL read as a date
        since = left if kind(lt) == "date" else spark_cast(left, build("DATE"), lt)
        return _sql("to_days(CAST(_l - _r AS INTEGER))", move=True, l=since, r=right)
    if result is None:  # types not known here: DuckDB's arithmetic, but NULL for a zero divisor
        if isinstance(node, (exp.Mod, exp.IntDiv)):
            node.set("expression", _sql("NULLIF(_r, 0)", move=True, r=right))
        return node
    k = kind(result)
    if isinstance(node, exp.IntDiv):
        if not {kind(lt), kind(rt)} <= {"integral", "decimal", "null"}:
            raise MLSQLError(f"cannot resolve {left.sql('spark')} div {right.sql('spark')}: data type mismatch "
                             f"(div takes integers and decimals, not {spark_name(lt)} and {spark_name(rt)})")
        if kind(lt) == "integral" and kind(rt) == "integral":
            return sql("CAST(_l AS BIGINT) // NULLIF(_r, 0)")
        return sql("CAST(trunc(CAST(_l AS DOUBLE) / NULLIF(CAST(_r AS DOUBLE), 0)) AS BIGINT)")
    if isinstance(node, exp.Div):
        if k == "decimal":
            return _decimal_quotient(left, right, lt, precision_scale(rt)[1], result)
        return sql("CAST(_l AS DOUBLE) / NULLIF(CAST(_r AS DOUBLE), 0)")
    if isinstance(node, exp.Mod):
        remainder = sql("_l % NULLIF(_r, 0)")
        return _try(remainder, result, move=True) if k == "decimal" else remainder
    operator = _OPERATORS[type(node)]
    if k == "integral":
        return sql(f"spark_wrap_{_INTEGRAL_NAMES[result.this]}(CAST(_l AS {_WIDER[result.this]}) {operator} _r)")
    if k == "decimal":
        (p1, s1), (p2, s2) = precision_scale(lt), precision_scale(rt)
        if isinstance(node, exp.Mul) and p1 + p2 > 38:
            return _decimal_product(left, right, (p1, s1), (p2, s2), result)
        exact = _try(sql(f"_l {operator} _r"), result, move=True)
        # DuckDB fails where a sum needs a 39th digit; Spark's result is then NULL
        return _sql("TRY(_x)", move=True, x=exact) if max(p1 - s1, p2 - s2) + max(s1, s2) + 1 > 38 else exact
    if k == "fractional" and result.this == T.DOUBLE and T.DOUBLE not in (lt.this, rt.this):
        return sql(f"CAST(_l AS DOUBLE) {operator} CAST(_r AS DOUBLE)")
    return node


def _decimal_quotient(dividend, divisor, dividend_type: exp.DataType, divisor_scale: int, result: exp.DataType) -> exp.Expression:
    """Spark's exact decimal division, rounded HALF_UP to the result's scale (DuckDB divides
    decimals as DOUBLEs): the unscaled dividend, times the power of ten that gives the quotient that
    scale, divided by the unscaled divisor as integers, then read back at that scale. Where that
    product could pass 38 digits (only when Spark's scale had to give way), a dividend too big for
    it gives NULL."""
    precision, dividend_scale = precision_scale(dividend_type)
    scale = precision_scale(result)[1]
    shift = scale - dividend_scale + divisor_scale  # never negative: Spark's scale keeps at least the dividend's
    numerator = f"spark_unscaled(_a) * CAST('1{'0' * shift}' AS HUGEINT)"
    quotient = f"spark_rounded_quotient({numerator}, spark_unscaled(_b))"
    if precision + shift > 38:
        quotient = f"CASE WHEN abs(spark_unscaled(_a)) < CAST('1{'0' * (38 - shift)}' AS HUGEINT) THEN {quotient} END"
    point = f" * {exp.Literal.number('0.' + '0' * (scale - 1) + '1').sql()}" if scale else ""
    return _try(_sql(f"CAST({quotient} AS DECIMAL(38, 0)){point}", move=True, a=dividend, b=divisor), result, move=True)


def _decimal_product(left, right, first: tuple[int, int], second: tuple[int, int], result: exp.DataType) -> exp.Expression:
    """A product of decimals of more than 38 digits together. DuckDB's product keeps both scales
    (DECIMAL(38, s1 + s2)) and fails when the value needs more integral digits than that leaves,
    where Spark multiplies exactly and rounds to the adjusted scale. So each factor is split into its
    integral and fractional parts and the four partial products, each within 38 digits, are added
    at the result's scale and a few more digits."""
    (p1, s1), (p2, s2) = first, second
    scale = precision_scale(result)[1]
    guard = max(scale, min(scale + 3, 38 - (p1 - s1) - (p2 - s2)))
    whole = "CAST(trunc({x}) AS DECIMAL(38, 0))"
    part = "CAST({x} - trunc({x}) AS DECIMAL({p}, {s}))"
    a_int, a_frac = whole.format(x="_a"), part.format(x="_a", p=s1 + 1, s=s1)
    b_int, b_frac = whole.format(x="_b"), part.format(x="_b", p=s2 + 1, s=s2)
    terms = [f"CAST({x} * {y} AS DECIMAL(38, {guard}))" for x, y in
             ((a_int, b_int), (a_int, b_frac), (a_frac, b_int), (a_frac, b_frac))]
    return _try(_sql("TRY(" + " + ".join(terms) + ")", a=left, b=right), result)


# -- coercions --------------------------------------------------------------------------------------

COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ, exp.NullSafeNEQ)


def comparisons_as_spark_does(tree: exp.Expression) -> None:
    """Spark compares a string with a number, date, timestamp, boolean or binary by casting the
    string to that type (a decimal and a string both as DOUBLEs): ``i = ''`` is NULL, ``d > '2020-1-1'``
    a date comparison, ``s = 1`` true for ``' 1'`` (``findCommonTypeForBinaryComparison``). With both
    types known the SQL stays a plain comparison DuckDB can push down, the literal side cast once."""
    for node in list(tree.find_all(*COMPARISONS)):
        left, right = node.this, node.expression
        lt, rt = spark_type(left), spark_type(right)
        kinds = (kind(lt), kind(rt))
        if None in kinds or "string" not in kinds or kinds == ("string", "string"):
            continue
        other = rt if kinds[0] == "string" else lt
        if kind(other) == "decimal":
            node.set("this", spark_cast(left, DOUBLE, lt))
            node.set("expression", spark_cast(right, DOUBLE, rt))
        elif kind(other) in ("integral", "fractional", "boolean", "date", "timestamp", "binary"):
            side = "this" if kinds[0] == "string" else "expression"
            node.set(side, spark_cast(node.args[side], other, STRING))


def in_lists_as_spark_does(tree: exp.Expression) -> None:
    """Spark's ``x IN (a, b, ...)`` with values of different types casts them all to their wider
    type (``InConversion``): ``1 IN ('1', 2)`` compares strings."""
    for node in list(tree.find_all(exp.In)):
        values = [node.this, *node.expressions]
        if not node.expressions or node.args.get("query"):
            continue
        types = [spark_type(v) for v in values]
        if any(t is None for t in types) or all(t == types[0] for t in types):
            continue
        wider = types[0]
        for t in sorted(types[1:], key=lambda t: kind(t) != "string"):  # strings first, as Spark's fold
            wider = wider_type(wider, t)
        if wider is None:
            continue
        node.set("this", spark_cast(node.this, wider, types[0]))
        node.set("expressions", [spark_cast(v, wider, t) for v, t in zip(node.expressions, types[1:])])


_BRANCHES_ERROR = {
    exp.Case: "CASE's THEN and ELSE expressions should all be same type or coercible to a common type, here",
    exp.If: "if's two branches should be the same type or coercible to a common type, here",
    exp.Coalesce: "the arguments of coalesce should all be the same type or coercible to a common type, here",
}


def branches_widen_as_spark_does(tree: exp.Expression) -> None:
    """The values ``CASE``, ``if`` and ``coalesce`` choose from are cast to their wider type (Spark's
    CaseWhenCoercion, IfCoercion, FunctionArgumentConversion): ``CASE WHEN c THEN 1Y ELSE 'x' END`` is a
    string, as DuckDB would not make it; types with none wider (a tinyint and a boolean) are Spark's
    error. Innermost first: an outer choice knows its branches' types."""
    for node in innermost_first(tree, exp.Case, exp.If, exp.Coalesce):
        if isinstance(node, exp.If) and isinstance(node.parent, exp.Case):
            continue  # a WHEN of its CASE
        branches = _chosen(node)
        types = [spark_type(b) for b in branches]
        if len(branches) < 2 or not _differing(types):
            continue
        wider = _widest(types, f"data type mismatch: {_BRANCHES_ERROR[type(node)]}")
        for branch, t in zip(branches, types):
            if t != wider:
                branch.replace(spark_cast(branch.copy(), wider, t))
        set_type(node, wider)


def _differing(types: list[exp.DataType | None]) -> bool:
    """Whether types all known while translating differ."""
    return all(kind(t) is not None for t in types) and any(t != types[0] for t in types)


def _widest(types: list[exp.DataType], refusal: str) -> exp.DataType:
    """Spark's wider type of them all (``wider_type``, left to right); none is Spark's error, ``refusal``
    followed by the types."""
    wider: exp.DataType | None = types[0]
    for t in types[1:]:
        wider = wider_type(wider, t) if wider is not None else None
    if wider is None:
        raise MLSQLError(f"{refusal} {', '.join(spark_name(t) for t in types)}")
    return wider


def _chosen(node: exp.Expression) -> list[exp.Expression]:
    if isinstance(node, exp.Case):
        return [i.args["true"] for i in node.args.get("ifs") or []] + ([node.args["default"]] if node.args.get("default") else [])
    if isinstance(node, exp.If):
        return [node.args["true"]] + ([node.args["false"]] if node.args.get("false") else [])
    return [node.this, *node.expressions]


def unions_widen_as_spark_does(tree: exp.Expression) -> None:
    """Spark's ``UNION`` (``INTERSECT``, ``EXCEPT``) of columns of different types casts each to the
    wider type (``WidenSetOperationTypes``): ``select 1 union all select 'a'`` is a STRING column;
    types with none wider are an error, as in Spark."""
    for node in list(tree.find_all(exp.SetOperation)):
        if isinstance(node.parent, exp.SetOperation):
            continue  # the outermost does all branches
        branches = _branches(node)
        if branches is None or len({len(b.expressions) for b in branches}) != 1:
            continue
        columns = list(zip(*(b.expressions for b in branches)))
        for position, projections in enumerate(columns):
            types = [spark_type(p) for p in projections]
            if not _differing(types):
                continue
            wider = _widest(types, f"Union can only be performed on tables with the compatible column types: "
                                   f"column {position + 1} is")
            for projection, t in zip(projections, types):
                if t != wider:
                    name = projection.alias_or_name if isinstance(projection, (exp.Alias, exp.Column)) else projection.sql("duckdb")
                    value = projection.this if isinstance(projection, exp.Alias) else projection
                    projection.replace(exp.alias_(spark_cast(value, wider, t), name, quoted=True))


def _branches(node: exp.Expression) -> list[exp.Select] | None:
    if isinstance(node, exp.SetOperation):
        left, right = _branches(node.this), _branches(node.expression)
        return left + right if left is not None and right is not None else None
    if isinstance(node, exp.Subquery):
        return _branches(node.this)
    if isinstance(node, exp.Select) and not any(isinstance(p, exp.Star) or (isinstance(p, exp.Column) and p.is_star)
                                                for p in node.expressions):
        return [node]
    return None


_DATETIME_FUNCTIONS = (exp.Year, exp.Month, exp.Day, exp.Quarter, exp.DayOfWeek, exp.DayOfMonth, exp.DayOfYear,
                       exp.WeekOfYear, exp.Hour, exp.Minute, exp.Second, exp.LastDay, exp.DateTrunc, exp.Extract,
                       exp.TsOrDsToDate, exp.DateDiff)
_TIME_FIELDS = ("HOUR", "MINUTE", "SECOND", "H", "M", "S", "HR", "HRS", "HOURS", "MINUTES", "SECONDS", "MIN", "MINS", "SEC", "SECS")


def _an_interval(node: exp.Expression) -> bool:
    t = spark_type(node)
    return isinstance(node, exp.Interval) or interval_fields(t) is not None or (t is not None and t.this == T.INTERVAL)


def datetime_strings_as_spark_reads_them(tree: exp.Expression) -> None:
    """A string where Spark's date/time functions, ``extract`` and ``date_part`` want a date or a
    timestamp is cast as Spark casts it (``year('2020-1-5')`` is 2020, ``hour('x')`` NULL; DuckDB
    fails the query); a string plus or minus an interval is read as a timestamp and the result is a
    string again, as in Spark."""
    for node in list(tree.find_all(*_DATETIME_FUNCTIONS, exp.Add, exp.Sub, exp.Anonymous)):
        if isinstance(node, (exp.Add, exp.Sub)):
            if _an_interval(node.expression) and kind(spark_type(node.this)) == "string":
                node.set("this", spark_cast(node.this, exp.DataType(this=T.TIMESTAMPTZ), STRING))
                node.replace(spark_cast(node.copy(), STRING, exp.DataType(this=T.TIMESTAMPTZ)))
            continue
        if isinstance(node, exp.Anonymous):
            if node.name.lower() not in ("date_part", "datepart") or len(node.expressions) != 2:
                continue
            field, key = node.expressions[0].name, None
        else:
            field = node.this.name if isinstance(node, exp.Extract) else None
            key = "expression" if isinstance(node, exp.Extract) else None
        if field is not None:  # extract/date_part: a date for date fields, a local timestamp for time fields
            wants = exp.DataType(this=T.TIMESTAMPNTZ) if field.upper() in _TIME_FIELDS else exp.DataType.build("DATE")
        elif isinstance(node, (exp.TsOrDsToDate, exp.DateDiff, exp.LastDay)) or isinstance(node.this, exp.TsOrDsToDate):
            wants = exp.DataType.build("DATE")
        else:
            wants = exp.DataType(this=T.TIMESTAMPNTZ)
        if isinstance(node, exp.Anonymous):
            if kind(spark_type(node.expressions[1])) == "string":
                node.set("expressions", [node.expressions[0], spark_cast(node.expressions[1], wants, STRING)])
            continue
        for arg in ((key,) if key else ("this", "expression")):
            argument = node.args.get(arg)
            if isinstance(argument, exp.Expression) and not isinstance(argument, exp.Var) \
                    and kind(spark_type(argument)) == "string":
                node.set(arg, spark_cast(argument, wants, STRING))


TRANSFORMS: tuple[Callable[[exp.Expression], None], ...] = (
    literals_as_spark_reads_them, casts_as_spark_does, datetime_strings_as_spark_reads_them,
    arithmetic_as_spark_does, text_arguments_cast_as_spark_does, averages_typed_as_spark, sums_typed_as_spark, comparisons_as_spark_does,
    in_lists_as_spark_does, branches_widen_as_spark_does, unions_widen_as_spark_does,
)

FAMILY = Family("casts", transforms=TRANSFORMS, macros=MACROS)
