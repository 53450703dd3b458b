"""Spark 3's datetime patterns (``DateTimeFormatter`` letters, Locale.US, as Spark's
``DateTimeFormatterHelper`` restricts them) as DuckDB SQL, built when the query is translated.

Formatting (``date_format``, ``from_unixtime``): a pattern becomes one ``strftime`` where every
letter has a strftime code, else a ``||`` chain of ``strftime`` runs and expressions for the letters
strftime lacks (quarter, fractions of any width, ``e``, week-based fields, zone offsets in Java's
forms). Parsing (``to_timestamp``, ``to_date``, ``unix_timestamp``): a ``strptime`` format, with
optional sections ``[...]`` expanded into the list of formats DuckDB tries in turn, and the fields
a pattern leaves out defaulting as Spark's do (1970-01-01 00:00:00).

Written here because no library translates Java patterns into DuckDB's; sqlglot's Spark dialect
maps a few letters and passes the rest through as text (``SSS`` stays ``SSS``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache

from ..errors import MLSQLError

VALUE = "__spark_datetime_value"
"""The column name standing for the formatted value in the SQL this module writes."""

_LETTERS = frozenset("GuyYDMLdQqEecFwWaAhHkKmsSnNpVzOXxZ")
_UNSUPPORTED = frozenset("AcnNp")  # Spark: "Illegal pattern character"
_NOT_FOR_PARSING = frozenset("YWwEeFqQ")  # Spark: week-based and text fields only format
_TOO_MANY = {"G": 5, "M": 5, "L": 5, "E": 5, "e": 5, "Q": 5, "q": 5, "y": 11, "Y": 11}
_NUMBERS = frozenset("yYMLdDHhKkmsS")  # the letters that read digits
_MAX_COUNT = {"d": 2, "D": 3, "a": 1, "h": 2, "H": 2, "k": 2, "K": 2, "m": 2, "s": 2, "S": 9, "F": 1,
              "w": 2, "W": 1, "X": 5, "x": 5, "Z": 5, "O": 4, "z": 4, "V": 2}


@dataclass(frozen=True)
class Token:
    kind: str  # "letter", "text", "open" ([), "close" (])
    text: str  # the letter (kind letter) or the literal text


def _error(function: str, pattern: str, reason: str) -> MLSQLError:
    return MLSQLError(f"{function}: Fail to recognize '{pattern}' pattern in the DateTimeFormatter ({reason}); "
                      f"see Spark's datetime pattern guide (sql-ref-datetime-pattern)")


def tokenize(pattern: str, function: str, parsing: bool) -> list[tuple[Token, int]]:
    """The pattern as (token, count) runs, checked as Spark 3.3 checks it."""
    runs: list[tuple[Token, int]] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "'":
            end = i + 1
            text = []
            while True:
                if end >= len(pattern):
                    raise _error(function, pattern, "Pattern ends with an incomplete string literal")
                if pattern[end] == "'":
                    if end + 1 < len(pattern) and pattern[end + 1] == "'":
                        text.append("'")
                        end += 2
                        continue
                    break
                text.append(pattern[end])
                end += 1
            runs.append((Token("text", "".join(text) if end > i + 1 else "'"), 1))
            i = end + 1
            continue
        if c in "[]":
            runs.append((Token("open" if c == "[" else "close", c), 1))
            i += 1
            continue
        if c in "#{}":
            raise _error(function, pattern, f"Pattern includes reserved character: '{c}'")
        if c.isascii() and c.isalpha():
            count = 1
            while i + count < len(pattern) and pattern[i + count] == c:
                count += 1
            _check_letter(c, count, pattern, function, parsing)
            runs.append((Token("letter", c), count))
            i += count
            continue
        runs.append((Token("text", c), 1))
        i += 1
    depth = 0
    for token, _ in runs:
        depth += token.kind == "open"
        depth -= token.kind == "close"
        if depth < 0:
            raise _error(function, pattern, "Pattern invalid as it contains ] without previous [")
    if depth:
        raise _error(function, pattern, "Pattern has an unclosed optional section [")
    return runs


def _check_letter(c: str, count: int, pattern: str, function: str, parsing: bool) -> None:
    if c == "u":
        raise _error(function, pattern, "Pattern letter 'u'(Day number of week) is not supported since Spark 3.0. "
                                        "Please use 'e' or 'E'(day-of-week) instead")
    if c not in _LETTERS:
        raise _error(function, pattern, f"Unknown pattern letter: {c}")
    if c in _UNSUPPORTED or (parsing and c in _NOT_FOR_PARSING):
        raise _error(function, pattern, f"Illegal pattern character: {c}")
    if count >= _TOO_MANY.get(c, 99) or count > _MAX_COUNT.get(c, 99) or (parsing and c == "y" and count > 6):
        raise _error(function, pattern, f"Too many pattern letters: {c}")
    if c == "V" and count != 2:
        raise _error(function, pattern, "Pattern letter count must be 2: V")
    if c == "O" and count not in (1, 4):
        raise _error(function, pattern, "Pattern letter count must be 1 or 4: O")


def _not_here(function: str, pattern: str, what: str) -> MLSQLError:
    return MLSQLError(f"{function}: the datetime pattern '{pattern}' uses {what}, which is not supported here")


# -- formatting -------------------------------------------------------------------------------------

def _pad(sql: str, width: int) -> str:
    """An integer with at least ``width`` digits (lpad would cut a longer one)."""
    return f"printf('%0{width}d', {sql})" if width > 1 else f"CAST({sql} AS VARCHAR)"


_V = VALUE
_MONTH_START_DOW = f"isodow(date_trunc('month', CAST({_V} AS DATE)))"
_OFFSET = f"date_part('timezone', {_V})"  # seconds east of UTC in the session time zone
_ORDINALS = "['1st', '2nd', '3rd', '4th']"


def _offset(colon: bool, zero: str | None, minutes: bool = True, seconds: bool = False, prefix: str = "") -> str:
    """The value's UTC offset as java.time prints it: ±HH, then MM (always, or when ``minutes`` is
    False only when not zero), then ss when ``seconds`` and not zero; ``zero`` for +00:00."""
    sep = ":" if colon else ""
    sign = f"CASE WHEN {_OFFSET} < 0 THEN '-' ELSE '+' END"
    hh = f"lpad(CAST(abs({_OFFSET}) // 3600 AS VARCHAR), 2, '0')"
    mm = f"lpad(CAST(abs({_OFFSET}) % 3600 // 60 AS VARCHAR), 2, '0')"
    ss = f"lpad(CAST(abs({_OFFSET}) % 60 AS VARCHAR), 2, '0')"
    text = f"'{prefix}' || {sign} || {hh} || "
    text += f"'{sep}' || {mm}" if minutes else f"CASE WHEN abs({_OFFSET}) % 3600 // 60 = 0 THEN '' ELSE '{sep}' || {mm} END"
    if seconds:
        text += f" || CASE WHEN abs({_OFFSET}) % 60 = 0 THEN '' ELSE '{sep}' || {ss} END"
    return text if zero is None else f"CASE WHEN {_OFFSET} = 0 THEN '{zero}' ELSE {text} END"


def _localized_offset(full: bool) -> str:
    """``O`` (GMT-8, GMT+5:30, GMT-7:52:58) and ``OOOO`` (GMT-08:00); GMT alone for zero."""
    if full:
        return f"CASE WHEN {_OFFSET} = 0 THEN 'GMT' ELSE {_offset(colon=True, zero=None, seconds=True, prefix='GMT')} END"
    sign = f"CASE WHEN {_OFFSET} < 0 THEN '-' ELSE '+' END"
    hours = f"CAST(abs({_OFFSET}) // 3600 AS VARCHAR)"
    mm = f"lpad(CAST(abs({_OFFSET}) % 3600 // 60 AS VARCHAR), 2, '0')"
    ss = f"lpad(CAST(abs({_OFFSET}) % 60 AS VARCHAR), 2, '0')"
    body = (f"{sign} || {hours} || CASE WHEN abs({_OFFSET}) % 3600 = 0 THEN '' ELSE ':' || {mm} END"
            f" || CASE WHEN abs({_OFFSET}) % 60 = 0 THEN '' ELSE ':' || {ss} END")
    return f"CASE WHEN {_OFFSET} = 0 THEN 'GMT' ELSE 'GMT' || {body} END"


def _format_piece(c: str, n: int, function: str, pattern: str) -> tuple[str, str]:
    """("strftime", code) or ("sql", expression over VALUE) for one letter run."""
    year = f"year({_V})"
    simple = {
        ("M", 1): "%-m", ("M", 2): "%m", ("M", 3): "%b", ("M", 4): "%B",
        ("d", 1): "%-d", ("d", 2): "%d", ("D", 1): "%-j", ("D", 3): "%j",
        ("E", 1): "%a", ("E", 2): "%a", ("E", 3): "%a", ("E", 4): "%A", ("e", 3): "%a", ("e", 4): "%A",
        ("a", 1): "%p", ("h", 1): "%-I", ("h", 2): "%I", ("H", 1): "%-H", ("H", 2): "%H",
        ("m", 1): "%-M", ("m", 2): "%M", ("s", 1): "%-S", ("s", 2): "%S",
        ("S", 3): "%g", ("S", 6): "%f", ("S", 9): "%n", ("V", 2): "%Z",
    }
    key = ("M" if c == "L" else c, n)
    if key in simple:
        return "strftime", simple[key]
    if c == "G":
        ad, bc = ("Anno Domini", "Before Christ") if n == 4 else ("AD", "BC")
        return "sql", f"CASE WHEN {year} > 0 THEN '{ad}' ELSE '{bc}' END"
    # the week-based fields (Y, w, W, e) count weeks from Monday, a first week having at least 4 days,
    # as Spark's own tests print them (datetime-formatting.sql.out)
    if c in "yY":
        y = year if c == "y" else f"isoyear({_V})"
        if n == 2:
            return "sql", f"lpad(CAST(({y}) % 100 AS VARCHAR), 2, '0')"
        return "sql", _pad(y, n)
    if c == "D":
        return "sql", _pad(f"dayofyear({_V})", n)
    if c in "Qq":
        quarter = f"quarter({_V})"
        return "sql", {1: _pad(quarter, 1), 2: _pad(quarter, 2), 3: f"'Q' || {quarter}",
                       4: f"{_ORDINALS}[{quarter}] || ' quarter'"}[n]
    if c == "e":
        return "sql", _pad(f"isodow({_V})", n)
    if c == "w":
        return "sql", _pad(f"week({_V})", n)
    if c == "W":
        first_week = f"CASE WHEN {_MONTH_START_DOW} <= 4 THEN 1 ELSE 0 END"
        return "sql", _pad(f"(day({_V}) + {_MONTH_START_DOW} - 2) // 7 + {first_week}", n)
    if c == "K":
        return "sql", _pad(f"hour({_V}) % 12", n)
    if c == "k":
        return "sql", _pad(f"CASE WHEN hour({_V}) = 0 THEN 24 ELSE hour({_V}) END", n)
    if c == "S":
        return "sql", f"left(strftime({_V}, '%n'), {n})"
    if c in "Xx":  # X: Z for zero; X/x: +HH[mm], XX/xx: +HHmm, XXX: +HH:mm, XXXX: +HHmm[ss], XXXXX: +HH:mm[:ss]
        return "sql", _offset(colon=n in (3, 5), zero="Z" if c == "X" else None, minutes=n != 1, seconds=n >= 4)
    if c == "Z":  # Z-ZZZ: +HHmm, ZZZZ: GMT+HH:mm[:ss], ZZZZZ: +HH:mm[:ss] with Z for zero
        if n == 4:
            return "sql", _localized_offset(full=True)
        return "sql", _offset(colon=n == 5, zero="Z" if n == 5 else None, seconds=n == 5)
    if c == "O":
        return "sql", _localized_offset(full=n == 4)
    if c == "z":
        raise _not_here(function, pattern, "'z' (time-zone names such as PST)")
    if c == "F":  # aligned day of week in month, as Spark 3.3's Java 8 and 11 print it
        return "sql", f"CAST((day({_V}) - 1) % 7 + 1 AS VARCHAR)"
    raise _error(function, pattern, f"Unknown pattern letter: {c}")  # pragma: no cover - tokenize checks


def _format_runs(pattern: str, function: str) -> list[tuple[str, str]]:
    """The pattern as ("strftime", codes) pieces, neighbours joined, and ("sql", letter run) pieces
    (``QQQ``) for the letters strftime lacks; an optional section prints whole (a timestamp has
    every field)."""
    pieces: list[tuple[str, str]] = []
    for token, count in tokenize(pattern, function, parsing=False):
        if token.kind == "letter":
            kind, code = _format_piece(token.text, count, function, pattern)
            piece = (kind, code if kind == "strftime" else token.text * count)
        elif token.kind == "text":
            piece = ("strftime", token.text.replace("%", "%%"))
        else:
            continue
        if piece[0] == "strftime" and pieces and pieces[-1][0] == "strftime":
            pieces[-1] = ("strftime", pieces[-1][1] + piece[1])
        else:
            pieces.append(piece)
    return pieces


@lru_cache(maxsize=256)
def format_sql(pattern: str, function: str = "date_format") -> str:
    """DuckDB SQL for Spark's formatting of VALUE (a TIMESTAMPTZ) with ``pattern``."""
    parts = [f"strftime({_V}, {_quote(text)})" if kind == "strftime" else f"({_run_sql(text)})"
             for kind, text in _format_runs(pattern, function)]
    if not parts:
        return "CASE WHEN {0} IS NULL THEN NULL ELSE '' END".format(_V)
    return " || ".join(parts)


def _run_sql(run: str) -> str:
    """The SQL of a letter run that strftime cannot write (checked already)."""
    return _format_piece(run[0], len(run), "date_format", run)[1]


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"



# -- formatting with a pattern from a column --------------------------------------------------------

_PIECE_END = "\x01"  # chr(1), between the pieces of a pattern as ``spark_datetime_pattern_pieces`` writes them


def pattern_pieces(patterns, functions):
    """DuckDB's ``spark_datetime_pattern_pieces(pattern, function)`` over Arrow batches: each row's
    pattern checked and cut into pieces, ``%codes`` for strftime (``s`` before them) and letter runs
    (``l`` before them, ``lQQQ``) that ``ROW_FORMAT`` writes; an invalid pattern is Spark's error
    (Spark 3.1 and later fail, not NULL), a NULL one NULL (DuckDB does not call for it)."""
    import pyarrow as pa  # only a connection calls this: parsing a script never needs Arrow

    return pa.array([_encoded_pieces(pattern, function) for pattern, function
                     in zip(patterns.to_pylist(), functions.to_pylist())], pa.string())


@lru_cache(maxsize=256)
def _encoded_pieces(pattern: str, function: str) -> str:
    runs = _format_runs(pattern, function)  # none for '' (strftime refuses an empty format)
    return _PIECE_END.join(("s" if kind == "strftime" else "l") + text for kind, text in runs)


def _row_format_macro() -> str:
    """``spark_format_by_pattern(VALUE, pieces)``: VALUE formatted with a pattern known only when the
    query runs, its pieces (``spark_datetime_pattern_pieces``) in turn; a letter run's SQL is the one
    ``format_sql`` writes for it (every run strftime lacks, each SQL once). The pieces are an argument,
    not a call in the body, so that the query itself names the Python function: a worker's fresh
    connection lacks it (``cells.partitions`` runs there only what such a connection has)."""
    runs_of: dict[str, list[str]] = {}
    for letter in sorted(_LETTERS):
        for count in range(1, 12):
            try:
                _check_letter(letter, count, letter * count, "date_format", parsing=False)
                kind, sql = _format_piece(letter, count, "date_format", letter * count)
            except MLSQLError:  # not a valid run, or one refused here ('z'): the pieces' check says so
                continue
            if kind == "sql":
                runs_of.setdefault(sql, []).append(_quote("l" + letter * count))
    whens = "\n            ".join(f"WHEN piece IN ({', '.join(runs)}) THEN ({sql})" for sql, runs in runs_of.items())
    return f"""({_V}, pieces) AS CASE WHEN {_V} IS NULL THEN NULL ELSE array_to_string(list_transform(
        str_split(pieces, chr({ord(_PIECE_END)})), lambda piece: CASE
            WHEN piece = '' THEN ''
            WHEN piece[1] = 's' THEN strftime({_V}, piece[2:])
            {whens} END), '') END"""


ROW_FORMAT = _row_format_macro()
"""The definition of the ``spark_format_by_pattern`` macro (``_row_format_macro``)."""

# -- parsing ----------------------------------------------------------------------------------------

_PARSE_CODES = {
    ("M", 1): "%m", ("M", 2): "%m", ("M", 3): "%b", ("M", 4): "%B",
    ("d", 1): "%d", ("d", 2): "%d", ("D", 1): "%j", ("D", 2): "%j", ("D", 3): "%j",
    ("a", 1): "%p", ("h", 1): "%I", ("h", 2): "%I", ("H", 1): "%H", ("H", 2): "%H",
    ("m", 1): "%M", ("m", 2): "%M", ("s", 1): "%S", ("s", 2): "%S", ("V", 2): "%Z",
}
_FIELDS = {"y": "year", "M": "month", "L": "month", "d": "day", "D": "day"}


@dataclass(frozen=True)
class ParseFormat:
    formats: tuple[str, ...]  # strptime formats, tried in turn
    prefix: str  # literal text put before the string (defaults for fields the pattern lacks)
    two_digit_year: bool  # ``yy``: Spark reads 00-99 as 2000-2099, strptime's %y 1969-2068
    zoned: bool  # the pattern reads an offset or zone: strptime gives an instant


@lru_cache(maxsize=256)
def parse_format(pattern: str, function: str) -> ParseFormat:
    """How DuckDB's strptime reads strings as Spark parses them with ``pattern``."""
    runs = tokenize(pattern, function, parsing=True)
    present: set[str] = set()
    zoned = two_digit_year = False
    for token, count in runs:
        if token.kind != "letter":
            continue
        present.add(_FIELDS.get(token.text, token.text))
        zoned |= token.text in "VzOXxZ"
        two_digit_year |= token.text == "y" and count == 2
        if token.text in "GkK":
            raise _not_here(function, pattern, f"'{token.text}' for parsing")
    prefix_fields = [("%Y", "1970", "year"), ("%m", "01", "month"), ("%d", "01", "day")]
    if "day" in present and any(t.text == "D" for t, _ in runs if t.kind == "letter"):
        prefix_fields = prefix_fields[:1]  # a day of the year needs no month and day
    missing = [(code, value) for code, value, field in prefix_fields if field not in present]
    prefix_codes = "".join(f"{code}\x01" for code, _ in missing)
    prefix = "".join(f"{value}\x01" for _, value in missing)
    formats = tuple(prefix_codes + f for f in _alternatives(runs, function, pattern))
    return ParseFormat(formats, prefix, two_digit_year, zoned)


def _alternatives(runs: list[tuple[Token, int]], function: str, pattern: str) -> list[str]:
    """The strptime formats of the pattern: each optional section present, or absent."""
    formats = [""]
    stack: list[list[str]] = []
    for (token, count), (following, _) in zip(runs, runs[1:] + [(Token("text", ""), 1)]):
        if token.kind == "letter" and token.text == "S" and following.kind == "letter" and following.text in _NUMBERS:
            raise _not_here(function, pattern, "a fraction of a second directly followed by another field")
        if token.kind == "open":
            stack.append(formats)
            formats = list(formats)
            continue
        if token.kind == "close":
            without = stack.pop()
            formats = list(dict.fromkeys(formats + without))
            if len(formats) > 64:
                raise _not_here(function, pattern, "too many optional sections")
            continue
        piece = _parse_piece(token, count, function, pattern)
        formats = [f + piece for f in formats]
    return sorted(formats, key=len, reverse=True)


def _parse_piece(token: Token, count: int, function: str, pattern: str) -> str:
    if token.kind == "text":
        return token.text.replace("%", "%%")
    c = "M" if token.text == "L" else token.text
    if c == "y":
        return "%y" if count == 2 else "%Y"
    if c == "S":
        return "%f" if count <= 6 else "%n"
    if c in "XxZO":
        return "%z"
    if c == "z":
        return "%Z"
    code = _PARSE_CODES.get((c, count))
    if code is None:
        raise _not_here(function, pattern, f"'{c * count}' for parsing")
    return code



# -- one format for both ways -----------------------------------------------------------------------

_BOTH_WAYS = {("y", 2): "%y", ("S", 3): "%g", ("S", 6): "%f", ("a", 1): "%p"}


@lru_cache(maxsize=256)
def strftime_format(pattern: str, function: str) -> str:
    """One ``strptime``/``strftime`` format that reads and writes a pattern of the common fields
    (``dd/MM/yyyy HH:mm:ss.SSS``; ``SSS`` as ``%g``, milliseconds): the ``timestampFormat`` and
    ``dateFormat`` options of ``from_json``/``to_json``/``from_csv``/``to_csv``, which are read by
    DuckDB and written by Python. Any other field, or an optional section, is refused, naming it."""
    out = []
    for token, count in tokenize(pattern, function, parsing=True):
        if token.kind == "text":
            out.append(token.text.replace("%", "%%"))
            continue
        code = None if token.kind != "letter" else \
            _BOTH_WAYS.get((token.text, count)) or ("%Y" if token.text == "y" else _PARSE_CODES.get((token.text, count)))
        if code is None or code == "%Z":
            what = "an optional section" if token.kind != "letter" else f"'{token.text * count}'"
            raise _not_here(function, pattern, f"{what} in an option")
        out.append(code)
    return "".join(out)
