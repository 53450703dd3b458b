"""Spark SQL → the SQL Daft runs, or one refusal naming what Daft would answer otherwise.

The select is parsed as Spark SQL (the project's parser, ``spark.functions.parse``) and typed with
Spark's rules (``spark.sql_types``). Only what has an exact Daft equivalent is let through (the
tables below: clauses, operators, functions, casts, each checked against Spark's answers by
``tests/test_daft_differential.py``); everything else is refused with one ``MLSQLError`` naming it
and pointing to ``--sql-engine duckdb`` — never a different answer. Where Daft's meaning differs in
a way a rewrite mends, the rewrite is here: integer literals keep Spark's INT/BIGINT (so that INT
arithmetic wraps as Java's does), ``x / 0`` and ``x % 0`` are NULL, ``ORDER BY`` puts NULLs where
Spark does, an unnamed result column gets Spark's text of its expression as its name.

Constant tables (``VALUES``, ``range(...)``) are not Daft's to compute: they are handed out
(``Translation.constants``) for the engine to compute with the project's DuckDB translation and
bind to Daft as small Arrow tables.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from sqlglot import exp
from sqlglot.errors import ParseError, SqlglotError, TokenError

from ...errors import MLSQLError
from ...spark import functions as spark_functions
from ...spark import sql_types
from ...spark.sql_types import Schemas

REFUSAL_HINT = "run it with --sql-engine duckdb (or set sql_engine=\"duckdb\" where type=\"conf\";)"
CONSTANT_PREFIX = "__mlsql_constant_"


class Translation(NamedTuple):
    sql: str  # for daft.sql, over the names in ``tables`` and ``constants``
    tables: tuple[str, ...]  # the catalog's tables the query reads
    constants: tuple[tuple[str, str], ...]  # (bound name, Spark SQL of a constant table to compute)


def refusal(what: str) -> MLSQLError:
    return MLSQLError(f"{what} has no exact equivalent on Daft here: {REFUSAL_HINT}")


# -- what passes as it is: the clauses and expressions Daft reads as Spark does ------------------------

_STRUCTURE = (
    exp.Select, exp.From, exp.Join, exp.Where, exp.Group, exp.Having, exp.Order, exp.Ordered, exp.Limit,
    exp.Offset, exp.Subquery, exp.With, exp.CTE, exp.Union, exp.Intersect, exp.Table, exp.TableAlias,
    exp.Alias, exp.Column, exp.Identifier, exp.Star, exp.Paren, exp.Literal, exp.Boolean, exp.Null,
    exp.Distinct, exp.Window, exp.DataType, exp.Tuple,
)
_LOGIC = (exp.And, exp.Or, exp.Not, exp.Is, exp.Exists)
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.In, exp.Between)
_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.Neg)
_FUNCTIONS = (
    exp.Count, exp.Sum, exp.Min, exp.Max, exp.Avg,  # aggregates (and over a window without ORDER BY)
    exp.RowNumber, exp.Rank, exp.DenseRank,  # ranking over a window with ORDER BY
    exp.Upper, exp.Lower, exp.Abs, exp.Coalesce, exp.Case, exp.If, exp.Like,
)
_ALLOWED = _STRUCTURE + _LOGIC + _COMPARISONS + _ARITHMETIC + _FUNCTIONS
_RANKING = (exp.RowNumber, exp.Rank, exp.DenseRank)
_NUMERIC = {"integral", "fractional", "null"}
#: (Spark kind of the value, target type) a CAST converts as Spark does on Daft
_CASTS = {("integral", "integral"), ("integral", "fractional"), ("fractional", "fractional"),
          ("integral", "string"), ("string", "string"), ("null", "integral"), ("null", "fractional"),
          ("null", "string"), ("null", "boolean"), ("boolean", "boolean")}
_JOIN_KINDS = {("", ""), ("", "INNER"), ("LEFT", ""), ("LEFT", "OUTER"), ("RIGHT", ""), ("RIGHT", "OUTER"),
               ("FULL", ""), ("FULL", "OUTER"), ("LEFT", "SEMI")}


def translate(spark_sql: str, schemas_of: Callable[[tuple[str, ...]], Schemas]) -> Translation:
    """``spark_sql`` (one select) as Daft's SQL, the catalog tables it reads (``schemas_of`` them:
    their columns, for Spark's types) and the constant tables to bind; a refusal if any part of it
    has no exact Daft equivalent."""
    try:
        trees = [t for t in spark_functions.parse(spark_sql) if t is not None]
    except (ParseError, TokenError) as exc:
        raise MLSQLError(f"SQL syntax error: {exc}") from exc
    if len(trees) != 1 or not isinstance(trees[0], exp.Query):
        raise MLSQLError("expected one SQL query")
    tree = trees[0]
    constants = _bind_constants(tree)
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    tables = tuple(sorted({t.name for t in tree.find_all(exp.Table)
                           if t.name and t.name.lower() not in ctes and not t.name.startswith(CONSTANT_PREFIX)}))
    schemas = schemas_of(tables)
    with sql_types.typing_of(tree, schemas, spark_sql):
        for node in list(tree.walk()):
            _check(node)
        _name_columns(tree)
        _spell_columns(tree, schemas)
        for node in list(tree.walk()):
            _rewrite(node)
    try:
        return Translation(tree.sql(dialect="postgres"), tables, constants)
    except SqlglotError as exc:  # noqa: BLE001 - what sqlglot cannot write for Daft is not Daft's to run
        raise refusal(f"this query ({exc})") from exc


def _bind_constants(tree: exp.Expression) -> tuple[tuple[str, str], ...]:
    """Replace ``VALUES`` and ``range(...)`` tables by names the engine binds to their rows."""
    found = []
    for node in list(tree.find_all(exp.Values, exp.Table)):
        if isinstance(node, exp.Table) and not isinstance(node.this, exp.Anonymous):
            continue
        if isinstance(node, exp.Table) and node.this.name.lower() != "range":
            raise refusal(f"the table function {node.this.name}(...)")
        name = f"{CONSTANT_PREFIX}{len(found)}"
        alias = node.args.get("alias")
        body = node.copy()
        body.set("alias", None)
        columns = ", ".join(c.sql("spark") for c in alias.columns) if alias is not None and alias.columns else ""
        source = body.this.sql("spark") if isinstance(body, exp.Table) else body.sql("spark")
        found.append((name, f"SELECT * FROM {source} AS {CONSTANT_PREFIX}t" + (f"({columns})" if columns else "")))
        short = alias.this if alias is not None and alias.this else exp.to_identifier(name)
        node.replace(exp.Table(this=exp.to_identifier(name), alias=exp.TableAlias(this=short)))
    return tuple(found)


def _check(node: exp.Expression) -> None:
    if isinstance(node, exp.Anonymous):
        raise refusal(f"the function {node.name}")
    if not isinstance(node, _ALLOWED):
        raise refusal(_described(node))
    if isinstance(node, exp.Literal) and not node.is_string:
        if sql_types.kind(sql_types.literal_type(node)) not in ("integral", "fractional"):
            raise refusal(f"the decimal literal {node.sql('spark')} (Spark's DECIMAL)")
    if isinstance(node, exp.Join):
        kind = (node.side.upper(), node.kind.upper())
        if kind not in _JOIN_KINDS or (not node.args.get("on") and not node.args.get("using")):
            raise refusal(f"the join {node.sql('spark')[:60]}")
    if isinstance(node, exp.Window):
        _check_window(node)
    if isinstance(node, exp.Cast):
        _check_cast(node)
    if isinstance(node, (*_COMPARISONS, *_ARITHMETIC)) and not isinstance(node, exp.Neg):
        _check_operands(node)
    if isinstance(node, (exp.Sum, exp.Avg)) and sql_types.kind(sql_types.spark_type(node.this)) not in _NUMERIC:
        raise refusal(f"{node.key}() of a {_kind_text(node.this)} value")
    if isinstance(node, exp.Count) and isinstance(node.this, exp.Distinct) and len(node.this.expressions) > 1:
        raise refusal("count(DISTINCT ...) of several columns")
    if isinstance(node, (exp.Upper, exp.Lower, exp.Like)) and _kind_text(node.this) not in ("string", "null"):
        raise refusal(f"{node.key}() of a {_kind_text(node.this)} value (Spark casts it to a string)")
    if isinstance(node, exp.Abs) and _kind_text(node.this) not in _NUMERIC:
        raise refusal(f"abs() of a {_kind_text(node.this)} value")
    if isinstance(node, (exp.Case, exp.If, exp.Coalesce)):
        _check_branches(node)
    if isinstance(node, exp.In) and node.args.get("query") is not None and not _filters(node):
        # NOT IN, or IN as a value: Spark's NULL for a NULL among the subquery's rows is not Daft's
        raise refusal(f"IN (subquery) outside a WHERE's conjunction ({node.sql('spark')[:60]})")


def _filters(node: exp.Expression) -> bool:
    """Whether ``node`` decides which rows a WHERE keeps on its own (only ANDs between them)."""
    parent = node.parent
    while isinstance(parent, (exp.And, exp.Paren)):
        parent = parent.parent
    return isinstance(parent, exp.Where)


def _check_branches(node: exp.Expression) -> None:
    """The values a CASE, IF or COALESCE may give, of one family: Spark widens mixed ones to one type."""
    if isinstance(node, exp.Case):
        values = [i.args.get("true") for i in node.args.get("ifs") or []] + [node.args.get("default")]
    elif isinstance(node, exp.If):
        values = [node.args.get("true"), node.args.get("false")]
    else:
        values = [node.this, *node.expressions]
    kinds = {sql_types.kind(sql_types.spark_type(v)) for v in values if v is not None} - {"null"}
    if None in kinds or (len(kinds) > 1 and not kinds <= _NUMERIC) or kinds & {"decimal", "other", "binary"}:
        raise refusal(f"{node.key.upper()} whose values are {', '.join(sorted(map(str, kinds)))} "
                      f"(Spark widens them to one type)")


def _check_window(node: exp.Window) -> None:
    function = node.this
    spec = node.args.get("spec")
    if spec is not None:
        raise refusal("a window frame (ROWS/RANGE BETWEEN ...)")
    ordered = node.args.get("order") is not None
    if isinstance(function, _RANKING) != ordered:
        # Spark's frame of an ordered aggregate is RANGE ... CURRENT ROW, which Daft does not run as Spark
        raise refusal(f"{function.key}() over a window {'with' if ordered else 'without'} ORDER BY")


def _check_cast(node: exp.Cast) -> None:
    source = sql_types.kind(sql_types.spark_type(node.this))
    target = sql_types.kind(node.to)
    if (source, target) not in _CASTS or node.to.this == exp.DataType.Type.TINYINT:
        raise refusal(f"CAST of a {_kind_text(node.this)} value AS {node.to.sql('spark')}")


def _check_operands(node: exp.Expression) -> None:
    """Both sides of a comparison or an arithmetic operator of one family of types: Spark's implicit
    coercions between families (a string compared with a number ...) are not Daft's."""
    operands = [node.this, *(node.expressions or [])] if isinstance(node, exp.In) else \
        [node.this, node.args.get("low"), node.args.get("high")] if isinstance(node, exp.Between) else \
        [node.this, node.expression]
    if isinstance(node, exp.In) and node.args.get("query") is not None:
        operands = [node.this, node.args["query"].selects[0]] if node.args["query"].selects else [node.this]
    kinds = {sql_types.kind(sql_types.spark_type(o)) for o in operands if o is not None}
    kinds.discard("null")
    if isinstance(node, _ARITHMETIC):
        if not kinds <= _NUMERIC:
            raise refusal(f"the arithmetic {node.sql('spark')[:60]} on {', '.join(sorted(map(str, kinds)))} values")
        return
    if len(kinds) > 1 and not kinds <= _NUMERIC:
        raise refusal(f"the comparison {node.sql('spark')[:60]} of {' and '.join(sorted(map(str, kinds)))} values")
    if None in kinds or kinds & {"decimal", "other", "binary", "timestamp"}:
        raise refusal(f"the comparison {node.sql('spark')[:60]} of {', '.join(sorted(map(str, kinds)))} values")


def _kind_text(node: exp.Expression) -> str:
    return sql_types.kind(sql_types.spark_type(node)) or "untyped"


def _described(node: exp.Expression) -> str:
    if isinstance(node, exp.Func):
        return f"the function {node.sql_name().lower()}"
    return f"{node.key.upper()} ({node.sql('spark')[:60]})"


# -- rewrites where Daft's meaning differs from Spark's --------------------------------------------

def _name_columns(tree: exp.Expression) -> None:
    """An unnamed expression of a select list gets Spark's text of it as its name (Daft would name
    it after its first column or ``literal``, and two of them would clash)."""
    for select in tree.find_all(exp.Select):
        for i, item in enumerate(select.expressions):
            if not isinstance(item, (exp.Alias, exp.Column, exp.Star)):
                select.expressions[i] = exp.alias_(item, item.sql("spark"), quoted=True, copy=False)
                select.expressions[i].parent = select


def _spell_columns(tree: exp.Expression, schemas: Schemas) -> None:
    """A column written in another case than its table's (or alias's) spelling gets that spelling:
    Spark resolves names case-insensitively, Daft does not. A name spelled two ways stays as written."""
    spellings: dict[str, set[str]] = {}
    for _, columns in schemas:
        for name, _ in columns:
            spellings.setdefault(name.lower(), set()).add(name)
    for alias in tree.find_all(exp.Alias):
        spellings.setdefault(alias.alias.lower(), set()).add(alias.alias)
    for column in tree.find_all(exp.Column):
        known = spellings.get(column.name.lower(), set())
        if len(known) == 1 and column.name not in known:
            column.set("this", exp.to_identifier(next(iter(known)), quoted=column.this.quoted))


def _rewrite(node: exp.Expression) -> None:
    if isinstance(node, exp.Literal) and not node.is_string and not isinstance(
            node.parent, (exp.Group, exp.Ordered, exp.Limit, exp.Offset, exp.Neg)):
        _typed_literal(node, node)
    elif isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        _typed_literal(node, node)
    elif isinstance(node, (exp.Div, exp.Mod)):  # Spark: NULL where the divisor is 0 (Daft: inf, or a panic)
        divisor = node.expression
        node.set("expression", exp.Case(ifs=[exp.If(this=exp.NEQ(this=divisor.copy(), expression=exp.Literal.number(0)),
                                                     true=divisor)], default=exp.Null()))
        node.set("safe", False)  # sqlglot's own NULLIF for it: Daft has no nullif
        if isinstance(node, exp.Div):  # Spark's / is a DOUBLE division
            node.set("this", exp.Cast(this=node.this, to=exp.DataType.build("DOUBLE")))
    elif isinstance(node, exp.If):
        # a NULL condition is not true (Daft's CASE would answer NULL instead of the ELSE)
        node.set("this", exp.Coalesce(this=node.this, expressions=[exp.false()]))
    elif isinstance(node, exp.Avg):  # Spark averages integers as doubles (Daft's int64 sum would wrap)
        node.set("this", exp.Cast(this=node.this, to=exp.DataType.build("DOUBLE")))
    elif isinstance(node, exp.Ordered) and node.args.get("nulls_first") is None:
        node.set("nulls_first", not node.args.get("desc"))  # Spark: NULLs first ascending, last descending


def _typed_literal(node: exp.Expression, at: exp.Expression) -> None:
    """An integer literal with Spark's type (INT or BIGINT: Daft would make every one a BIGINT)."""
    t = sql_types.literal_type(node)
    if sql_types.kind(t) == "integral" and not isinstance(node.parent, exp.Cast):
        at.replace(exp.Cast(this=node.copy(), to=t.copy()))
