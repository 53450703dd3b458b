"""Spark SQL as sqlglot reads it (``parse``), and the rewrites of Spark's functions that belong to
no other family (``FAMILY``): where sqlglot's translation to DuckDB gives other results or types.
The rewrites run on the sqlglot tree after parsing Spark and before writing DuckDB, in the order of
the table of families (``families.py``). Each is a function whose docstring names the Spark
semantics it keeps and, where the difference is a sqlglot bug, the smallest reproducer.
"""

from __future__ import annotations

import itertools
import re

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.tokens import Token, TokenType

from . import casts as spark_casts, datetimes as spark_datetime
from .family import Family
from .sql_types import kind, spark_type

NOT_SPARK_FUNCTIONS = ("CONVERT", "TRY_CONVERT")
"""Names sqlglot parses as T-SQL's casts although Spark has no such function: in Spark SQL they can only
be functions the script registered, e.g. a feature ET's model as ``convert`` (ml/feature/normalize.md)."""

MISREAD_CALLS = ("FIRST_VALUE", "LAST_VALUE", "PERCENTILE")
"""Spark functions whose arguments sqlglot's parser gets wrong, read as plain calls instead (the
rewrites of ``spark_grouping`` give them Spark's meaning): ``first_value(x, true)`` fails to parse
(one argument only), ``percentile(x, p, frequency)`` loses its frequency."""

PLAIN_CALLS = frozenset(NOT_SPARK_FUNCTIONS + MISREAD_CALLS) | {name.upper() for name in spark_datetime.FUNCTIONS}
"""Calls parsed as plain function calls: the T-SQL casts above, the misread calls, and the datetime
functions that ``spark_datetime`` translates itself (sqlglot's Spark dialect rewrites their patterns
while parsing)."""

_PLACEHOLDER = "__mlsql_call_"


def parse(spark_sql: str) -> list[exp.Expression | None]:
    """``sqlglot.parse(spark_sql, read="spark")``, except that ``PLAIN_CALLS`` (``convert(...)``,
    ``try_convert(...)``, ``date_format(...)``...) are ordinary calls. sqlglot bug: ``sqlglot.parse_one("select convert(x)", read="spark")`` fails with
    "Required keyword: 'to' missing for TryCast". sqlglot's compiled parser cannot be subclassed, so the
    call's name token is renamed before parsing and the call gets its name back after."""
    spark = Dialect.get_or_raise("spark")
    tokens = spark.tokenize(spark_sql)
    written: dict[str, str] = {}  # placeholder → the name as the SQL writes it
    for token, following in itertools.pairwise(tokens):
        if token.text.upper() in PLAIN_CALLS and following.token_type == TokenType.L_PAREN:
            placeholder = f"{_PLACEHOLDER}{len(written)}"
            written[placeholder], token.text, token.token_type = token.text, placeholder, TokenType.VAR
    tokens = _pivot_expressions_as_calls(tokens)
    trees = spark.parser().parse(tokens, spark_sql)
    for tree in (t for t in trees if t is not None):
        for call in list(tree.find_all(exp.Anonymous)):
            if call.name in written:
                call.set("this", written[call.name])
            elif call.name == _PIVOT_EXPRESSION:
                call.replace(call.expressions[0])
    return trees


_PIVOT_EXPRESSION = "__mlsql_pivot_expression"


def _pivot_expressions_as_calls(tokens: list[Token]) -> list[Token]:
    """Spark's ``PIVOT (avg(x) + 1 AS a FOR ...)`` takes any expression over aggregates; sqlglot's parser
    only calls (sqlglot bug: ``sqlglot.parse_one("select * from t pivot (avg(x) + 1 as a for y in (1))",
    read="spark")`` fails with "Expecting FOR"). Each expression that is more than a call is read as the
    argument of a placeholder call, which ``parse`` takes away again."""
    out: list[Token] = []
    i = 0
    while i < len(tokens):
        out.append(tokens[i])
        if tokens[i].token_type == TokenType.PIVOT and i + 1 < len(tokens) and tokens[i + 1].token_type == TokenType.L_PAREN:
            out.append(tokens[i + 1])
            i += 2
            segment: list[Token] = []
            depth = 0
            while i < len(tokens) and not (depth == 0 and tokens[i].token_type == TokenType.FOR):
                token = tokens[i]
                depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(token.token_type, 0)
                if depth == 0 and token.token_type == TokenType.COMMA:
                    out.extend(_as_call(segment) + [token])
                    segment = []
                else:
                    segment.append(token)
                i += 1
            out.extend(_as_call(segment))
            continue
        i += 1
    return out


def _as_call(segment: list[Token]) -> list[Token]:
    """One aggregate expression of a PIVOT, with its alias if any; wrapped when it is more than one call."""
    alias_at = len(segment)
    if len(segment) >= 2 and segment[-2].token_type == TokenType.ALIAS:
        alias_at = len(segment) - 2
    elif len(segment) >= 2 and segment[-1].token_type in (TokenType.VAR, TokenType.IDENTIFIER) \
            and segment[-2].token_type in (TokenType.R_PAREN, TokenType.NUMBER, TokenType.STRING):
        alias_at = len(segment) - 1
    expression, alias = segment[:alias_at], segment[alias_at:]
    if len(expression) >= 3 and expression[1].token_type == TokenType.L_PAREN and _closing(expression, 1) == len(expression) - 1:
        return segment  # a call: sqlglot reads it
    first = expression[0] if expression else (alias[0] if alias else None)
    if first is None:
        return segment
    placeholder = [Token(TokenType.VAR, _PIVOT_EXPRESSION, first.line, first.col, first.start, first.start),
                   Token(TokenType.L_PAREN, "(", first.line, first.col, first.start, first.start)]
    return placeholder + expression + [Token(TokenType.R_PAREN, ")", first.line, first.col, first.end, first.end)] + alias


def _closing(tokens: list[Token], opening: int) -> int:
    depth = 0
    for i in range(opening, len(tokens)):
        depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(tokens[i].token_type, 0)
        if depth == 0:
            return i
    return -1


def _call(name: str, *args: exp.Expression) -> exp.Anonymous:
    return exp.Anonymous(this=name, expressions=list(args))


def _cast(node: exp.Expression, to: str) -> exp.Cast:
    return exp.Cast(this=node, to=exp.DataType.build(to))


# -- the transforms -----------------------------------------------------------------------------------------

INT_RESULTS = (exp.ArraySize, exp.StrPosition, exp.Length)
"""Spark functions whose result is INT where DuckDB's is BIGINT (size, instr/locate, length)."""


def int_results(tree: exp.Expression) -> None:
    """Spark's ``size``, ``instr``, ``locate``, ``length`` and ``row_number()``
    return INT; their DuckDB counterparts BIGINT. Same values, and now the same type."""
    for node in list(tree.find_all(*INT_RESULTS)):
        if not isinstance(node.parent, exp.Cast):
            node.replace(_cast(node.copy(), "INT"))
    for window in list(tree.find_all(exp.Window)):
        if isinstance(window.this, exp.RowNumber) and not isinstance(window.parent, exp.Cast):
            window.replace(_cast(window.copy(), "INT"))


def bigint_results(tree: exp.Expression) -> None:
    """Spark's ``ceil``/``floor`` of a number that is not a decimal and ``a div b`` return BIGINT;
    DuckDB keeps DOUBLE (ceil, floor) or the operands' type (//).
    A decimal argument (a literal such as 2.5, or a cast to decimal) keeps DuckDB's decimal result,
    as Spark does; a decimal *column* cannot be told apart here and becomes BIGINT too."""
    for node in list(tree.find_all(exp.Ceil, exp.Floor)):
        if node.args.get("decimals") is None and not _decimal(node.this) and not isinstance(node.parent, exp.Cast):
            node.replace(_cast(node.copy(), "BIGINT"))
    for node in list(tree.find_all(exp.IntDiv)):
        if not isinstance(node.parent, exp.Cast):
            node.replace(_cast(node.copy(), "BIGINT"))


def _decimal(node: exp.Expression) -> bool:
    if isinstance(node, exp.Literal) and not node.is_string:
        return "." in node.this and "e" not in node.this.lower()
    if isinstance(node, exp.Cast):
        return node.to.is_type(exp.DataType.Type.DECIMAL)
    return isinstance(node, exp.Paren) and _decimal(node.this)


_NOT_A_NUMBER_DATE_OR_BOOLEAN = re.compile(
    r"(?!\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?[dDfFlL]?\s*$)(?!\s*\d{4}-\d{1,2}(-\d{1,2})?([ T].*)?$)"
    r"(?!\s*(true|false|t|f|yes|no|y|n)\s*$)", re.IGNORECASE | re.DOTALL)
COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)


def text_compared_with_other_types(tree: exp.Expression) -> None:
    """Spark compares a string with a number (or date, boolean...) by casting the string to that
    type, and a string that does not parse becomes NULL: ``1 = ''`` is NULL (non-ANSI mode). DuckDB
    fails the whole query instead ("Could not convert string '' to INT32"). For a literal that can
    be no number, date or boolean, the comparison becomes
    ``CASE WHEN typeof(x) = 'VARCHAR' THEN CAST(x AS VARCHAR) op 'lit' END``: a text comparison for
    text, NULL otherwise, decided by DuckDB at bind time. Only where a side's type is not known here
    (``sql_types``): known types get Spark's coercion from ``spark_casts``, in plain SQL."""
    for node in list(tree.find_all(*COMPARISONS)):
        left, right = node.this, node.expression
        if _typed(left, right):
            continue
        if _odd_text(right) and not _string_literal(left):
            other, literal, swap = left, right, False
        elif _odd_text(left) and not _string_literal(right):
            other, literal, swap = right, left, True
        else:
            continue
        text = _cast(other.copy(), "VARCHAR")
        comparison = node.__class__(this=literal.copy() if swap else text, expression=text if swap else literal.copy())
        is_text = exp.EQ(this=exp.Anonymous(this="typeof", expressions=[other.copy()]), expression=exp.Literal.string("VARCHAR"))
        node.replace(exp.Case(ifs=[exp.If(this=is_text, true=comparison)]))


def text_compared_with_a_number(tree: exp.Expression) -> None:
    """The other way round: Spark compares a string with an integer literal as that integer type
    (INT, or BIGINT when it does not fit), so ``s = 1`` is NULL where ``s`` is ``'x'``; DuckDB casts
    the column and fails the query on the first value that is no number. The comparison becomes
    ``CASE WHEN typeof(x) = 'VARCHAR' THEN <x read as Spark reads an INT> op n ELSE x op n END``; DuckDB folds
    the ``typeof`` test when it binds, so a filter on a number column still reaches the scan as
    ``x op n``. (Decimal literals are left alone: DuckDB cannot bind a text column against one in
    the other branch, so ``s > 1.5`` still fails as before.) Only where a side's type is not known
    here, as above."""
    for node in list(tree.find_all(*COMPARISONS)):
        left, right = node.this, node.expression
        if _typed(left, right):
            continue
        if _integer_literal(right) and not isinstance(left, exp.Literal):
            other, number, swap = left, right, False
        elif _integer_literal(left) and not isinstance(right, exp.Literal):
            other, number, swap = right, left, True
        else:
            continue
        digits = number.this.this if isinstance(number, exp.Neg) else number.this
        text = spark_casts.as_text(other.copy())
        as_number = spark_casts.spark_cast(text, exp.DataType.build("INT" if int(digits) < 2**31 else "BIGINT"),
                                           exp.DataType.build("VARCHAR"))
        pair = (number.copy(), as_number) if swap else (as_number, number.copy())
        is_text = exp.EQ(this=exp.Anonymous(this="typeof", expressions=[other.copy()]), expression=exp.Literal.string("VARCHAR"))
        node.replace(exp.Case(ifs=[exp.If(this=is_text, true=node.__class__(this=pair[0], expression=pair[1]))],
                              default=node.copy()))


def _typed(left: exp.Expression, right: exp.Expression) -> bool:
    """Whether both sides of a comparison have a type known at translation."""
    return kind(spark_type(left)) is not None and kind(spark_type(right)) is not None


def _integer_literal(node: exp.Expression) -> bool:
    inner = node.this if isinstance(node, exp.Neg) else node
    return isinstance(inner, exp.Literal) and not inner.is_string and inner.this.isdigit()


def _string_literal(node: exp.Expression) -> bool:
    return isinstance(node, exp.Literal) and node.is_string


def _odd_text(node: exp.Expression) -> bool:
    return _string_literal(node) and _NOT_A_NUMBER_DATE_OR_BOOLEAN.match(node.this) is not None


def json_path_wildcards_give_json_text(tree: exp.Expression) -> None:
    """Spark's ``get_json_object(json, '$[*].id')`` returns the matches as JSON text (``[1,2]``), a
    single match unwrapped (``1``), NULL for none; DuckDB's ``->>`` with a wildcard returns a list."""
    for node in list(tree.find_all(exp.JSONExtractScalar)):
        path = node.expression
        if path.find(exp.JSONPathWildcard) or (_string_literal(path) and "*" in path.this):
            matches = _cast(exp.Anonymous(this="to_json", expressions=[
                exp.Anonymous(this="json_extract", expressions=[node.this.copy(), path.copy()])]), "VARCHAR")
            count = exp.Anonymous(this="json_array_length", expressions=[matches.copy()])
            single = exp.Anonymous(this="json_extract_string", expressions=[matches.copy(), exp.Literal.string("$[0]")])
            node.replace(exp.Case(ifs=[exp.If(this=exp.EQ(this=count.copy(), expression=exp.Literal.number(1)), true=single),
                                       exp.If(this=exp.GT(this=count, expression=exp.Literal.number(1)), true=matches)]))


def struct_of_star_is_the_row(tree: exp.Expression) -> None:
    """Spark's ``struct(*)`` is the whole row (``to_json(struct(*))``, byzer-doc save_data/dw/delta.md).
    sqlglot bug: ``sqlglot.transpile("select to_json(struct(*)) from t", read="spark", write="duckdb")``
    gives ``TO_JSON({'_0': *})``, which DuckDB cannot bind. DuckDB names the row by its table: with
    one table in FROM, ``struct(*)`` becomes that table's name (or alias)."""
    for node in list(tree.find_all(exp.Struct)):
        if len(node.expressions) != 1 or not isinstance(node.expressions[0], exp.Star):
            continue
        select = node.find_ancestor(exp.Select)
        source = select.args.get("from_") if select else None
        if source is None or select.args.get("joins") or not isinstance(source.this, exp.Table):
            continue
        node.replace(exp.column(source.this.alias_or_name))


def higher_order_predicates(tree: exp.Expression) -> None:
    """Spark's ``exists(array, x -> p)`` and ``forall(array, x -> p)``: is ``p`` true for some / every
    element, NULL when no element decides it and some ``p`` is NULL (Spark's three-valued logic).
    sqlglot bug: ``sqlglot.transpile("select exists(a, x -> x > 1)", read="spark",
    write="duckdb")`` gives ``EXISTS(a)``, dropping the predicate; ``forall`` it leaves as an unknown
    function. DuckDB: the ``spark_exists``/``spark_forall`` macros over ``list_transform``."""
    for node in list(tree.find_all(exp.Exists, exp.Anonymous)):
        if isinstance(node, exp.Exists) and isinstance(node.args.get("expression"), exp.Lambda):
            array, predicate, reduce = node.this, node.args["expression"], "spark_exists"
        elif isinstance(node, exp.Anonymous) and node.name.lower() == "forall" and len(node.expressions) == 2:
            (array, predicate), reduce = node.expressions, "spark_forall"
        else:
            continue
        node.replace(_call(reduce, exp.Anonymous(this="list_transform", expressions=[array.copy(), predicate.copy()])))


def null_tests(tree: exp.Expression) -> None:
    """Spark's ``isnull(x)``/``isnotnull(x)`` are ``x IS NULL``/``x IS NOT NULL``; DuckDB has neither function."""
    for node in list(tree.find_all(exp.Anonymous)):
        name = node.name.lower()
        if name in ("isnull", "isnotnull") and len(node.expressions) == 1:
            test = exp.Is(this=node.expressions[0], expression=exp.Null())
            node.replace(exp.Paren(this=test if name == "isnull" else exp.Not(this=test)))


def replace_without_replacement(tree: exp.Expression) -> None:
    """Spark's ``replace(str, search)`` removes ``search``; DuckDB's REPLACE needs the replacement."""
    for node in list(tree.find_all(exp.Replace)):
        if node.args.get("replacement") is None:
            node.set("replacement", exp.Literal.string(""))


FAMILY = Family("functions", transforms=(
    int_results, bigint_results, text_compared_with_other_types, text_compared_with_a_number,
    json_path_wildcards_give_json_text, struct_of_star_is_the_row, higher_order_predicates, null_tests,
    replace_without_replacement,
))
