"""The built-in ``date`` variable: ``${date.toString("yyyyMMdd")}``, ``${date.plusDays(-1).toString(...)}``.

Byzer hands Velocity a Joda-Time ``DateTime`` of the moment the script runs. Here the expression
is read by a small parser for exactly that grammar — ``date`` then ``.method(args)`` calls with
string or integer arguments — and only the methods in ``METHODS`` can be called: nothing in the
text is evaluated as Python.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Callable

from ..errors import MLSQLError

_TOKEN = re.compile(r"""\s*(?:(?P<name>[A-Za-z_]\w*)|(?P<int>[-+]?\d+)|"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<sym>[.(),]))""")


def _add_months(d: dt.datetime, months: int) -> dt.datetime:
    """Joda's plusMonths: the same day of month, clipped to the month's last day."""
    total = d.year * 12 + d.month - 1 + months
    year, month = divmod(total, 12)
    day = min(d.day, calendar.monthrange(year, month + 1)[1])
    return d.replace(year=year, month=month + 1, day=day)


def _plus(unit: str, sign: int) -> Callable[[dt.datetime, int], dt.datetime]:
    def apply(d: dt.datetime, n: int) -> dt.datetime:
        n *= sign
        if unit == "years":
            return _add_months(d, 12 * n)
        if unit == "months":
            return _add_months(d, n)
        return d + dt.timedelta(**{unit: n})

    return apply


_UNITS = {"Years": "years", "Months": "months", "Weeks": "weeks", "Days": "days", "Hours": "hours",
          "Minutes": "minutes", "Seconds": "seconds", "Millis": "milliseconds"}
_FIELDS = {"Year": "year", "MonthOfYear": "month", "DayOfMonth": "day", "HourOfDay": "hour",
           "MinuteOfHour": "minute", "SecondOfMinute": "second"}

#: name → (number of arguments, function)
METHODS: dict[str, tuple[int, Callable]] = {
    **{f"plus{u}": (1, _plus(unit, 1)) for u, unit in _UNITS.items()},
    **{f"minus{u}": (1, _plus(unit, -1)) for u, unit in _UNITS.items()},
    **{f"with{f}": (1, lambda d, n, f=field: d.replace(**{f: n})) for f, field in _FIELDS.items()},
    **{f"get{f}": (0, lambda d, f=field: getattr(d, f)) for f, field in _FIELDS.items()},
    "withMillisOfSecond": (1, lambda d, n: d.replace(microsecond=n * 1000)),
    "getMillisOfSecond": (0, lambda d: d.microsecond // 1000),
    "getDayOfWeek": (0, lambda d: d.isoweekday()),
    "getDayOfYear": (0, lambda d: d.timetuple().tm_yday),
    "getWeekOfWeekyear": (0, lambda d: d.isocalendar()[1]),
    "getMillis": (0, lambda d: int(d.timestamp() * 1000)),
    "withTimeAtStartOfDay": (0, lambda d: d.replace(hour=0, minute=0, second=0, microsecond=0)),
    "toString": (None, lambda d, pattern=None: to_string(d, pattern)),
}


def _fixed(width: int, value: int) -> str:
    return str(value).zfill(width)


def _text(count: int, short: str, long: str) -> str:
    return long if count >= 4 else short


def _offset(d: dt.datetime, colons: bool) -> str:
    seconds = int(d.utcoffset().total_seconds()) if d.utcoffset() is not None else 0
    sign, seconds = ("-" if seconds < 0 else "+"), abs(seconds)
    hours, minutes = divmod(seconds // 60, 60)
    return f"{sign}{hours:02d}{':' if colons else ''}{minutes:02d}"


#: Joda pattern letter → (datetime, run length) → text
_LETTERS: dict[str, Callable[[dt.datetime, int], str]] = {
    "y": lambda d, n: _fixed(2, d.year % 100) if n == 2 else _fixed(n, d.year),
    "Y": lambda d, n: _fixed(2, d.year % 100) if n == 2 else _fixed(n, d.year),
    "x": lambda d, n: _fixed(2, d.isocalendar()[0] % 100) if n == 2 else _fixed(n, d.isocalendar()[0]),
    "M": lambda d, n: _text(n, d.strftime("%b"), d.strftime("%B")) if n >= 3 else _fixed(n, d.month),
    "d": lambda d, n: _fixed(n, d.day),
    "D": lambda d, n: _fixed(n, d.timetuple().tm_yday),
    "w": lambda d, n: _fixed(n, d.isocalendar()[1]),
    "e": lambda d, n: _fixed(n, d.isoweekday()),
    "E": lambda d, n: _text(n, d.strftime("%a"), d.strftime("%A")),
    "a": lambda d, n: "AM" if d.hour < 12 else "PM",
    "H": lambda d, n: _fixed(n, d.hour),
    "k": lambda d, n: _fixed(n, d.hour or 24),
    "K": lambda d, n: _fixed(n, d.hour % 12),
    "h": lambda d, n: _fixed(n, d.hour % 12 or 12),
    "m": lambda d, n: _fixed(n, d.minute),
    "s": lambda d, n: _fixed(n, d.second),
    "S": lambda d, n: _fixed(3, d.microsecond // 1000)[:n].ljust(n, "0"),
    "Z": lambda d, n: _offset(d, colons=n >= 2),
    "G": lambda d, n: "AD",
    "C": lambda d, n: _fixed(n, d.year // 100),
}


def to_string(d: dt.datetime, pattern: str | None = None) -> str:
    """Joda's ``DateTime.toString(pattern)``; without a pattern its ISO form."""
    if pattern is None:
        return d.strftime("%Y-%m-%dT%H:%M:%S.") + _fixed(3, d.microsecond // 1000) + _offset(d, colons=True)
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("''", i):  # '' is a quote, inside quoted text or out
            out.append("'")
            i += 2
        elif ch == "'":
            i += 1
            while True:
                close = pattern.find("'", i)
                if close < 0:
                    raise MLSQLError(f"unclosed ' in the date pattern {pattern!r}")
                out.append(pattern[i:close])
                if not pattern.startswith("''", close):
                    break
                out.append("'")
                i = close + 2
            i = close + 1
        elif ch.isalpha():
            run = len(pattern[i:]) - len(pattern[i:].lstrip(ch))
            if ch not in _LETTERS:
                raise MLSQLError(f"date pattern letter {ch!r} is not supported (in {pattern!r}); "
                                 f"supported: {''.join(sorted(_LETTERS))}")
            out.append(_LETTERS[ch](d, run))
            i += run
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _tokens(text: str) -> list[tuple[str, object]]:
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match or match.end() == pos:
            raise MLSQLError(f"cannot read ${{{text}}} at {text[pos:]!r}")
        kind = match.lastgroup
        value = match.group(kind)
        out.append((kind, int(value) if kind == "int" else value))
        pos = match.end()
    return out


def is_date_expression(text: str) -> bool:
    return re.match(r"\s*date\s*(\.|$)", text) is not None


def evaluate(text: str, now: dt.datetime | None = None) -> str:
    """The value of ``date[.method(args)...]`` as text; ``now`` defaults to the current local time."""
    value: object = now or dt.datetime.now().astimezone()
    tokens = _tokens(text)
    if tokens[:1] != [("name", "date")]:
        raise MLSQLError(f"${{{text}}} is not a date expression")
    i = 1
    while i < len(tokens):
        if tokens[i] != ("sym", ".") or i + 1 >= len(tokens) or tokens[i + 1][0] != "name":
            raise MLSQLError(f"expected .method(...) in ${{{text}}}")
        name = tokens[i + 1][1]
        i += 2
        args: list[object] = []
        if i < len(tokens) and tokens[i] == ("sym", "("):
            i += 1
            while tokens[i:i + 1] and tokens[i] != ("sym", ")"):
                kind, arg = tokens[i]
                if kind not in ("int", "dq", "sq"):
                    raise MLSQLError(f"date method arguments are numbers or quoted text, not {arg!r} (in ${{{text}}})")
                args.append(arg)
                i += 1
                if tokens[i:i + 1] == [("sym", ",")]:
                    i += 1
            if tokens[i:i + 1] != [("sym", ")")]:
                raise MLSQLError(f"missing ')' in ${{{text}}}")
            i += 1
        if name not in METHODS or not isinstance(value, dt.datetime):
            raise MLSQLError(f"date has no method {name}() (in ${{{text}}}); known: {', '.join(sorted(METHODS))}")
        arity, method = METHODS[name]
        if arity is not None and len(args) != arity:
            raise MLSQLError(f"date.{name}() takes {arity} argument{'s' if arity != 1 else ''}, got {len(args)}")
        try:
            value = method(value, *args)
        except (TypeError, ValueError, OverflowError) as exc:
            raise MLSQLError(f"date.{name}({', '.join(map(repr, args))}) failed: {exc}") from exc
    return to_string(value) if isinstance(value, dt.datetime) else str(value)
