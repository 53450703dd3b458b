"""Numbers printed the way Byzer's EDA ETs print them: through Java's ``BigDecimal`` rounding
(HALF_UP on the decimal text) and ``Double.toString``."""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Context, Decimal

_JAVA_BIG_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_WIDE = Context(prec=1000)


def java_double(x: float) -> str:
    """Java's ``Double.toString``: plain from 10^-3 to 10^7, else ``d.dddE±n``; always a digit
    after the point (``57.0``, ``1.5552231521E10``)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1, x) < 0 else "0.0"
    sign = "-" if x < 0 else ""
    digits_tuple = Decimal(repr(abs(x))).normalize().as_tuple()
    digits = "".join(map(str, digits_tuple.digits))
    exponent = len(digits) - 1 + digits_tuple.exponent  # the power of ten of the first digit
    if -3 <= exponent < 7:
        whole = digits[:exponent + 1] if exponent >= 0 else "0"
        fraction = digits[exponent + 1:] if exponent >= 0 else "0" * (-exponent - 1) + digits
        whole = whole.ljust(exponent + 1, "0") if exponent >= 0 else whole
        return f"{sign}{whole}.{fraction or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def text(value) -> str:
    """A metric's value as Spark's row would print it before formatting (null: empty)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double(value)
    return str(value)


def rounded(value: str, places: int) -> str:
    """``BigDecimal(value).setScale(places, HALF_UP).toDouble.toString`` when ``value`` is a number
    as BigDecimal reads it; anything else (names, timestamps, "") unchanged."""
    if not _JAVA_BIG_DECIMAL.fullmatch(value):
        return value
    number = float(Decimal(value).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP, context=_WIDE))
    return java_double(number + 0.0)  # BigDecimal has no negative zero: -0.001 rounds to 0.0


def whole(value: str) -> str:
    """``BigDecimal(value).setScale(0, HALF_UP).toLong.toString``; non-numbers unchanged."""
    if not _JAVA_BIG_DECIMAL.fullmatch(value):
        return value
    return str(int(Decimal(value).quantize(Decimal(1), rounding=ROUND_HALF_UP, context=_WIDE)))
