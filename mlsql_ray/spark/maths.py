"""Spark 3.3's math and bitwise functions where DuckDB's answer differs, as DuckDB macros
(``MACROS``) and the rewrites that call them (``TRANSFORMS``).

The differences are Java's: ``round`` rounds a double's shortest decimal form HALF_UP (``BigDecimal``)
where DuckDB multiplies in binary (``round(2.675D, 2)``: Spark 2.68), and an integral result wraps
around its type; ``ln``/``log`` of a number <= 0 is NULL; ``signum`` is a double; shifts mask their
count and wrap (Java's ``<<``, ``>>``, ``>>>`` on int and long); ``bit_count`` counts the bits of a
long; ``conv`` converts through an unsigned 64-bit integer; ``factorial`` beyond 20 is NULL.
Results keep the argument's type with DuckDB's ``cast_to_type``; ``typeof`` (which DuckDB folds
when it binds the query) picks the branch, so each row runs one plain expression.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from .calls import call, cast, hygienic, integer_of, number
from .arrays_maps import gated
from .sql_types import MAX_PRECISION, decimal, kind, precision_scale, set_type, spark_type
from .family import Family

_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_U64 = "18446744073709551615"

MACROS: dict[str, str] = hygienic({
    # -- round, bround --------------------------------------------------------------------------
    # a double's Double.toString digits as an exact decimal, rounded there (BigDecimal.setScale)
    "spark_round_double": """(x, d, even) AS CASE
        WHEN isnan(x) OR isinf(x) THEN x
        WHEN abs(x) >= 1e17 THEN CASE WHEN d >= 0 THEN x WHEN even THEN round_even(x, d) ELSE round(x, d) END
        WHEN abs(x) >= 1e7 THEN CAST(CASE WHEN even THEN round_even(CAST(CAST(x AS VARCHAR) AS DECIMAL(38, 18)), d)
                                          ELSE round(CAST(CAST(x AS VARCHAR) AS DECIMAL(38, 18)), d) END AS DOUBLE)
        ELSE CAST(CASE WHEN even THEN round_even(CAST(CAST(x AS VARCHAR) AS DECIMAL(38, 30)), d)
                       ELSE round(CAST(CAST(x AS VARCHAR) AS DECIMAL(38, 30)), d) END AS DOUBLE) END""",
    # an integer rounded at 10^-d (d < 0) in 128 bits, then wrapped to its own width as Java's toInt does
    "spark_pow10": "(n) AS CAST('1' || repeat('0', CAST(n AS INTEGER)) AS HUGEINT)",
    "spark_wrap": "(v, bits) AS ((v % (1::HUGEINT << bits)) + (1::HUGEINT << bits)) % (1::HUGEINT << bits) "
                  "- CASE WHEN ((v % (1::HUGEINT << bits)) + (1::HUGEINT << bits)) % (1::HUGEINT << bits) "
                  ">= (1::HUGEINT << (bits - 1)) THEN (1::HUGEINT << bits) ELSE 0 END",
    "spark_round_up": """(a, q, even) AS a - a % q
        + CASE WHEN 2 * (a % q) > q OR (2 * (a % q) = q AND (NOT even OR (a // q) % 2 = 1)) THEN q ELSE 0 END""",
    "spark_round_integral": """(x, d, even, bits) AS CASE
        WHEN d >= 0 THEN CAST(x AS HUGEINT)
        WHEN d < -38 THEN 0
        ELSE spark_wrap(sign(x) * spark_round_up(abs(CAST(x AS HUGEINT)), spark_pow10(-d), even), bits) END""",
    "spark_round": """(x, d, even) AS CASE
        WHEN typeof(x) IN ('DOUBLE', 'FLOAT') THEN cast_to_type(spark_round_double(CAST(x AS DOUBLE), d, even), round(x, d))
        WHEN typeof(x) IN ('TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT') THEN cast_to_type(spark_round_integral(x, d, even,
            CASE typeof(x) WHEN 'TINYINT' THEN 8 WHEN 'SMALLINT' THEN 16 WHEN 'INTEGER' THEN 32 ELSE 64 END), round(x, d))
        WHEN even THEN round_even(x, d)
        ELSE round(x, d) END""",
    # -- logarithms: NULL for x <= 0 (Hive's rule, which Spark keeps) ------------------------------
    "spark_ln": "(x) AS CASE WHEN x <= 0 THEN NULL ELSE ln(x) END",
    "spark_log": "(b, x) AS CASE WHEN b <= 0 OR x <= 0 THEN NULL ELSE ln(x) / ln(b) END",
    "spark_log2": "(x) AS CASE WHEN x <= 0 THEN NULL ELSE ln(x) / ln(2) END",
    "spark_log10": "(x) AS CASE WHEN x <= 0 THEN NULL ELSE log10(x) END",
    # log1p and expm1 stay exact near 0 (a series where 1 + x would lose the digits of x)
    "spark_log1p": """(x) AS CASE WHEN x <= -1 THEN NULL
        WHEN abs(x) < 1e-4 THEN x - x * x / 2 + x * x * x / 3 - x * x * x * x / 4 ELSE ln(1 + x) END""",
    "spark_expm1": "(x) AS CASE WHEN abs(x) < 1e-5 THEN x + x * x / 2 + x * x * x / 6 + x * x * x * x / 24 ELSE exp(x) - 1 END",
    # -- other math -----------------------------------------------------------------------------
    # Java's Math.cbrt is exact for a perfect cube (DuckDB's cbrt(27) is 3.0000000000000004): one
    # Newton step from DuckDB's value
    "spark_cbrt": """(x) AS CASE WHEN x = 0 OR isnan(x) OR isinf(x) THEN cbrt(x)
        ELSE cbrt(x) - (cbrt(x) * cbrt(x) * cbrt(x) - x) / (3 * cbrt(x) * cbrt(x)) END""",
    "spark_signum": "(x) AS CASE WHEN isnan(CAST(x AS DOUBLE)) THEN CAST(x AS DOUBLE) ELSE CAST(sign(x) AS DOUBLE) END",
    "spark_factorial": "(n) AS CASE WHEN n BETWEEN 0 AND 20 THEN CAST(factorial(CAST(n AS INTEGER)) AS BIGINT) END",
    "spark_nanvl": "(a, b) AS CASE WHEN isnan(a) THEN b ELSE a END",
    "spark_width_bucket": """(v, mn, mx, n) AS CASE
        WHEN n <= 0 OR n = 9223372036854775807 OR isnan(v) OR mn = mx OR isnan(mn) OR isinf(mn) OR isnan(mx) OR isinf(mx) THEN NULL
        WHEN mn < mx THEN CASE WHEN v < mn THEN 0 WHEN v >= mx THEN n + 1
                               ELSE CAST(trunc(n * (v - mn) / (mx - mn)) AS BIGINT) + 1 END
        ELSE CASE WHEN v > mn THEN 0 WHEN v <= mx THEN n + 1 ELSE CAST(trunc(n * (mn - v) / (mn - mx)) AS BIGINT) + 1 END
        END""",
    # -- bits -----------------------------------------------------------------------------------
    # Java's << on an int: the count masked to 5 bits, the bits past 32 dropped (a long: 6 bits, 64)
    "spark_shiftleft": """(a INTEGER, n INTEGER) AS CAST(spark_wrap(CAST(a AS HUGEINT) * (1::HUGEINT << (n & 31)), 32) AS INTEGER),
        (a BIGINT, n INTEGER) AS CAST(spark_wrap(CAST(a AS HUGEINT) * (1::HUGEINT << (n & 63)), 64) AS BIGINT)""",
    "spark_shiftright": """(a INTEGER, n INTEGER) AS a >> (n & 31), (a BIGINT, n INTEGER) AS a >> (n & 63)""",
    "spark_shiftrightunsigned": """(a INTEGER, n INTEGER) AS CAST(spark_wrap((CAST(a AS HUGEINT) & 4294967295) >> (n & 31), 32) AS INTEGER),
        (a BIGINT, n INTEGER) AS CAST(spark_wrap((CAST(a AS HUGEINT) & 18446744073709551615) >> (n & 63), 64) AS BIGINT)""",
    "spark_bit_count": "(x) AS CAST(bit_count(CAST(x AS BIGINT)) AS INTEGER)",
    "spark_bit_get_checked": """(x, pos, bits) AS CASE
        WHEN pos < 0 THEN error('bit_get: Invalid bit position: ' || pos || ' is less than zero')
        WHEN pos >= bits THEN error('bit_get: Invalid bit position: ' || pos || ' exceeds the bit upper limit')
        ELSE CAST((x >> pos) & 1 AS TINYINT) END""",
    "spark_bit_get": """(x TINYINT, pos INTEGER) AS spark_bit_get_checked(x, pos, 8), (x SMALLINT, pos INTEGER) AS spark_bit_get_checked(x, pos, 16),
        (x INTEGER, pos INTEGER) AS spark_bit_get_checked(x, pos, 32), (x BIGINT, pos INTEGER) AS spark_bit_get_checked(x, pos, 64)""",
    # bin(x): the bits of the long x casts to (a double truncates)
    "spark_bin": "(x BIGINT) AS bin(x), (x DOUBLE) AS bin(CAST(trunc(x) AS BIGINT)), (x VARCHAR) AS bin(TRY_CAST(x AS BIGINT))",
    # conv(num, from, to) (NumberConverter): the longest prefix of digits of `from` read as an
    # unsigned 64-bit integer (all ones on overflow), a leading '-' negating it in two's complement;
    # a negative `to` writes a signed result
    "spark_conv_value": f"""(digits, f) AS list_reduce(
        list_slice(list_transform(str_split(lower(digits), ''), lambda c: instr('{_DIGITS.lower()}', c) - 1), 1,
                   coalesce(list_position(list_transform(str_split(lower(digits), ''),
                                                         lambda c: instr('{_DIGITS.lower()}', c) - 1 NOT BETWEEN 0 AND f - 1), true) - 1,
                            length(digits))),
        lambda acc, v: CASE WHEN acc > {_U64} THEN acc ELSE acc * f + v END, 0::HUGEINT)""",
    "spark_conv_digits": f"""(v, b) AS coalesce(nullif(list_reduce(range(64), lambda acc, i:
        CASE WHEN acc.v = 0 THEN acc ELSE {{'v': acc.v // b, 's': substr('{_DIGITS}', CAST(acc.v % b AS INTEGER) + 1, 1) || acc.s}} END,
        {{'v': CAST(v AS HUGEINT), 's': ''}}).s, ''), '0')""",
    "spark_conv_signed": f"""(v, negative, t) AS CASE
        WHEN negative AND t > 0 THEN CASE WHEN v >= 9223372036854775808 THEN {_U64}::HUGEINT ELSE (18446744073709551616 - v) % 18446744073709551616 END
        WHEN t < 0 AND v >= 9223372036854775808 THEN 18446744073709551616 - v
        ELSE v END""",
    "spark_conv": f"""(num, f, t) AS CASE
        WHEN num IS NULL OR f IS NULL OR t IS NULL THEN NULL
        WHEN f NOT BETWEEN 2 AND 36 OR abs(t) NOT BETWEEN 2 AND 36 OR trim(CAST(num AS VARCHAR)) = '' THEN NULL
        ELSE list_transform([trim(CAST(num AS VARCHAR))], lambda s: list_transform(
            [least(spark_conv_value(CASE WHEN starts_with(s, '-') THEN substr(s, 2) ELSE s END, f), {_U64}::HUGEINT)], lambda v:
            CASE WHEN t < 0 AND (starts_with(s, '-') OR v >= 9223372036854775808) THEN '-' ELSE '' END
            || spark_conv_digits(spark_conv_signed(v, starts_with(s, '-'), t), abs(t)))[1])[1] END""",
})


def _is_function_base(node: exp.Expression) -> bool:
    """sqlglot reads ``log2(x)``/``log10(x)`` as ``log(2, x)``/``log(10, x)`` with a base literal it
    made itself (no position in the SQL): Spark computes those two differently from ``log(b, x)``."""
    return isinstance(node, exp.Literal) and "line" not in node.meta


def logarithms(tree: exp.Expression) -> None:
    """``ln``/``log(x)``, ``log(base, x)``, ``log2``, ``log10``, ``log1p``: NULL for x <= 0."""
    for node in list(tree.find_all(exp.Ln, exp.Log, exp.Anonymous)):
        if isinstance(node, exp.Ln):
            node.replace(call("spark_ln", node.this))
        elif isinstance(node, exp.Log):
            base = node.this
            if _is_function_base(base) and base.name in ("2", "10"):
                node.replace(call(f"spark_log{base.name}", node.expression))
            else:
                node.replace(call("spark_log", base, node.expression))
        elif node.name.lower() in ("log1p", "expm1") and len(node.expressions) == 1:
            node.replace(call(f"spark_{node.name.lower()}", node.expressions[0]))


def rounding(tree: exp.Expression) -> None:
    """``round`` (HALF_UP) and ``bround`` (HALF_EVEN) as Spark computes them; ``rint`` (a double,
    half even)."""
    for node in list(tree.find_all(exp.Round, exp.Rint, exp.Anonymous)):
        if isinstance(node, exp.Round):
            node.replace(_round(node.this, node.args.get("decimals") or number(0), exp.false()))
            continue
        if isinstance(node, exp.Rint):
            node.replace(call("round_even", cast(node.this, "DOUBLE"), number(0)))
            continue
        name = node.name.lower()
        if name == "bround" and len(node.expressions) in (1, 2):
            scale = node.expressions[1] if len(node.expressions) == 2 else number(0)
            node.replace(_round(node.expressions[0], scale, exp.true()))


def ceil_floor_with_scale(tree: exp.Expression) -> None:
    """``ceil(x, scale)``/``floor(x, scale)`` of a decimal or an integer: a decimal rounded up (down)
    at 10^-scale, typed as Spark's ``RoundCeil``/``RoundFloor``: DECIMAL(max(p - s + 1, 1 - scale), 0)
    for a negative scale, else DECIMAL(p - s + 1 + min(s, scale), min(s, scale)). DuckDB has no such
    function: the value is scaled by an exact decimal power of ten, so no digit goes through a double."""
    for node in list(tree.find_all(exp.Ceil, exp.Floor)):
        scale, t = integer_of(node.args.get("decimals")), spark_type(node.this)
        if scale is None or kind(t) not in ("decimal", "integral"):
            continue
        p, s = precision_scale(t)
        kept = min(s, scale)
        result = decimal(min(max(p - s + 1, 1 - scale), MAX_PRECISION), 0) if scale < 0 else \
            decimal(min(p - s + 1 + kept, MAX_PRECISION), kept)
        if kept >= s:  # nothing to round away
            node.replace(set_type(exp.Cast(this=node.this, to=result), result))
            continue
        power, inverse = f"1{'0' * abs(kept)}", f"0.{'0' * (abs(kept) - 1)}1" if kept else "1"
        up, down = (power, inverse) if kept >= 0 else (inverse, power)
        scaled = exp.Mul(this=exp.Paren(this=exp.Cast(this=node.this, to=decimal(p, s))), expression=_decimal_literal(up))
        rounded = call("ceil" if isinstance(node, exp.Ceil) else "floor", scaled)
        value = exp.Mul(this=rounded, expression=_decimal_literal(down))
        node.replace(set_type(exp.Cast(this=value, to=result), result))


def _decimal_literal(text: str) -> exp.Expression:
    """An exact DuckDB decimal (``0.001``; a whole power of ten as DECIMAL(n, 0))."""
    return exp.Cast(this=exp.Literal.number(text), to=decimal(max(len(text.replace(".", "")), 1), len(text.partition(".")[2])))


_INTEGER_BITS = {exp.DataType.Type.TINYINT: 8, exp.DataType.Type.SMALLINT: 16, exp.DataType.Type.INT: 32,
                 exp.DataType.Type.BIGINT: 64}


def _round(value: exp.Expression, scale: exp.Expression, even: exp.Boolean) -> exp.Expression:
    """``spark_round``, or straight to its branch for the value's type when that is known here (the
    macro picks by ``typeof`` at run time, which binds every branch)."""
    t = spark_type(value)
    if t is not None and t.this == exp.DataType.Type.DOUBLE:
        return call("spark_round_double", value, scale, even)
    if t is not None and t.this in _INTEGER_BITS:
        rounded = call("spark_round_integral", value, scale, even, number(_INTEGER_BITS[t.this]))
        return exp.Cast(this=rounded, to=t.copy())
    return call("spark_round", value, scale, even)


_SIMPLE = {  # Spark function (by sqlglot class or name) → our macro
    exp.Sign: "spark_signum", exp.Cbrt: "spark_cbrt", exp.Factorial: "spark_factorial", exp.Nanvl: "spark_nanvl",
    exp.BitwiseCount: "spark_bit_count", exp.Getbit: "spark_bit_get", exp.WidthBucket: "spark_width_bucket",
    exp.BitwiseLeftShift: "spark_shiftleft", exp.BitwiseRightShift: "spark_shiftright",
    "shiftrightunsigned": "spark_shiftrightunsigned", "bin": "spark_bin", "conv": "spark_conv",
}


def math_functions(tree: exp.Expression) -> None:
    """``sign``/``signum`` (a double, NaN for NaN), ``cbrt``, ``factorial``, ``nanvl``, ``bit_count``,
    ``bit_get``/``getbit``, ``width_bucket``, ``shiftleft``/``shiftright``/``shiftrightunsigned``,
    ``bin``, ``conv``, ``e()``, ``positive``/``negative``, ``hypot``, ``sec``/``csc``."""
    classes = tuple(k for k in _SIMPLE if isinstance(k, type))
    for node in list(tree.find_all(*classes, exp.Negative, exp.Sec, exp.Csc, exp.Anonymous)):
        replacement = _math_function(node)
        if replacement is not None:
            node.replace(replacement)


def _math_function(node: exp.Expression) -> exp.Expression | None:
    macro = _SIMPLE.get(type(node))
    if macro is not None:
        return call(macro, *(a for a in node.iter_expressions()))
    if isinstance(node, exp.Negative):
        return exp.Neg(this=exp.Paren(this=node.this))
    if isinstance(node, (exp.Sec, exp.Csc)):
        return exp.Div(this=exp.Literal.number("1.0"), expression=call("cos" if isinstance(node, exp.Sec) else "sin", node.this))
    if not isinstance(node, exp.Anonymous):
        return None
    name, args = node.name.lower(), node.expressions
    if name in _SIMPLE:
        return call(_SIMPLE[name], *args)
    if name == "e" and not args:
        return call("exp", number(1))
    if name == "positive" and len(args) == 1:
        return exp.Paren(this=args[0])
    if name == "hypot" and len(args) == 2:
        return call("sqrt", exp.Add(this=exp.Mul(this=args[0].copy(), expression=args[0].copy()),
                                    expression=exp.Mul(this=args[1].copy(), expression=args[1].copy())))
    return None


TRANSFORMS: tuple[Callable[[exp.Expression], None], ...] = (gated(
    (logarithms, (exp.Ln, exp.Log), frozenset({"log1p", "expm1"})),
    (rounding, (exp.Round, exp.Rint), frozenset({"bround"})),
    (ceil_floor_with_scale, (exp.Ceil, exp.Floor), frozenset()),
    (math_functions, (*(k for k in _SIMPLE if isinstance(k, type)), exp.Negative, exp.Sec, exp.Csc),
     frozenset(k for k in _SIMPLE if isinstance(k, str)) | {"e", "positive", "hypot"}),
),)

FAMILY = Family("maths", transforms=TRANSFORMS, macros=MACROS)
