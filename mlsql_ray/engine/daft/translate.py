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

A value Daft has no exact equivalent for that only needs one row (a scalar function, a decimal
literal, ``||``, a ``register``ed model function ...) is not refused: the largest expression around
it that needs one row is cut out (``Translation.rows``) and called in Daft's SQL as a function of
the columns it reads (``__mlsql_row_N(cols)``), which the engine defines to run the project's DuckDB
translation of that expression over each batch where Daft computes it (``daft/rows.py``). What needs
more than one row (aggregates, windows, subqueries) stays Daft's, exact or refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple

from sqlglot import exp
from sqlglot.errors import ParseError, SqlglotError, TokenError

from ...errors import MLSQLError
from ...spark import functions as spark_functions
from ...spark import sql_types
from ...spark.sql_types import Schemas

REFUSAL_HINT = "run it with --sql-engine duckdb (or set sql_engine=\"duckdb\" where type=\"conf\";)"
CONSTANT_PREFIX = "__mlsql_constant_"
ROW_PREFIX = "__mlsql_row_"
BATCH = "__mlsql_batch"  # the table of a batch's arguments in a row expression's SQL


@dataclass(frozen=True)
class RowExpression:
    """An expression Daft calls as the function ``name`` of its arguments, computed by the DuckDB
    translation of ``query`` (``SELECT <it> AS v FROM __mlsql_batch``, a tree cut out of the select
    parsed from ``text``; its arguments the columns of the batch, named as they are, of Spark's
    types ``arguments``) over each batch."""

    name: str
    query: exp.Select
    text: str
    arguments: tuple[tuple[str, str], ...]  # (column of the batch, its DuckDB type)
    shown: str  # the expression as written, for errors


class Translation(NamedTuple):
    sql: str  # for daft.sql, over the names in ``tables`` and ``constants``, calling those of ``rows``
    tables: tuple[str, ...]  # the catalog's tables the query reads
    constants: tuple[tuple[str, str], ...]  # (bound name, Spark SQL of a constant table to compute)
    rows: tuple[RowExpression, ...] = ()  # the expressions computed per batch by DuckDB


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
        cuts = _row_cuts(tree)
        _name_columns(tree)
        _spell_columns(tree, schemas)
        rows = _cut_all(cuts, spark_sql)
        for node in list(tree.walk()):
            _rewrite(node)
    try:
        return Translation(tree.sql(dialect="postgres"), tables, constants, rows)
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


# -- what DuckDB computes per batch ----------------------------------------------------------------

#: values that need only their row: what a cut may hold (aggregates, windows, subqueries, generators
#: of rows and the functions below are excluded by ``_per_row``)
_VALUES = (exp.Func, exp.Binary, exp.Unary, exp.Predicate, exp.Literal, exp.Boolean, exp.Null, exp.Interval,
           exp.Lambda)
#: what is not a function of its row: an aggregate, a window (Daft's, as an argument of a cut), a
#: subquery, a generator of rows, and values that differ by batch (random numbers, ids, the clock)
_NOT_PER_ROW = (exp.AggFunc, exp.Window, exp.Subquery, exp.Select, exp.Exists, exp.UDTF, exp.Explode, exp.Unnest,
                exp.Rand, exp.Randn, exp.Uuid, exp.CurrentTimestamp, exp.CurrentDate, exp.CurrentTime, exp.Star)
_NOT_PER_ROW_NAMES = {"monotonically_increasing_id", "spark_partition_id", "input_file_name", "uuid", "shuffle",
                      "rand", "random", "randn", "now", "current_timestamp", "current_date", "localtimestamp",
                      "unix_timestamp", "current_timezone", "explode", "explode_outer", "posexplode",
                      "posexplode_outer", "inline", "inline_outer", "stack", "json_tuple"}


def _row_cuts(tree: exp.Expression) -> list[exp.Expression]:
    """The expressions DuckDB computes per batch: around each part Daft has no exact equivalent for,
    the largest expression that needs only its row; the first part that is not in one is refused."""
    failing = []
    for node in tree.walk():
        try:
            _check(node)
        except MLSQLError as exc:
            failing.append((node, exc))
    cuts: list[exp.Expression] = []
    for node, exc in failing:
        if any(_covered(node, cut) for cut in cuts):
            continue
        if not _per_row(node):
            raise exc
        while _per_row(node.parent):
            node = node.parent
        if not _allowed_where(node):
            raise exc
        cuts = [cut for cut in cuts if not _covered(cut, node)] + [node]
    return cuts


def _covered(node: exp.Expression, cut: exp.Expression) -> bool:
    """Whether DuckDB computes ``node`` as part of ``cut`` (not inside a window, Daft's argument of it)."""
    while node is not None:
        if node is cut:
            return True
        if isinstance(node, exp.Window):
            return False
        node = node.parent
    return False


def _per_row(node: exp.Expression | None) -> bool:
    """Whether ``node`` is a value that needs only its row (windows of Daft's as arguments aside)."""
    if not isinstance(node, _VALUES) or isinstance(node, (exp.Column, exp.Identifier, exp.DataType, exp.Var)):
        return False
    for inner in node.walk(prune=lambda n: isinstance(n, exp.Window)):
        if isinstance(inner, exp.Window):
            continue  # Daft's (it passes its checks or is refused): an argument of the cut
        if isinstance(inner, _NOT_PER_ROW) or (isinstance(inner, exp.Anonymous) and inner.name.lower() in _NOT_PER_ROW_NAMES):
            return False
    return True


def _allowed_where(cut: exp.Expression) -> bool:
    """A cut of a grouped select only in its WHERE: Daft computes a grouped select's other
    expressions again over the group's keys (``f(x)`` grouped by ``f(x)`` would be ``f(f(x))``), and
    plans no function call inside an aggregate."""
    select = cut.find_ancestor(exp.Select)
    if select is None or not _grouped(select):
        return True
    return isinstance(cut.find_ancestor(exp.Where, exp.Select), exp.Where)


def _grouped(select: exp.Select) -> bool:
    if select.args.get("group") or select.args.get("having"):
        return True
    return any(isinstance(n, exp.AggFunc) for item in select.expressions
               for n in item.walk(prune=lambda n: isinstance(n, (exp.Subquery, exp.Window))))


def _cut_all(cuts: list[exp.Expression], text: str) -> tuple[RowExpression, ...]:
    """Replace each cut by a call of ``__mlsql_row_<i>`` of its columns (and of the windows inside
    it): what each computes. Arguments and their types are read before any is replaced; the
    deepest cuts are replaced first (a cut may sit in a window that is an argument of another)."""
    planned = [(i, cut, _arguments(cut)) for i, cut in enumerate(cuts)]
    typed = [(i, cut, arguments, [sql_types.spark_type(a) for a in arguments]) for i, cut, arguments in planned]
    found = {}
    for i, cut, arguments, types in sorted(typed, key=lambda planned_cut: -_depth(planned_cut[1])):
        shown = cut.sql("spark")
        unknown = [a for a, t in zip(arguments, types) if t is None or sql_types.kind(t) is None]
        if unknown:
            raise refusal(f"{shown[:60]} (the type of {unknown[0].sql('spark')} is not known)")
        # the batch's columns keep their names: Spark names struct fields (struct, arrays_zip) after them
        names = [a.name if isinstance(a, exp.Column) else f"__mlsql_window_{k}" for k, a in enumerate(arguments)]
        if len({n.lower() for n in names}) < len(names):
            raise refusal(f"{shown[:60]} (it reads two columns of one name)")
        index = {a.sql("spark"): k for k, a in enumerate(arguments)}
        calls = [a.copy() for a in arguments] or [exp.Literal.number(1)]  # no column: one value per row alike
        for inner in _argument_nodes(cut):
            inner.replace(exp.column(names[index[inner.sql("spark")]], quoted=True))
        name = f"{ROW_PREFIX}{i}"
        cut.replace(exp.Anonymous(this=name, expressions=calls))
        query = exp.select(exp.alias_(cut, "v", copy=False), copy=False).from_(BATCH, copy=False)
        columns = tuple(zip(names, (t.sql("duckdb") for t in types))) or (("__mlsql_none", "INT"),)
        found[i] = RowExpression(name, query, text, columns, shown)
    return tuple(found[i] for i in sorted(found))


def _arguments(cut: exp.Expression) -> list[exp.Expression]:
    """The columns and windows a cut reads, one of each."""
    arguments, texts = [], set()
    for inner in _argument_nodes(cut):
        text = inner.sql("spark")
        if text not in texts:
            texts.add(text)
            arguments.append(inner)
    return arguments


def _argument_nodes(cut: exp.Expression) -> list[exp.Expression]:
    return [inner for inner in cut.walk(prune=lambda n: isinstance(n, exp.Window))
            if isinstance(inner, (exp.Column, exp.Window)) and not _lambda_variable(inner)]


def _depth(node: exp.Expression) -> int:
    depth = 0
    while node.parent is not None:
        node, depth = node.parent, depth + 1
    return depth


def _lambda_variable(column: exp.Expression) -> bool:
    """A lambda's parameter (``x`` of ``x -> x + 1``), not a column."""
    parent = column.parent
    while parent is not None:
        if isinstance(parent, exp.Lambda) and column.name.lower() in {p.name.lower() for p in parent.expressions}:
            return True
        parent = parent.parent
    return False


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
    it after its first column or ``literal``, and two of them would clash); a qualified column its
    own name (Daft's would be ``t.x``)."""
    for select in tree.find_all(exp.Select):
        for i, item in enumerate(select.expressions):
            if isinstance(item, exp.Column) and item.table and not isinstance(item.this, exp.Star):
                select.expressions[i] = exp.alias_(item, item.name, quoted=True, copy=False)
            elif not isinstance(item, (exp.Alias, exp.Column, exp.Star)):
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
