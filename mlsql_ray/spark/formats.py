"""``format_string``/``printf`` (Java's ``java.util.Formatter``, Locale.US) and ``format_number``
(Java's ``DecimalFormat``) on DuckDB.

DuckDB's ``format`` is fmt's ``{}`` syntax and its ``printf`` is C's: other flags, other rounding
(Java rounds ``%.2f`` HALF_UP on a double's ``Double.toString`` digits: ``0.125`` → ``0.13``), other
conversions (Java's ``%x`` of a negative int is its two's complement, ``%b`` of any non-NULL value
is ``true``, ``%s`` of a double is ``Double.toString``). So a literal format is parsed here and
becomes a concatenation of its text and one expression per conversion, each a macro that picks
Java's rule for the argument's type (typed overloads); an argument of a type Java's conversion
refuses fails as Spark fails (IllegalFormatConversionException). Supported conversions:
``%s %S %d %x %X %o %c %b %B %f %% %n`` with argument indexes (``%2$s``, ``%<s``), flags
``- + space 0 , ( #``, width and precision; ``%e %g %a %h %t`` are refused with a clear error.

``format_number(x, d)`` rounds HALF_EVEN (DecimalFormat's default) on the exact value — a
decimal's digits, a double's binary value — and groups by three; a DecimalFormat pattern as the
second argument is supported for the ``#,##0.00#`` family.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp

from .calls import call, case, cast, fail, hygienic, integer_of, is_null, number, string, text_of
from .arrays_maps import gated
from .family import Family

MACROS: dict[str, str] = hygienic({
    # Java's Double.toString / Float.toString from DuckDB's shortest digits: plain between 10^-3
    # and 10^7, else d.dddE±n
    "spark_java_scientific": """(s) AS list_transform([split_part(s, 'e', 1)], lambda m: list_transform(
        [split_part(m, '.', 1) || split_part(m, '.', 2)], lambda digits: left(ltrim(rtrim(digits, '0'), '0'), 1) || '.'
            || coalesce(nullif(substr(ltrim(rtrim(digits, '0'), '0'), 2), ''), '0') || 'E'
            || (length(split_part(m, '.', 1)) - 1 - (length(digits) - length(ltrim(digits, '0')))
                + CASE WHEN s LIKE '%e%' THEN CAST(split_part(s, 'e', 2) AS INTEGER) ELSE 0 END))[1])[1]""",
    "spark_java_double_text": """(x) AS CASE
        WHEN isnan(x) THEN 'NaN' WHEN isinf(x) THEN CASE WHEN x > 0 THEN 'Infinity' ELSE '-Infinity' END
        WHEN x = 0 OR (abs(x) >= 0.001 AND abs(x) < 10000000) THEN CAST(x AS VARCHAR)
        WHEN x < 0 THEN '-' || spark_java_scientific(CAST(-x AS VARCHAR))
        ELSE spark_java_scientific(CAST(x AS VARCHAR)) END""",
    # %s: String.valueOf of the value Spark hands to the Formatter (a date is its day number, a
    # timestamp its microseconds: Spark's internal values)
    "spark_java_text": """(v VARCHAR) AS v, (v BOOLEAN) AS CASE WHEN v THEN 'true' ELSE 'false' END,
        (v BIGINT) AS CAST(v AS VARCHAR), (v DATE) AS CAST(v - DATE '1970-01-01' AS VARCHAR),
        (v TIMESTAMP) AS CAST(epoch_us(v) AS VARCHAR), (v TIMESTAMPTZ) AS CAST(epoch_us(v) AS VARCHAR),
        (v BLOB) AS CAST(error('format_string: %s of binary prints a Java array reference in Spark; hex() it first') AS VARCHAR),
        (v) AS CASE WHEN typeof(v) IN ('DOUBLE', 'FLOAT') THEN spark_java_double_text(CAST(v AS DOUBLE))
                    ELSE CAST(v AS VARCHAR) END""",
    # the conversions that take integral values only (Byte, Short, Integer, Long)
    # (an error() inside another function is folded away as a NULL: it gets the branch's type)
    "spark_java_integral": """(v BIGINT) AS v, (v) AS CAST(error('format_string: this conversion cannot format a ' || typeof(v)
        || ' value (Java''s IllegalFormatConversionException)') AS BIGINT)""",
    # %x and %o see an int's two's complement in its own width
    "spark_java_unsigned": """(v TINYINT) AS CAST(CAST(v AS HUGEINT) & 255 AS UBIGINT), (v SMALLINT) AS CAST(CAST(v AS HUGEINT) & 65535 AS UBIGINT),
        (v INTEGER) AS CAST(CAST(v AS HUGEINT) & 4294967295 AS UBIGINT),
        (v BIGINT) AS CAST(CAST(v AS HUGEINT) & 18446744073709551615 AS UBIGINT),
        (v) AS CAST(error('format_string: this conversion cannot format a ' || typeof(v)
                          || ' value (Java''s IllegalFormatConversionException)') AS UBIGINT)""",
    "spark_java_char": """(v INTEGER) AS chr(v), (v) AS CAST(error('format_string: %c cannot format a ' || typeof(v)
        || ' value (Java''s IllegalFormatConversionException)') AS VARCHAR)""",
    # %f: the double's Double.toString digits rounded HALF_UP (the precision is written in by the rewrite)
    "spark_java_floating": """(v) AS CASE WHEN typeof(v) IN ('DOUBLE', 'FLOAT') THEN CAST(v AS DOUBLE)
        ELSE CAST(error('format_string: %f cannot format a ' || typeof(v) || ' value (Java''s IllegalFormatConversionException; '
                        || 'Spark hands a decimal over as its own Decimal class)') AS DOUBLE) END""",
    "spark_group_thousands": r"""(digits) AS reverse(rtrim(regexp_replace(reverse(digits), '(\d\d\d)', '\1,', 'g'), ','))""",
    "spark_pad": "(s, width, fill, left_side) AS list_transform([s], lambda t: CASE WHEN left_side "
                 "THEN repeat(fill, greatest(width - length(t), 0)) || t ELSE t || repeat(fill, greatest(width - length(t), 0)) END)[1]",
    # format_number's text of a number rounded HALF_EVEN to d places (a double: its binary value,
    # as fmt writes it; one beyond 10^15: its shortest digits, as DecimalFormat reads a double)
    "spark_rounded_text": """(x, d) AS CASE
        WHEN typeof(x) IN ('DOUBLE', 'FLOAT') THEN CASE
            WHEN isnan(CAST(x AS DOUBLE)) THEN 'NaN' WHEN isinf(CAST(x AS DOUBLE)) THEN CASE WHEN x > 0 THEN '∞' ELSE '-∞' END
            WHEN abs(x) < 1e15 THEN format('{:.' || d || 'f}', CAST(x AS DOUBLE))
            ELSE CAST(CAST(CAST(CAST(x AS DOUBLE) AS VARCHAR) AS DECIMAL(38, 0)) AS VARCHAR) END
        ELSE CAST(round_even(x, d) AS VARCHAR) END""",
})


# -- format_string / printf ---------------------------------------------------------------------

_SPECIFIER = re.compile(r"%(?:(\d+)\$|(<))?([-#+ 0,(]*)(\d+)?(?:\.(\d+))?([a-zA-Z%])")


@dataclass(frozen=True)
class _Spec:
    text: str  # as written
    index: int | None  # 0-based argument, None for %% and %n
    flags: str
    width: int | None
    precision: int | None
    conversion: str


def _parse(fmt: str, function: str) -> list[str | _Spec]:
    """The format as literal text and conversions, with Java's argument numbering."""
    parts: list[str | _Spec] = []
    position, ordinary, last = 0, 0, None
    for match in _SPECIFIER.finditer(fmt):
        if match.start() > position:
            _literal_text(parts, fmt[position:match.start()], function)
        explicit, previous, flags, width, precision, conversion = match.groups()
        position = match.end()
        if conversion in "%n":
            parts.append("%" if conversion == "%" else "\n")
            continue
        if previous:
            if last is None:
                raise fail(function, f"missing format argument for '{match.group(0)}' (MissingFormatArgumentException)")
            index = last
        elif explicit:
            index = int(explicit) - 1
            if index < 0:
                raise fail(function, "the argument index %0$ is not valid (IllegalFormatArgumentIndexException)")
        else:
            index, ordinary = ordinary, ordinary + 1
        last = index
        parts.append(_Spec(match.group(0), index, flags, int(width) if width else None,
                           int(precision) if precision is not None else None, conversion))
    if position < len(fmt):
        _literal_text(parts, fmt[position:], function)
    return parts


def _literal_text(parts: list, text: str, function: str) -> None:
    if "%" in text:
        raise fail(function, f"the format specifier '{text[text.index('%'):][:4]}' is not valid (UnknownFormatConversionException)")
    parts.append(text)


_UNSUPPORTED = {"e": "%e", "E": "%E", "g": "%g", "G": "%G", "a": "%a", "A": "%A", "h": "%h", "H": "%H", "t": "%t", "T": "%T"}


def _conversion(spec: _Spec, value: exp.Expression, function: str) -> exp.Expression:
    """One conversion of the format applied to its argument, as Java's Formatter writes it."""
    c, flags = spec.conversion, spec.flags
    if c in _UNSUPPORTED:
        raise fail(function, f"the conversion {_UNSUPPORTED[c]} ('{spec.text}') is not supported; format the value "
                             f"with %s, %d or %f, or with another function")
    if c not in "sSdxXocCbBf":
        raise fail(function, f"the format specifier '{spec.text}' is not valid (UnknownFormatConversionException)")
    if "-" in flags and spec.width is None:
        raise fail(function, f"'{spec.text}': the '-' flag needs a width (MissingFormatWidthException)")
    if "0" in flags and ("-" in flags or spec.width is None):
        raise fail(function, f"'{spec.text}': the '0' flag needs a width and no '-' (IllegalFormatFlagsException)")
    if is_null(value):  # what Java writes for a null argument, whatever the conversion
        text = "false" if c in "bB" else "null"
        text = text[:spec.precision] if spec.precision is not None and c in "sSbB" else text
        return _width(string(text.upper() if c.isupper() else text), spec)
    v = exp.column("__fmt_v")
    if c in "sS":
        text = call("spark_java_text", v)
        if spec.precision is not None:
            text = call("left", text, number(spec.precision))
        body = _null_text(v, text, "null")
        body = call("upper", body) if c == "S" else body
    elif c in "bB":
        is_boolean = exp.EQ(this=call("typeof", v.copy()), expression=string("BOOLEAN"))
        body = case((exp.Is(this=v.copy(), expression=exp.Null()), string("false")),
                    (is_boolean, call("lower", cast(v.copy(), "VARCHAR"))), default=string("true"))
        if spec.precision is not None:
            body = call("left", body, number(spec.precision))
        body = call("upper", body) if c == "B" else body
    elif c in "cC":
        body = _null_text(v, call("spark_java_char", v), "null")
        body = call("upper", body) if c == "C" else body
    elif c == "d":
        body = _null_text(v, _signed(call("abs", call("spark_java_integral", v.copy())), exp.LT(
            this=call("spark_java_integral", v.copy()), expression=number(0)), spec), "null")
    elif c in "xXo":
        digits = call("printf", string("%o" if c == "o" else "%x"), call("spark_java_unsigned", v))
        if "#" in flags:
            digits = exp.DPipe(this=string("0" if c == "o" else "0x"), expression=digits)
        digits = call("upper", digits) if c == "X" else digits
        body = _null_text(v, _zero_padded(digits, spec), "null")
    else:  # f
        precision = 6 if spec.precision is None else spec.precision
        body = _null_text(v, _fixed(v, precision, spec), "null")
    body = _width(body, spec)
    return call("list_extract", call("list_transform", exp.Array(expressions=[value]),
                                     exp.Lambda(this=body, expressions=[exp.to_identifier("__fmt_v")])), number(1))


def _null_text(v: exp.Expression, text: exp.Expression, null: str) -> exp.Expression:
    return case((exp.Is(this=v.copy(), expression=exp.Null()), string(null)), default=text)


def _signed(digits: exp.Expression, negative: exp.Expression, spec: _Spec) -> exp.Expression:
    """Java's sign flags around the digits: '-' or '(...)', '+' or ' ' for the others; ',' groups."""
    text = cast(digits, "VARCHAR")
    if "," in spec.flags:
        text = call("spark_group_thousands", text) if spec.conversion == "d" else _group_fixed(text)
    prefix = case((negative, string("(" if "(" in spec.flags else "-")),
                  default=string("+" if "+" in spec.flags else " " if " " in spec.flags else ""))
    suffix = case((negative.copy(), string(")")), default=string("")) if "(" in spec.flags else string("")
    if "0" in spec.flags:
        zeros = exp.Sub(this=number(spec.width), expression=exp.Add(this=call("length", prefix.copy()),
                                                                     expression=call("length", suffix.copy())))
        text = call("spark_pad", text, zeros, string("0"), exp.true())
    return exp.DPipe(this=exp.DPipe(this=prefix, expression=text), expression=suffix)


def _group_fixed(text: exp.Expression) -> exp.Expression:
    whole = call("split_part", text, string("."), number(1))
    fraction = call("split_part", text.copy(), string("."), number(2))
    grouped = call("spark_group_thousands", whole)
    return case((exp.EQ(this=fraction, expression=string("")), grouped),
                default=exp.DPipe(this=exp.DPipe(this=grouped.copy(), expression=string(".")), expression=fraction.copy()))


def _zero_padded(digits: exp.Expression, spec: _Spec) -> exp.Expression:
    if "0" in spec.flags:
        return call("spark_pad", digits, number(spec.width), string("0"), exp.true())
    return digits


def _fixed(v: exp.Expression, precision: int, spec: _Spec) -> exp.Expression:
    """%f: HALF_UP on the Double.toString digits; NaN and infinities as Java writes them."""
    double = call("spark_java_floating", v)
    rounded = exp.Cast(this=exp.Cast(this=cast(double.copy(), "VARCHAR"), to=exp.DataType.build("DECIMAL(38, 18)")),
                       to=exp.DataType.build(f"DECIMAL(38, {min(precision, 18)})"))
    digits = cast(call("abs", rounded), "VARCHAR")
    if precision > 18:
        digits = call("rpad", digits, exp.Add(this=call("length", digits.copy()), expression=number(precision - 18)), string("0"))
    negative = exp.Or(this=exp.LT(this=double.copy(), expression=number(0)),
                      expression=call("starts_with", cast(double.copy(), "VARCHAR"), string("-")))
    finite = _signed(digits, negative, spec)
    huge = exp.GTE(this=call("abs", double.copy()), expression=exp.Literal.number("1e20"))
    return case((call("isnan", double.copy()), string("NaN")),
                (call("isinf", double.copy()), case((exp.GT(this=double.copy(), expression=number(0)), string("Infinity")),
                                                    default=string("-Infinity"))),
                (huge, call("printf", string(f"%.{precision}f"), double.copy())),
                default=finite)


def _width(body: exp.Expression, spec: _Spec) -> exp.Expression:
    if spec.width is None or "0" in spec.flags and spec.conversion in "dxXof":
        return body
    return call("spark_pad", body, number(spec.width), string(" "), exp.false() if "-" in spec.flags else exp.true())


def format_string(tree: exp.Expression) -> None:
    """``format_string(fmt, args...)`` and ``printf``: a literal format written out per Java's
    Formatter; a NULL format is NULL; a format from a column is refused."""
    for node in list(tree.find_all(exp.Format, exp.Anonymous)):
        if isinstance(node, exp.Anonymous):
            if node.name.lower() != "printf":
                continue
            function, args = "printf", list(node.expressions)
        else:
            function, args = "format_string", [node.this, *node.expressions]
        if not args:
            raise fail(function, "format_string() should take at least 1 argument")
        fmt, values = args[0], args[1:]
        if is_null(fmt):
            node.replace(cast(exp.Null(), "VARCHAR"))
            continue
        text = text_of(fmt)
        if text is None:
            raise fail(function, "the format must be a literal string")
        pieces: list[exp.Expression] = []
        for part in _parse(text, function):
            if isinstance(part, str):
                pieces.append(string(part))
                continue
            if part.index >= len(values):
                raise fail(function, f"missing format argument for '{part.text}' (MissingFormatArgumentException)")
            pieces.append(_conversion(part, values[part.index].copy(), function))
        result: exp.Expression = pieces[0] if pieces else string("")
        for piece in pieces[1:]:
            result = exp.DPipe(this=result, expression=piece)
        node.replace(result)


# -- format_number -------------------------------------------------------------------------------

_PATTERN = re.compile(r"([#,0]*)(?:\.(0*)(#*))?")


def format_number(tree: exp.Expression) -> None:
    """``format_number(x, d)``: ``#,###,###,##0.00`` (d places, HALF_EVEN), NULL for d < 0;
    ``format_number(x, 'pattern')`` for DecimalFormat patterns of ``#``, ``0``, ``,`` and ``.``."""
    for node in list(tree.find_all(exp.Anonymous)):
        if node.name.lower() != "format_number" or len(node.expressions) != 2:
            continue
        value, places = node.expressions
        node.replace(_format_number(value, places))


def _format_number(value: exp.Expression, places: exp.Expression) -> exp.Expression:
    if is_null(places):
        return cast(exp.Null(), "VARCHAR")
    count, pattern = integer_of(places), text_of(places)
    if count is not None:
        if count < 0:
            return cast(exp.Null(), "VARCHAR")
        return _decimal_format(value, grouping=3, min_integer=1, min_fraction=count, max_fraction=count)
    if pattern is None:
        raise fail("format_number", "the second argument must be a literal: a number of decimal places or a pattern")
    match = _PATTERN.fullmatch(pattern)
    if pattern == "":
        return _decimal_format(value, grouping=3, min_integer=1, min_fraction=0, max_fraction=0)
    if match is None or match.group(1).count(",") and match.group(1).endswith(","):
        raise fail("format_number", f"the pattern '{pattern}' is not supported (patterns of '#', '0', ',' and one '.')")
    integer, zeros, hashes = match.group(1), match.group(2) or "", match.group(3) or ""
    grouping = len(integer) - integer.rindex(",") - 1 if "," in integer else 0
    return _decimal_format(value, grouping=grouping, min_integer=integer.count("0"), min_fraction=len(zeros),
                           max_fraction=len(zeros) + len(hashes))


def _decimal_format(value: exp.Expression, grouping: int, min_integer: int, min_fraction: int,
                    max_fraction: int) -> exp.Expression:
    """DecimalFormat's output of the value rounded HALF_EVEN to ``max_fraction`` places: the
    integer digits grouped (at least ``min_integer`` of them), the fraction without its trailing
    zeros beyond ``min_fraction``, '-' for a negative value."""
    v = exp.column("__fmt_v")
    text = call("spark_rounded_text", v, number(max_fraction))
    t = exp.column("__fmt_t")
    unsigned = call("ltrim", t.copy(), string("-"))
    whole = call("split_part", unsigned, string("."), number(1))
    fraction = call("split_part", unsigned.copy(), string("."), number(2))
    fraction = call("rpad", fraction, number(max_fraction), string("0"))  # an integer or a decimal of a smaller scale
    if max_fraction > min_fraction:
        kept = call("rtrim", call("substr", fraction.copy(), number(min_fraction + 1)), string("0"))
        fraction = exp.DPipe(this=call("left", fraction.copy(), number(min_fraction)), expression=kept)
    whole = call("ltrim", whole, string("0"))
    whole = call("spark_pad", whole, number(min_integer), string("0"), exp.true()) if min_integer else whole
    if grouping:
        whole = _grouped(whole, grouping)
    point = case((exp.EQ(this=fraction.copy(), expression=string("")), string("")), default=string("."))
    body = exp.DPipe(this=exp.DPipe(this=whole, expression=point), expression=fraction)
    empty = exp.EQ(this=body.copy(), expression=string(""))
    signed = exp.DPipe(this=case((call("starts_with", t.copy(), string("-")), string("-")), default=string("")),
                       expression=case((empty, string("0")), default=body))
    special = exp.In(this=t.copy(), expressions=[string("NaN"), string("∞"), string("-∞")])
    formatted = case((special, t.copy()), default=signed)
    inner = call("list_extract", call("list_transform", exp.Array(expressions=[text]),
                                      exp.Lambda(this=formatted, expressions=[exp.to_identifier("__fmt_t")])), number(1))
    return call("list_extract", call("list_transform", exp.Array(expressions=[value]),
                                     exp.Lambda(this=inner, expressions=[exp.to_identifier("__fmt_v")])), number(1))


def _grouped(digits: exp.Expression, size: int) -> exp.Expression:
    if size == 3:
        return call("spark_group_thousands", digits)
    pattern = r"(\d{%d})" % size
    return call("reverse", call("rtrim", call("regexp_replace", call("reverse", digits), string(pattern), string(r"\1,"),
                                              string("g")), string(",")))


TRANSFORMS: tuple[Callable[[exp.Expression], None], ...] = (gated(
    (format_string, (exp.Format,), frozenset({"printf"})),
    (format_number, (), frozenset({"format_number"})),
),)

FAMILY = Family("formats", transforms=TRANSFORMS, macros=MACROS)
