"""Spark's regex functions with Java's regex semantics on DuckDB's RE2: ``rlike``/``regexp_like``/
``regexp``, ``regexp_extract``, ``regexp_extract_all``, ``regexp_replace``, ``split``,
``regexp_count``, ``regexp_substr``, ``regexp_instr``.

A pattern (or replacement) written as a literal is translated here, once per query text
(``java_regex``): a Java-only feature or a Java syntax error is a translation error naming the
function. A pattern that comes from a column is checked when the query runs (``spark_java_regex``)
for the Java-only constructs RE2 would misread, and its named groups respelled; a replacement from
a column is rewritten from Java's ``$1`` to RE2's ``\\1`` when the query runs
(``spark_java_replacement``).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from . import java_regex
from .calls import call, case, cast, fail, hygienic, integer_of, is_null, number, string, text_of
from .arrays_maps import gated
from .family import Family

# Java-only constructs a pattern from a column may hold (approximate: a backslash-escaped look-alike
# is refused too): lookaround, atomic groups, backreferences, \G \Z \X \k, possessive quantifiers,
# class intersections, (?U), Java's own \p{In..}/\p{java..} properties.
_JAVA_ONLY = (r"\(\?<?[=!>]|\\[1-9GZXk]|[*+?}]\+|&&|\(\?[a-zA-Z-]*U|\\[pP]\{(?:In|java|Is(?:Alphabetic|Letter|"
              r"Lowercase|Uppercase|White_?Space|Punctuation|Control|Digit|Ideographic))")

MACROS: dict[str, str] = hygienic({
    # a pattern from a column: refused when it uses what RE2 cannot do, named groups respelled
    "spark_java_regex": f"""(p, fn) AS CASE
        WHEN regexp_matches(p, '{_JAVA_ONLY}')
        THEN error(fn || ': the pattern ''' || p || ''' uses a Java regex feature that DuckDB''s RE2 engine lacks '
                   || '(lookaround, backreferences, possessive quantifiers, atomic groups, \\G, \\Z, && in classes, (?U))')
        ELSE regexp_replace(p, '\\(\\?<([A-Za-z])', '(?P<\\1', 'g') END""",
    # Java's appendReplacement syntax ($1, \\$) as RE2's rewrite syntax (\\1, \\\\), for a replacement
    # from a column
    "spark_java_replacement": r"""(r) AS CASE
        WHEN regexp_full_match(r, '(?s)(?:[^\\$]|\\.|\$[0-9])*')
        THEN array_to_string(list_transform(regexp_extract_all(r, '(?s)\\.|\$[0-9]|[^\\$]+'),
                 lambda t: CASE WHEN t[1] = '\' THEN (CASE WHEN t[2] = '\' THEN '\\' ELSE t[2] END)
                                WHEN t[1] = '$' THEN '\' || t[2] ELSE t END), '')
        ELSE error('regexp_replace: the replacement ''' || r || ''' has an illegal group reference or ends with a '
                   || 'backslash (Java''s Matcher.appendReplacement: $n refers to group n, \ escapes the next character)')
        END""",
    # Spark's split(str, regex, limit): limit > 0 gives at most `limit` parts, the last holding the
    # rest of the string (separators included); limit <= 0 splits everywhere. The rest is rebuilt
    # from the parts and the separators that regexp_extract_all finds.
    "spark_split": """(s, r, lim) AS CASE
        WHEN lim <= 0 OR len(str_split_regex(s, r)) <= lim THEN str_split_regex(s, r)
        ELSE list_concat(list_slice(str_split_regex(s, r), 1, lim - 1),
                         [array_to_string(list_transform(list_slice(str_split_regex(s, r), lim, len(str_split_regex(s, r))),
                                                         lambda p, i: p || coalesce(regexp_extract_all(s, r, 0)[lim - 1 + i], '')), '')])
        END""",
    # split(str, '', limit) as Java's String.split: every character, then (limit <= 0) a trailing ''
    "spark_split_chars": """(s, lim) AS CASE
        WHEN s = '' THEN ['']
        WHEN lim > 0 AND lim <= length(s) THEN list_append(str_split(left(s, lim - 1), ''), substr(s, lim))
        WHEN lim > 0 THEN str_split(s, '')
        ELSE list_append(str_split(s, ''), '') END""",
})


class _Pattern:
    """The regex argument of one call: its RE2 spelling (a literal, or the runtime check of a column)."""

    def __init__(self, node: exp.Expression, function: str):
        self.function = function
        self.node = node
        text = text_of(node)
        self.regex = _translated(text, function) if text is not None else None
        self.sql = string(self.regex.re2) if self.regex else call("spark_java_regex", node, string(function))
        self.null = is_null(node)


def _translated(pattern: str, function: str) -> java_regex.JavaRegex:
    try:
        return java_regex.translate(pattern)
    except java_regex.JavaOnlyFeature as exc:
        raise fail(function, f"the pattern '{pattern}' uses {exc}, a Java regex feature that DuckDB's RE2 engine "
                             f"lacks") from exc
    except java_regex.JavaSyntaxError as exc:
        raise fail(function, f"the pattern '{pattern}' is not a valid Java regex: {exc}") from exc


def rlike(tree: exp.Expression) -> None:
    """``rlike``/``regexp_like``/``regexp``: a match anywhere (Java's ``Matcher.find``)."""
    for node in list(tree.find_all(exp.RegexpLike, exp.Anonymous)):
        if isinstance(node, exp.Anonymous):
            if node.name.lower() != "regexp" or len(node.expressions) != 2:
                continue
            subject, pattern = node.expressions
        else:
            subject, pattern = node.this, node.expression
        node.replace(call("regexp_matches", subject, _Pattern(pattern, "rlike").sql))


def regexp_extract(tree: exp.Expression) -> None:
    """``regexp_extract(str, regexp[, idx])`` and ``regexp_extract_all``: group ``idx`` (default 1) of
    the first / every match, '' for a group that did not take part. An ``idx`` beyond the pattern's
    groups (or below 0) fails as Spark fails — on a row where the pattern matches — with Spark's
    message; an ``idx`` from a column picks among the literal pattern's groups."""
    for node in list(tree.find_all(exp.RegexpExtract, exp.RegexpExtractAll)):
        every = isinstance(node, exp.RegexpExtractAll)
        function = "regexp_extract_all" if every else "regexp_extract"
        pattern = _Pattern(node.expression, function)
        group = node.args.get("group")
        group = exp.Literal.number(1) if group is None else group
        node.replace(_extract(node.this, pattern, group, every))


def _extract(subject: exp.Expression, pattern: _Pattern, group: exp.Expression, every: bool) -> exp.Expression:
    index = integer_of(group)
    if pattern.regex is None:  # the groups are known when the query runs only: DuckDB's answer
        if index is None:
            raise fail(pattern.function, "the group index must be a literal when the pattern comes from a column")
        return _extract_group(subject, pattern.sql, index, every)
    count = pattern.regex.groups
    if index is not None:
        if 0 <= index <= count:
            return _extract_group(subject, pattern.sql, index, every)
        return _group_error(subject, pattern, index, every)
    if is_null(group):
        return exp.Null()
    unknown = exp.Or(this=exp.Is(this=subject.copy(), expression=exp.Null()), expression=exp.Is(this=group.copy(), expression=exp.Null()))
    choices = [(exp.EQ(this=group.copy(), expression=exp.Literal.number(i)), _extract_group(subject, pattern.sql, i, every))
               for i in range(count + 1)]
    invalid = call("error", exp.DPipe(this=string(_group_message(pattern, count, "")), expression=cast(group.copy(), "VARCHAR")))
    return case((unknown, exp.Null()), *choices, (call("regexp_matches", subject.copy(), pattern.sql.copy()), invalid),
                default=_no_match(every))


def _no_match(every: bool) -> exp.Expression:
    return cast(exp.Array(expressions=[]), "VARCHAR[]") if every else string("")


def _extract_group(subject: exp.Expression, pattern: exp.Expression, index: int, every: bool) -> exp.Expression:
    if not every:
        return call("regexp_extract", subject.copy(), pattern.copy(), exp.Literal.number(index))
    matches = call("regexp_extract_all", subject.copy(), pattern.copy(), exp.Literal.number(index))
    if index == 0:
        return matches
    item = exp.to_identifier("g")
    return call("list_transform", matches, exp.Lambda(this=exp.Coalesce(this=exp.column(item), expressions=[string("")]),
                                                      expressions=[item]))


def _group_message(pattern: _Pattern, count: int, index: str) -> str:
    return f"{pattern.function}: Regex group count is {count}, but the specified group index is {index}"


def _group_error(subject: exp.Expression, pattern: _Pattern, index: int, every: bool) -> exp.Expression:
    """Spark checks the index when a match is found: no match, no error."""
    message = ("The specified group index cannot be less than zero" if index < 0
               else _group_message(pattern, pattern.regex.groups, str(index))[len(pattern.function) + 2:])
    return case((exp.Is(this=subject.copy(), expression=exp.Null()), exp.Null()),
                (call("regexp_matches", subject.copy(), pattern.sql.copy()), call("error", string(f"{pattern.function}: {message}"))),
                default=_no_match(every))


def regexp_replace(tree: exp.Expression) -> None:
    """``regexp_replace(str, regexp, rep[, position])``: Java's replacement syntax (``$1``,
    ``${name}``, ``\\$``), and ``position`` (a literal > 0) where the search starts; a position
    past the end gives ``str`` unchanged."""
    for node in list(tree.find_all(exp.RegexpReplace)):
        pattern = _Pattern(node.expression, "regexp_replace")
        rep = node.args.get("replacement")
        rep_text = text_of(rep)
        if rep_text is not None:
            try:
                rewrite = string(java_regex.replacement(rep_text, pattern.regex or _ANY_GROUPS))
            except java_regex.JavaRegexError as exc:
                raise fail("regexp_replace", f"the replacement '{rep_text}': {exc}") from exc
        else:
            rewrite = call("spark_java_replacement", rep)
        node.replace(_replace_from(node.this, pattern.sql, rewrite, node.args.get("position")))


_ANY_GROUPS = java_regex.JavaRegex("", 9)  # a pattern from a column: $0 to $9 are taken as groups


def _replace_from(subject: exp.Expression, pattern: exp.Expression, rewrite: exp.Expression,
                  position: exp.Expression | None) -> exp.Expression:
    def replace(text: exp.Expression) -> exp.Expression:
        return call("regexp_replace", text, pattern.copy(), rewrite.copy(), string("g"))

    if position is None:
        return replace(subject)
    if is_null(position):
        return cast(exp.Null(), "VARCHAR")
    start = integer_of(position)
    if start is None or start < 1:
        raise fail("regexp_replace", "the position must be a literal integer greater than 0")
    if start == 1:
        return replace(subject)
    head = call("substr", subject.copy(), exp.Literal.number(1), exp.Literal.number(start - 1))
    tail = call("substr", subject.copy(), exp.Literal.number(start))
    too_far = exp.GTE(this=exp.Literal.number(start - 1), expression=call("length", subject.copy()))
    return case((too_far, subject.copy()), default=exp.DPipe(this=head, expression=replace(tail)))


def split(tree: exp.Expression) -> None:
    """``split(str, regex[, limit])``: Java's ``String.split`` with Spark's limit (<= 0: every part,
    trailing empty strings kept). DuckDB splits on zero-width matches unlike Java, so a literal
    pattern that can match the empty string is refused, except the empty pattern itself."""
    for node in list(tree.find_all(exp.RegexpSplit)):
        pattern = _Pattern(node.expression, "split")
        limit = node.args.get("limit")
        if pattern.regex is not None and pattern.regex.nullable:
            if pattern.regex.re2 != "":
                raise fail("split", f"the pattern '{text_of(node.expression)}' can match the empty string; splitting "
                                    f"on empty matches is not supported (Java and DuckDB split them differently)")
            node.replace(call("spark_split_chars", node.this, limit if limit is not None else number(-1)))
        elif limit is None:
            node.replace(call("str_split_regex", node.this, pattern.sql))
        else:
            node.replace(call("spark_split", node.this, pattern.sql, limit))


def regexp_count_substr_instr(tree: exp.Expression) -> None:
    """Spark 3.4's ``regexp_count`` (the number of matches, Java's find loop: empty matches count),
    ``regexp_substr`` (the first match, NULL for none or an empty one) and ``regexp_instr`` (the
    1-based start of the first match, 0 for none)."""
    for node in list(tree.find_all(exp.RegexpCount, exp.RegexpSubstr, exp.RegexpInstr)):
        subject = node.this
        if isinstance(node, exp.RegexpCount):
            pattern = _Pattern(node.expression, "regexp_count")
            matches = call("regexp_extract_all", subject, pattern.sql, exp.Literal.number(0))
            node.replace(cast(call("len", matches), "INT"))
        elif isinstance(node, exp.RegexpSubstr):
            pattern = _Pattern(node.expression, "regexp_substr")
            node.replace(exp.Nullif(this=call("regexp_extract", subject, pattern.sql, exp.Literal.number(0)),
                                    expression=string("")))
        else:
            pattern = _Pattern(node.expression, "regexp_instr")
            node.replace(_instr(subject, pattern))


def _instr(subject: exp.Expression, pattern: _Pattern) -> exp.Expression:
    """The start of the first match is the length of the shortest prefix after which the pattern
    matches: ``^(?s:(.*?))(?:p)``, RE2's leftmost match as Java's ``find``."""
    prefixed = (string(f"^(?s:(.*?))(?:{pattern.regex.re2})") if pattern.regex
                else exp.DPipe(this=exp.DPipe(this=string("^(?s:(.*?))(?:"), expression=pattern.sql.copy()), expression=string(")")))
    start = exp.Add(this=call("length", call("regexp_extract", subject.copy(), prefixed, exp.Literal.number(1))),
                    expression=exp.Literal.number(1))
    unknown = exp.Is(this=subject.copy(), expression=exp.Null())
    if pattern.regex is None:
        unknown = exp.Or(this=unknown, expression=exp.Is(this=pattern.node.copy(), expression=exp.Null()))
    return cast(case((unknown, exp.Null()), (call("regexp_matches", subject.copy(), pattern.sql.copy()), start),
                     default=exp.Literal.number(0)), "INT")


TRANSFORMS: tuple[Callable[[exp.Expression], None], ...] = (gated(
    (rlike, (exp.RegexpLike,), frozenset({"regexp"})),
    (regexp_extract, (exp.RegexpExtract, exp.RegexpExtractAll), frozenset()),
    (regexp_replace, (exp.RegexpReplace,), frozenset()),
    (split, (exp.RegexpSplit,), frozenset()),
    (regexp_count_substr_instr, (exp.RegexpCount, exp.RegexpSubstr, exp.RegexpInstr), frozenset()),
),)

FAMILY = Family("regexes", transforms=TRANSFORMS, macros=MACROS)
