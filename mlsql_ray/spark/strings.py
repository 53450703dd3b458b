"""Spark 3.3's string and binary functions where DuckDB's namesakes answer otherwise, as DuckDB
macros (``MACROS``) and the tree rewrites that call them (``TRANSFORMS``).

Spark picks an implementation by the argument's type (``lpad`` of a string or of binary, ``hex``
of a number or of bytes); the macros do the same with DuckDB's typed macro overloads, resolved
when DuckDB binds the query. Where a result must keep the argument's type, ``cast_to_type``
gives it back. Every macro is plain vectorised SQL: no Python runs per row.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from .calls import call, case, cast, fail, hygienic, integer_of, is_null, number, string, text_of
from .arrays_maps import gated
from .family import Family

_INT_MAX = "2147483647"

# typeof(x) as Spark names types: DuckDB's type string rewritten by regexes. typeof folds to a
# constant when DuckDB binds the query, and so does this chain: nothing runs per row.
_SCALAR_NAMES = (
    (r"TIMESTAMP WITH TIME ZONE", "timestamp"), (r"\bTIMESTAMP(?:_S|_MS|_NS)?\b", "timestamp_ntz"),
    (r"\bTINYINT\b", "tinyint"), (r"\bSMALLINT\b", "smallint"), (r"\bINTEGER\b", "int"), (r"\bBIGINT\b", "bigint"),
    (r"\bHUGEINT\b", "decimal{38,0}"), (r"\bFLOAT\b", "float"), (r"\bDOUBLE\b", "double"),
    (r"\bDECIMAL\((\d+),(\d+)\)", r"decimal{\1,\2}"), (r"\b(?:VARCHAR|UUID|JSON)\b", "string"),
    (r"\bBOOLEAN\b", "boolean"), (r"\bDATE\b", "date"), (r"\bBLOB\b", "binary"), (r'"NULL"', "void"),
    (r"\bINTERVAL\b", "interval"),
)
_SCALAR = r"([a-z_]+(?:\{\d+,\d+\})?)"
_STRUCT_FIELDS = ((r'(STRUCT\(|, )("(?:[^"]|"")*"|[^ ,()"]+) ([a-zA-Z])', r"\1\2:\3"),)  # name type → name:type
_NESTED = tuple((rf"{kind}\(([^()]*)\){dims}", wrap)
                for kind in ("STRUCT", "MAP")
                for dims, wrap in ((r"\[\d*\]\[\d*\]", f"array«array«{kind.lower()}«\\1»»»"),
                                   (r"\[\d*\]", f"array«{kind.lower()}«\\1»»"), ("", f"{kind.lower()}«\\1»")))
_TYPE_RULES = (
    *_SCALAR_NAMES,
    *(_STRUCT_FIELDS * 2),  # a match takes the first letter of its type: a nested STRUCT( needs a second pass
    (rf"\b{_SCALAR}\[\d*\]\[\d*\]\[\d*\]", r"array«array«array«\1»»»"),
    (rf"\b{_SCALAR}\[\d*\]\[\d*\]", r"array«array«\1»»"), (rf"\b{_SCALAR}\[\d*\]", r"array«\1»"),
    *(_NESTED * 4),  # innermost first, four levels of nesting
    (", ", ","), ('"([^"]*)":', r"\1:"), ("«", "<"), ("»", ">"), (r"\{", "("), (r"\}", ")"),
)


def _typeof_sql() -> str:
    sql = "typeof(x)"
    for pattern, replacement in _TYPE_RULES:
        sql = f"regexp_replace({sql}, '{pattern}', '{replacement}', 'g')"
    return sql


def _hex_bytes(blob: str) -> str:
    """The bytes of a BLOB as a list of integers 0..255."""
    return (f"list_transform([hex({blob})], lambda h: list_transform(range(length(h) // 2),"
            f" lambda i: ('0x' || substr(h, 2 * i + 1, 2))::INTEGER))[1]")


MACROS: dict[str, str] = hygienic({
    "spark_typeof": f"(x) AS {_typeof_sql()}",
    # Spark's substring (UTF8String.substringSQL): pos 0 is 1, a negative pos counts from the end,
    # and the length is cut where it would start before the first character
    "spark_substr_start": "(n, pos) AS CASE WHEN pos > 0 THEN pos - 1 WHEN pos < 0 THEN n + pos ELSE 0 END",
    # greatest(x, 0) that keeps a NULL (DuckDB's greatest skips NULLs)
    "spark_nonneg": "(x) AS CASE WHEN x < 0 THEN 0 ELSE x END",
    # ... which DuckDB's substring agrees with for a position >= 1 and a length >= 0
    "spark_substr_plain": """(s VARCHAR, pos BIGINT, l BIGINT) AS substring(s, pos, l),
        (s BLOB, pos BIGINT, l BIGINT) AS unhex(substring(hex(s), 2 * pos - 1, 2 * l)),
        (s, pos, l) AS substring(CAST(s AS VARCHAR), pos, l)""",
    "spark_right": "(s VARCHAR, n BIGINT) AS right(s, n), (s BLOB, n BIGINT) AS unhex(right(hex(s), 2 * n))",
    "spark_substr": """(s VARCHAR, pos BIGINT, l BIGINT) AS substring(s, spark_nonneg(spark_substr_start(length(s), pos)) + 1,
                spark_nonneg(spark_substr_start(length(s), pos) + l - spark_nonneg(spark_substr_start(length(s), pos)))),
        (s BLOB, pos BIGINT, l BIGINT) AS unhex(substring(hex(s), 2 * spark_nonneg(spark_substr_start(octet_length(s), pos)) + 1,
                2 * spark_nonneg(spark_substr_start(octet_length(s), pos) + l - spark_nonneg(spark_substr_start(octet_length(s), pos))))),
        (s, pos, l) AS substring(CAST(s AS VARCHAR), spark_nonneg(spark_substr_start(length(CAST(s AS VARCHAR)), pos)) + 1,
                spark_nonneg(spark_substr_start(length(CAST(s AS VARCHAR)), pos) + l
                             - spark_nonneg(spark_substr_start(length(CAST(s AS VARCHAR)), pos))))""",
    # lpad/rpad (UTF8String.lpad, ByteArray.lpad): an empty pad, or a string longer than len, gives
    # its first len characters; binary pads with zero bytes by default
    "spark_lpad": """(s VARCHAR, n BIGINT, p VARCHAR) AS CASE WHEN p = '' THEN left(s, spark_nonneg(n)) ELSE lpad(s, CAST(spark_nonneg(n) AS INTEGER), p) END,
        (s BLOB, n BIGINT, p BLOB) AS unhex(CASE WHEN octet_length(p) = 0 THEN left(hex(s), 2 * spark_nonneg(n))
                                                ELSE lpad(hex(s), CAST(2 * spark_nonneg(n) AS INTEGER), hex(p)) END)""",
    "spark_rpad": """(s VARCHAR, n BIGINT, p VARCHAR) AS CASE WHEN p = '' THEN left(s, spark_nonneg(n)) ELSE rpad(s, CAST(spark_nonneg(n) AS INTEGER), p) END,
        (s BLOB, n BIGINT, p BLOB) AS unhex(CASE WHEN octet_length(p) = 0 THEN left(hex(s), 2 * spark_nonneg(n))
                                                ELSE rpad(hex(s), CAST(2 * spark_nonneg(n) AS INTEGER), hex(p)) END)""",
    "spark_pad_default": "(s VARCHAR) AS ' ', (s BLOB) AS '\\x00'::BLOB",
    # unhex: NULL for a character that is no hex digit (Spark), an odd length gets a leading 0
    "spark_unhex": "(s) AS CASE WHEN regexp_full_match(s, '[0-9a-fA-F]*') THEN unhex(s) END",
    # hex of a number is the hex of the long it casts to (two's complement); of text, its UTF-8 bytes
    "spark_hex": """(x VARCHAR) AS hex(x), (x BLOB) AS hex(x), (x BIGINT) AS hex(x),
        (x DOUBLE) AS hex(CAST(trunc(x) AS BIGINT))""",
    "spark_base64_letters": "(s) AS split_part(regexp_replace(translate(s, '-_', '+/'), '[^A-Za-z0-9+/=]', '', 'g'), '=', 1)",
    "spark_base64_padded": """(t) AS rpad(left(t, length(t) - CASE WHEN length(t) % 4 = 1 THEN 1 ELSE 0 END),
        CAST((length(t) - CASE WHEN length(t) % 4 = 1 THEN 1 ELSE 0 END + 3) // 4 * 4 AS INTEGER), '=')""",
    # base64 as Spark 3.3 decodes it (commons-codec): characters outside the alphabet are skipped,
    # '-' and '_' read as '+' and '/', decoding stops at '=', a dangling character is dropped
    "spark_unbase64": "(s) AS from_base64(spark_base64_padded(spark_base64_letters(s)))",
    # encode(str, charset) / decode(bin, charset) for the charsets Spark documents, one macro per
    # charset (a literal charset picks it when the query is translated); Java's getBytes writes '?'
    # for a character the charset lacks, and new String(bytes, charset) reads U+FFFD for a bad byte
    "spark_encode_latin": """(s, top) AS unhex(array_to_string(list_transform(str_split(s, ''),
        lambda c: CASE WHEN unicode(c) < top THEN printf('%02X', unicode(c)) ELSE '3F' END), ''))""",
    "spark_utf16_unit": "(u, little) AS CASE WHEN little THEN printf('%02X%02X', u & 255, u >> 8) ELSE printf('%04X', u) END",
    "spark_encode_utf16": """(s, little, bom) AS unhex(CASE WHEN bom THEN 'FEFF' ELSE '' END || array_to_string(list_transform(
        str_split(s, ''), lambda c: CASE WHEN unicode(c) < 65536 THEN spark_utf16_unit(unicode(c), little)
             ELSE spark_utf16_unit(55296 + ((unicode(c) - 65536) >> 10), little)
                  || spark_utf16_unit(56320 + ((unicode(c) - 65536) & 1023), little) END), ''))""",
    "spark_decode_latin": f"""(b, top) AS array_to_string(list_transform({_hex_bytes('b')},
        lambda x: CASE WHEN x < top THEN chr(x) ELSE chr(65533) END), '')""",
    # (the list_transform([x], lambda v: ...)[1] below names a value once: a macro's parameter is
    # copied wherever it is used, and these take the bytes of other calls)
    "spark_utf16_units": """(h, little) AS list_transform(range(length(h) // 4), lambda i:
        CASE WHEN little THEN ('0x' || substr(h, 4 * i + 3, 2) || substr(h, 4 * i + 1, 2))::INTEGER
             ELSE ('0x' || substr(h, 4 * i + 1, 4))::INTEGER END)""",
    "spark_utf16_text": """(units) AS list_transform([units], lambda us: array_to_string(list_transform(us, lambda u, i:
        CASE WHEN u BETWEEN 55296 AND 56319 AND us[i + 1] BETWEEN 56320 AND 57343
             THEN chr(65536 + ((u - 55296) << 10) + (us[i + 1] - 56320))
             WHEN u BETWEEN 56320 AND 57343 AND us[i - 1] BETWEEN 55296 AND 56319 THEN ''
             WHEN u BETWEEN 55296 AND 57343 THEN chr(65533)
             ELSE chr(u) END), ''))[1]""",
    # UTF-16 with a byte order mark says its order (big-endian without one)
    "spark_decode_utf16": """(b) AS list_transform([hex(b)], lambda h:
        CASE WHEN starts_with(h, 'FFFE') THEN spark_utf16_text(spark_utf16_units(substr(h, 5), true))
             WHEN starts_with(h, 'FEFF') THEN spark_utf16_text(spark_utf16_units(substr(h, 5), false))
             ELSE spark_utf16_text(spark_utf16_units(h, false)) END)[1]""",
    # ascii: the code point of the first character, 0 for ''; a number is read as its text
    "spark_ascii": "(s VARCHAR) AS ascii(s), (s) AS ascii(CAST(s AS VARCHAR))",
    # chr(n): '' for n < 0, else the character n % 256 (Latin-1)
    "spark_chr": "(n BIGINT) AS CASE WHEN n < 0 THEN '' ELSE chr(CAST(n % 256 AS INTEGER)) END, "
                 "(n DOUBLE) AS CASE WHEN n < 0 THEN '' ELSE chr(CAST(trunc(n) % 256 AS INTEGER)) END",
    "spark_occurrences": "(s, d) AS list_filter(range(1, length(s) - length(d) + 2), lambda i: substr(s, i, length(d)) = d)",
    # substring_index: Spark searches each next delimiter from one character after the last, so
    # matches may overlap ('aaa', 'aa'); the starts of every occurrence give the cut
    "spark_substring_index": """(s, d, n) AS CASE
        WHEN d = '' OR n = 0 THEN ''
        WHEN length(d) = 1 AND n > 0 THEN array_to_string(list_slice(string_split(s, d), 1, n), d)
        WHEN length(d) = 1 THEN array_to_string(list_slice(string_split(s, d),
                                                greatest(len(string_split(s, d)) + n + 1, 1), len(string_split(s, d))), d)
        WHEN len(spark_occurrences(s, d)) < abs(n) THEN s
        WHEN n > 0 THEN left(s, spark_occurrences(s, d)[n] - 1)
        ELSE substr(s, spark_occurrences(s, d)[len(spark_occurrences(s, d)) + n + 1] + length(d)) END""",
    # locate(substr, str, pos): 0 for a NULL or non-positive pos; '' is found at 1 (UTF8String.indexOf)
    "spark_locate": """(sub, s, pos) AS CAST(CASE
        WHEN pos IS NULL THEN 0 WHEN sub IS NULL OR s IS NULL THEN NULL WHEN pos < 1 THEN 0 WHEN sub = '' THEN 1
        WHEN strpos(substr(s, pos), sub) = 0 THEN 0 ELSE strpos(substr(s, pos), sub) + pos - 1 END AS INTEGER)""",
    "spark_find_in_set": """(x, set) AS CAST(CASE WHEN x IS NULL OR set IS NULL THEN NULL WHEN strpos(x, ',') > 0 THEN 0
        ELSE coalesce(list_position(string_split(set, ','), x), 0) END AS INTEGER)""",
    # split_part: part 0 fails; an empty delimiter does not split
    "spark_split_part": """(s, d, n) AS CASE WHEN n = 0 THEN error('split_part: SQL array indices start at 1 (the part number is 0)')
        WHEN d = '' THEN CASE WHEN n IN (1, -1) THEN s ELSE '' END
        ELSE split_part(s, d, n) END""",
    "spark_octet_length": "(s VARCHAR) AS CAST(strlen(s) AS INTEGER), (s BLOB) AS CAST(octet_length(s) AS INTEGER)",
    "spark_bit_length": "(s VARCHAR) AS CAST(strlen(s) * 8 AS INTEGER), (s BLOB) AS CAST(octet_length(s) * 8 AS INTEGER)",
    "spark_length": "(s VARCHAR) AS length(s), (s BLOB) AS octet_length(s), (s) AS length(CAST(s AS VARCHAR))",
    # contains/startswith/endswith of binary (Spark 3.3) compare whole bytes: hex digits at even offsets
    "spark_contains": "(a VARCHAR, b VARCHAR) AS contains(a, b), (a BLOB, b BLOB) AS regexp_matches(hex(a), '^(?:..)*' || hex(b))",
    "spark_startswith": "(a VARCHAR, b VARCHAR) AS starts_with(a, b), (a BLOB, b BLOB) AS starts_with(hex(a), hex(b))",
    "spark_endswith": "(a VARCHAR, b VARCHAR) AS ends_with(a, b), (a BLOB, b BLOB) AS ends_with(hex(a), hex(b))",
    "spark_btrim": "(s VARCHAR) AS trim(s), (s BLOB) AS trim(decode(s))",
    "spark_btrim_chars": "(s VARCHAR, t VARCHAR) AS trim(s, t), (s BLOB, t BLOB) AS trim(decode(s), decode(t))",
    # overlay(input PLACING replace FROM pos [FOR len]) (Overlay.calculate): the part of input before
    # pos, replace, and input from pos + len; len < 0 means replace's length
    "spark_overlay": """(s VARCHAR, r VARCHAR, pos BIGINT, l BIGINT) AS spark_substr(s, 1, pos - 1) || r
            || spark_substr(s, pos + CASE WHEN l >= 0 THEN l ELSE length(r) END, 2147483647),
        (s BLOB, r BLOB, pos BIGINT, l BIGINT) AS spark_substr(s, 1, pos - 1) || r
            || spark_substr(s, pos + CASE WHEN l >= 0 THEN l ELSE octet_length(r) END, 2147483647)""",
    "spark_levenshtein": """(a, b) AS CAST(levenshtein(a, b) AS INTEGER),
        (a, b, t) AS CAST(CASE WHEN levenshtein(a, b) > t THEN -1 ELSE levenshtein(a, b) END AS INTEGER)""",
    "spark_soundex_code": """(c) AS CASE WHEN c BETWEEN 'A' AND 'Z' THEN substr('01230127022455012623017202', ascii(c) - 64, 1)
        WHEN c BETWEEN 'a' AND 'z' THEN substr('01230127022455012623017202', ascii(c) - 96, 1) ELSE '0' END""",
    # soundex (UTF8String.soundex): a first character that is no letter returns the input; H and W are
    # skipped, other non-letters and vowels end a run of equal codes; three codes at most, 0-padded
    "spark_soundex": """(s) AS CASE
        WHEN s = '' THEN ''
        WHEN NOT regexp_matches(s, '^[A-Za-z]') THEN s
        ELSE upper(left(s, 1)) || rpad(substr(list_reduce(str_split(substr(s, 2), ''), lambda acc, c:
            CASE WHEN length(acc) >= 4 THEN acc
                 WHEN spark_soundex_code(c) = '7' THEN acc
                 WHEN spark_soundex_code(c) NOT IN ('0', acc[1]) THEN spark_soundex_code(c) || substr(acc, 2) || spark_soundex_code(c)
                 ELSE spark_soundex_code(c) || substr(acc, 2) END, spark_soundex_code(left(s, 1))), 2), 3, '0') END""",
    # sentences(str): Java's BreakIterator for English text, in regexes: a sentence ends after . ? !
    # (and closing quotes or brackets) followed by white space — after '.' only when the next
    # character is no lowercase letter; a word is a run of letters and digits, with ' or . inside
    # ("don't", "U.S", "3.14") and , between digits ("1,000")
    "spark_sentences": """(s) AS CASE WHEN s IS NULL THEN NULL ELSE list_transform(
        list_filter(str_split(regexp_replace(regexp_replace(s, '([?!][.?!]*[''"”’)\\]]*\\s+)', '\\1' || chr(1), 'g'),
                                             '([.]+[''"”’)\\]]*\\s+)([^a-z\\s])', '\\1' || chr(1) || '\\2', 'g'), chr(1)),
                    lambda t: t <> ''),
        lambda t: regexp_extract_all(t, '[\\p{L}\\p{N}][\\p{L}\\p{N}\\p{M}_]*(?:[''’.][\\p{L}\\p{N}][\\p{L}\\p{N}\\p{M}_]*|,[\\p{N}]+)*'))
        END""",
    "spark_reverse": "(x VARCHAR) AS reverse(x), (x) AS list_reverse(x)",
    # elt's inputs are strings (numbers cast) or binary
    "spark_elt_text": "(x VARCHAR) AS x, (x BLOB) AS x, (x) AS CAST(x AS VARCHAR)",
})


def typeof(tree: exp.Expression) -> None:
    """``typeof(x)`` as Spark names types: ``int``, ``bigint``, ``string``, ``decimal(10,0)``,
    ``array<int>``, ``struct<a:int>``, ``map<string,int>``, ``timestamp``..."""
    for node in list(tree.find_all(exp.Typeof)):
        node.replace(call("spark_typeof", node.this))


def substrings(tree: exp.Expression) -> None:
    """``substr``/``substring``/``left``/``right`` with Spark's positions: 0 is 1, a negative one
    counts from the end, ``left``/``right`` of a length <= 0 is '', also of binary. Literal positive
    positions and lengths (the usual case) keep DuckDB's own functions, which agree."""
    for node in list(tree.find_all(exp.Substring, exp.Left, exp.Right)):
        if isinstance(node, exp.Substring):
            start, length = _text_as_int(node.args["start"]), node.args.get("length")
            length = _text_as_int(length) if length is not None else number(int(_INT_MAX))
            plain = (integer_of(start) or 0) >= 1 and (integer_of(length) or -1) >= 0
            node.replace(call("spark_substr_plain" if plain else "spark_substr", _text(node.this), start, length))
            continue
        count = _text_as_int(node.expression)
        positive = (integer_of(count) or 0) >= 1
        if isinstance(node, exp.Right) and positive:
            node.replace(call("spark_right", _text(node.this), count))
        elif isinstance(node, exp.Left):
            node.replace(call("spark_substr_plain" if positive else "spark_substr", _text(node.this), number(1), count))
        else:  # Spark: if str is NULL then NULL, if len <= 0 then '', else substring(str, -len)
            above_zero = exp.GT(this=count.copy(), expression=number(0))
            tail = call("spark_substr", _text(node.this), exp.Neg(this=exp.Paren(this=count.copy())), number(int(_INT_MAX)))
            unknown = exp.Is(this=node.this.copy(), expression=exp.Null())
            node.replace(case((unknown, cast(exp.Null(), "VARCHAR")), (above_zero, tail),
                              (exp.Not(this=above_zero.copy()), string("")), default=cast(exp.Null(), "VARCHAR")))


def _text(node: exp.Expression) -> exp.Expression:
    """A NULL literal given where Spark expects a string is a string (DuckDB's overloads would read
    it as binary)."""
    return cast(node, "VARCHAR") if is_null(node) else node


def _text_as_int(node: exp.Expression) -> exp.Expression:
    """Spark casts a string argument where an int is expected; one that is no number is NULL."""
    return exp.TryCast(this=node, to=exp.DataType.build("INT")) if text_of(node) is not None else node


def pads(tree: exp.Expression) -> None:
    """``lpad``/``rpad`` of strings and (Spark 3.3) of binary."""
    for node in list(tree.find_all(exp.Pad)):
        name = "spark_lpad" if node.args.get("is_left") else "spark_rpad"
        fill = node.args.get("fill_pattern")
        fill = fill if fill is not None else call("spark_pad_default", _text(node.this.copy()))
        node.replace(call(name, _text(node.this), _text_as_int(node.expression), fill))


def encodings(tree: exp.Expression) -> None:
    """``hex``/``unhex``, ``base64``/``unbase64``, ``encode``/``decode`` with a charset."""
    for node in list(tree.find_all(exp.Hex, exp.Unhex, exp.FromBase64, exp.Encode, exp.Decode)):
        if isinstance(node, exp.Hex):
            node.replace(call("spark_hex", node.this))
        elif isinstance(node, exp.Unhex):
            node.replace(call("spark_unhex", node.this))
        elif isinstance(node, exp.FromBase64):
            node.replace(call("spark_unbase64", node.this))
        else:
            node.replace(_charset_call(node))


def _utf16_decoder(little: bool) -> Callable[[exp.Expression], exp.Expression]:
    return lambda b: call("spark_utf16_text", call("spark_utf16_units", call("hex", b), exp.Boolean(this=little)))


_ENCODINGS: dict[str, tuple[Callable[[exp.Expression], exp.Expression], Callable[[exp.Expression], exp.Expression]]] = {
    "utf-8": (lambda s: call("encode", s), lambda b: call("decode", b)),
    "us-ascii": (lambda s: call("spark_encode_latin", s, number(128)), lambda b: call("spark_decode_latin", b, number(128))),
    "iso-8859-1": (lambda s: call("spark_encode_latin", s, number(256)), lambda b: call("spark_decode_latin", b, number(256))),
    "utf-16be": (lambda s: call("spark_encode_utf16", s, exp.false(), exp.false()), _utf16_decoder(False)),
    "utf-16le": (lambda s: call("spark_encode_utf16", s, exp.true(), exp.false()), _utf16_decoder(True)),
    "utf-16": (lambda s: call("spark_encode_utf16", s, exp.false(), exp.true()), lambda b: call("spark_decode_utf16", b)),
}
"""The charsets Spark documents for encode/decode: (encoder, decoder) of each."""


def _charset_call(node: exp.Encode | exp.Decode) -> exp.Expression:
    function = "encode" if isinstance(node, exp.Encode) else "decode"
    name = text_of(node.args.get("charset"))
    key = None if name is None else {"utf8": "utf-8"}.get(name.lower(), name.lower())
    if key not in _ENCODINGS:
        supported = "US-ASCII, ISO-8859-1, UTF-8, UTF-16BE, UTF-16LE, UTF-16"
        raise fail(function, f"the charset must be a literal, one of {supported}" if name is None
                   else f"the charset {name} is not supported ({supported} are)")
    encoder, decoder = _ENCODINGS[key]
    return (encoder if isinstance(node, exp.Encode) else decoder)(node.this)


def characters(tree: exp.Expression) -> None:
    """``ascii``, ``chr``/``char``, ``octet_length``, ``bit_length``, ``levenshtein`` (INT, and
    Spark 3.5's threshold), ``soundex``, ``btrim``, ``find_in_set``, ``split_part`` (part 0 fails),
    ``substring_index``, ``locate``/``position`` with a start."""
    for node in list(tree.find_all(exp.Ascii, exp.Chr, exp.BitLength, exp.Levenshtein, exp.Soundex, exp.SplitPart,
                                   exp.SubstringIndex, exp.StrPosition, exp.Anonymous)):
        replacement = _character_function(node)
        if replacement is not None:
            node.replace(replacement)


def _character_function(node: exp.Expression) -> exp.Expression | None:
    if isinstance(node, exp.Ascii):
        return call("spark_ascii", node.this)
    if isinstance(node, exp.Chr):
        return call("spark_chr", *node.expressions)
    if isinstance(node, exp.BitLength):
        return call("spark_bit_length", node.this)
    if isinstance(node, exp.Levenshtein):
        threshold = node.args.get("max_dist") or node.args.get("ins_cost")
        return call("spark_levenshtein", node.this, node.expression, *([threshold] if threshold is not None else []))
    if isinstance(node, exp.Soundex):
        return call("spark_soundex", node.this)
    if isinstance(node, exp.SplitPart):
        return call("spark_split_part", node.this, node.args["delimiter"], node.args["part_index"])
    if isinstance(node, exp.SubstringIndex):
        return call("spark_substring_index", node.this, node.args["delimiter"], node.args["count"])
    if isinstance(node, exp.StrPosition):
        position = node.args.get("position")
        if position is None:
            return None
        return call("spark_locate", node.args["substr"], node.this, position)
    name = node.name.lower()
    simple = {"octet_length": "spark_octet_length", "find_in_set": "spark_find_in_set", "sentences": "spark_sentences"}
    if name in simple:
        return call(simple[name], *node.expressions[:1 if name != "find_in_set" else 2])
    if name == "btrim":
        return call("spark_btrim" if len(node.expressions) == 1 else "spark_btrim_chars", *node.expressions)
    return None


def lengths_and_predicates(tree: exp.Expression) -> None:
    """``length``/``char_length`` (bytes of binary), ``contains``/``startswith``/``endswith`` (also of
    binary), ``to_binary(str[, fmt])`` (Spark 3.3: hex by default, utf-8, base64; NULL for a bad input)."""
    predicates = {exp.Contains: "spark_contains", exp.StartsWith: "spark_startswith", exp.EndsWith: "spark_endswith"}
    for node in list(tree.find_all(exp.Length, exp.ToBinary, *predicates)):
        if isinstance(node, exp.Length):
            node.replace(call("spark_length", node.this))
        elif isinstance(node, exp.ToBinary):
            node.replace(_to_binary(node.this, node.args.get("format")))
        else:
            node.replace(call(predicates[type(node)], node.this, node.expression))


def _to_binary(value: exp.Expression, fmt: exp.Expression | None) -> exp.Expression:
    if is_null(fmt):
        return cast(exp.Null(), "BLOB")
    name = "hex" if fmt is None else (text_of(fmt) or "").lower()
    if name == "hex":
        return call("spark_unhex", value)
    if name in ("utf-8", "utf8"):
        return call("encode", value)
    if name == "base64":
        return call("spark_unbase64", value)
    raise fail("to_binary", "the format must be a literal 'hex', 'utf-8', 'utf8' or 'base64'")


def overlay(tree: exp.Expression) -> None:
    """``overlay(input PLACING replace FROM pos [FOR len])`` of strings and binary."""
    for node in list(tree.find_all(exp.Overlay)):
        length = node.args.get("for_")
        node.replace(call("spark_overlay", node.this, node.expression, node.args["from_"],
                          length if length is not None else number(-1)))


def elt(tree: exp.Expression) -> None:
    """``elt(n, input1, input2, ...)``: the n-th input (as a string unless it is binary), NULL when
    n is out of range (non-ANSI)."""
    for node in list(tree.find_all(exp.Elt)):
        index, inputs = node.this, node.expressions
        node.replace(case(*((exp.EQ(this=index.copy(), expression=number(i + 1)), call("spark_elt_text", value))
                            for i, value in enumerate(inputs))))


def reverse(tree: exp.Expression) -> None:
    """``reverse`` of a string or of an array."""
    for node in list(tree.find_all(exp.Reverse)):
        node.replace(call("spark_reverse", node.this))


def concat_ws(tree: exp.Expression) -> None:
    """``concat_ws(sep)`` alone is '' (NULL for a NULL sep); DuckDB wants a second argument."""
    for node in list(tree.find_all(exp.ConcatWs)):
        if len(node.expressions) == 1:
            separator = node.expressions[0]
            node.replace(case((exp.Is(this=separator.copy(), expression=exp.Null()), cast(exp.Null(), "VARCHAR")),
                              default=string("")))


TRANSFORMS: tuple[Callable[[exp.Expression], None], ...] = (gated(
    (typeof, (exp.Typeof,), frozenset()),
    (substrings, (exp.Substring, exp.Left, exp.Right), frozenset()),
    (pads, (exp.Pad,), frozenset()),
    (encodings, (exp.Hex, exp.Unhex, exp.FromBase64, exp.Encode, exp.Decode), frozenset()),
    (characters, (exp.Ascii, exp.Chr, exp.BitLength, exp.Levenshtein, exp.Soundex, exp.SplitPart, exp.SubstringIndex,
                  exp.StrPosition), frozenset({"octet_length", "find_in_set", "sentences", "btrim"})),
    (lengths_and_predicates, (exp.Length, exp.ToBinary, exp.Contains, exp.StartsWith, exp.EndsWith), frozenset()),
    (overlay, (exp.Overlay,), frozenset()),
    (elt, (exp.Elt,), frozenset()),
    (reverse, (exp.Reverse,), frozenset()),
    (concat_ws, (exp.ConcatWs,), frozenset()),
),)

FAMILY = Family("strings", transforms=TRANSFORMS, macros=MACROS)
