"""Spark's grouping analytics, aggregates and window functions on DuckDB (issue 23, item 3):
tree rewrites (``TRANSFORMS``).

- ``GROUP BY a, b WITH CUBE|ROLLUP`` and Spark's ``GROUP BY a, b GROUPING SETS (...)`` (the sets
  alone, ``a, b`` only declares the columns); ``grouping()`` is a TINYINT, ``grouping_id()``
  without arguments and Hive's ``grouping__id`` count every grouping column, the first one the
  highest bit (as DuckDB's ``grouping_id`` does); both are errors outside CUBE/ROLLUP/GROUPING SETS,
  as in Spark.
- Aggregates whose DuckDB namesakes differ: ``every``/``some``/``any``/``std``, ``first``/``last``
  (also ``first_value``/``last_value`` as aggregates) with ``IGNORE NULLS`` or ``true``,
  ``percentile`` (interpolated, DOUBLE, with a frequency), ``percentile_approx``/
  ``approx_percentile`` (see below), ``max_by``/``min_by`` (the value may be NULL), population
  ``kurtosis``/``skewness``, ``regr_count`` (BIGINT).
- ``percentile_approx(x, p[, accuracy])`` is Spark's "smallest value such that no more than p of
  the values are below it" computed exactly (DuckDB's ``quantile_disc``, the nearest rank): Spark's
  sketch gives that same value whenever it is exact (small groups, or accuracy high enough), and
  never an interpolated value as DuckDB's ``approx_quantile`` would; the accuracy is not used, and
  a group's values are held in memory while it is computed.
- Windows: ``rank``/``dense_rank``/``ntile`` are INTs, ``rank(x)`` ignores its argument as Spark
  does, and an aggregate with ``FILTER`` over a window is Spark's error.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from ..errors import MLSQLError
from .arrays_maps import gated
from .family import Family

def _call(name: str, *args: exp.Expression) -> exp.Anonymous:
    return exp.Anonymous(this=name, expressions=list(args))


def _cast(node: exp.Expression, to: str) -> exp.Cast:
    return exp.Cast(this=node, to=exp.DataType.build(to, dialect="duckdb"))


def _own(select: exp.Select, *types):
    """The nodes of those types that belong to ``select`` itself, not to a query nested in it."""
    return [n for n in select.find_all(*types) if n.find_ancestor(exp.Select) is select]


# -- grouping analytics ----------------------------------------------------------------------------

GROUPING_ERROR = "grouping()/grouping_id() can only be used with GroupingSets/Cube/Rollup"


def grouping_analytics(tree: exp.Expression) -> None:
    """See the module's docstring; one pass per select."""
    for select in list(tree.find_all(exp.Select)):
        group = select.args.get("group")
        columns = _spark_grouping_columns(group) if group is not None else None
        calls = _own(select, exp.Grouping, exp.GroupingId) + [
            c for c in _own(select, exp.Column) if c.name.lower() == "grouping__id" and not c.table]
        if not calls:
            continue
        if columns is None:
            raise MLSQLError(GROUPING_ERROR)
        for call in calls:
            if isinstance(call, exp.Grouping):
                call.replace(_cast(call.copy(), "TINYINT"))
                continue
            args = call.expressions if isinstance(call, exp.GroupingId) else []
            if args and [a.sql() for a in args] != [c.sql() for c in columns]:
                raise MLSQLError(f"Columns of grouping_id ({', '.join(a.sql('spark') for a in args)}) does not match "
                                 f"grouping columns ({', '.join(c.sql('spark') for c in columns)})")
            call.replace(exp.GroupingId(expressions=[c.copy() for c in columns]))


def _spark_grouping_columns(group: exp.Group) -> list[exp.Expression] | None:
    """Rewrite Spark's forms of ``group`` into DuckDB's; the grouping columns (in order, each
    once) when it has grouping sets, None when it is a plain GROUP BY."""
    plain = list(group.expressions)
    analytic = [e for e in plain if isinstance(e, (exp.Cube, exp.Rollup, exp.GroupingSets))]
    with_kinds = [k for k in ("cube", "rollup") if group.args.get(k)]
    for kind in with_kinds:  # GROUP BY a, b WITH CUBE
        for item in group.args[kind]:
            if not item.expressions:
                item.set("expressions", [e.copy() for e in plain])
        group.set("expressions", [])
    if group.args.get("grouping_sets") and plain and not analytic:  # GROUP BY a, b GROUPING SETS (...)
        group.set("expressions", [])
        _null_outside_the_sets(group, plain)
        return plain
    for node in analytic + [i for k in ("cube", "rollup") for i in group.args.get(k) or []]:
        if isinstance(node, (exp.Cube, exp.Rollup)) and any(isinstance(e, exp.Tuple) and not e.expressions for e in node.expressions):
            raise MLSQLError(f"Empty set in {type(node).__name__.upper()} grouping sets is not supported.")
    if not (analytic or with_kinds or group.args.get("grouping_sets")):
        return None
    seen: dict[str, exp.Expression] = {}
    for node in group.iter_expressions():
        for column in _leaves(node):
            seen.setdefault(column.sql(), column)
    return list(seen.values())


def _null_outside_the_sets(group: exp.Group, declared: list[exp.Expression]) -> None:
    """A column ``GROUP BY a, b GROUPING SETS ((a))`` declares but no set groups by is NULL in
    every row (Spark); DuckDB refuses to select it. It becomes an aggregate that is always NULL
    and keeps the column's type, ``first(b) FILTER (WHERE false)``."""
    grouped = {leaf.sql() for node in group.args["grouping_sets"] for leaf in _leaves(node)}
    outside = {d.sql() for d in declared} - grouped
    select = group.parent
    if not outside or not isinstance(select, exp.Select):
        return
    for part in [*select.expressions, select.args.get("having"), select.args.get("order")]:
        if part is None:
            continue
        for node in [n for n in part.walk() if n.sql() in outside and not isinstance(n, (exp.Alias, exp.Ordered))]:
            if node.parent is not None and not any(isinstance(a, exp.Filter) for a in _ancestors(node, part)):
                never = exp.Filter(this=_call("first", node.copy()), expression=exp.Where(this=exp.false()))
                if node is part:  # a selected column keeps its name, as in Spark
                    named = exp.alias_(never, node.output_name, quoted=True) if node.output_name else never
                    select.set("expressions", [named if e is node else e for e in select.expressions])
                else:
                    node.replace(never)


def _ancestors(node: exp.Expression, top: exp.Expression):
    while node is not None and node is not top:
        node = node.parent
        yield node


def _leaves(node: exp.Expression):
    if isinstance(node, (exp.Cube, exp.Rollup, exp.GroupingSets, exp.Tuple)):
        for item in node.expressions:
            yield from _leaves(item)
    elif isinstance(node, exp.Paren):  # a set of one: ((a))
        yield from _leaves(node.this)
    else:
        yield node


COMMUTATIVE = (exp.Add, exp.Mul, exp.EQ, exp.NEQ, exp.NullSafeEQ, exp.And, exp.Or, exp.BitwiseAnd, exp.BitwiseOr,
               exp.BitwiseXor)


def canonical(node: exp.Expression) -> str:
    """The text of an expression with the operands of commutative operators in one order: Spark's
    ``semanticEquals`` (its canonicalized form), by which ``b + a`` groups as ``a + b``."""
    copy = node.copy()
    for part in reversed(list(copy.walk())):  # innermost first
        if isinstance(part, exp.Paren):
            part.replace(part.this)
        elif isinstance(part, COMMUTATIVE):
            left, right = sorted((part.this, part.expression), key=lambda e: e.sql())
            part.set("this", left)
            part.set("expression", right)
    return copy.sql()


def grouping_expressions_spelt_once(tree: exp.Expression) -> None:
    """Each grouping expression of CUBE, ROLLUP and GROUPING SETS written one way, its first:
    ``GROUPING SETS ((a + b), (b + a))`` groups twice by ``a + b`` in Spark, and the select's ``a + b``
    is not NULL in the second set; DuckDB tells the two spellings apart. A select item that is a
    grouping expression spelled otherwise takes its spelling too. Before the other rewrites, which
    write the two spellings apart (``CAST(a AS BIGINT) + b``)."""
    for group in list(tree.find_all(exp.Group)):
        select = group.parent
        if isinstance(select, exp.Select) and (group.args.get("grouping_sets") or group.args.get("cube")
                                               or group.args.get("rollup") or any(
                isinstance(e, (exp.Cube, exp.Rollup, exp.GroupingSets)) for e in group.expressions)):
            _spell_once(select, group)


def _spell_once(select: exp.Select, group: exp.Group) -> None:
    first: dict[str, exp.Expression] = {}
    for node in list(group.iter_expressions()):
        for leaf in list(_leaves(node)):
            key = canonical(leaf)
            if key not in first:
                first[key] = leaf
            elif leaf.sql() != first[key].sql():
                leaf.replace(first[key].copy())
    for item in select.expressions:
        inner = item.this if isinstance(item, exp.Alias) else item
        spelt = first.get(canonical(inner)) if not isinstance(inner, exp.Column) else None
        if spelt is not None and spelt.sql() != inner.sql():
            inner.replace(spelt.copy())


# -- aggregates ------------------------------------------------------------------------------------

COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)
RENAMED = {"every": "bool_and", "some": "bool_or", "any": "bool_or", "std": "stddev_samp"}
FIRST_LAST = (exp.First, exp.Last, exp.FirstValue, exp.LastValue)
AGGREGATES = (exp.Any, exp.IgnoreNulls, exp.FirstValue, exp.LastValue, exp.Quantile, exp.ArgMax, exp.ArgMin,
              exp.ApproxDistinct, exp.Kurtosis, exp.Skewness, exp.RegrCount, exp.ArrayAgg, exp.ArrayUniqueAgg, exp.Corr)


def aggregates(tree: exp.Expression) -> None:
    """See the module's docstring."""
    for node in list(tree.find_all(exp.Anonymous, *AGGREGATES)):
        if isinstance(node, exp.Anonymous):
            _named_aggregate(node)
        elif isinstance(node, exp.Any) and not isinstance(node.parent, (*COMPARISONS, exp.Like, exp.ILike)):
            node.replace(_call("bool_or", node.this.unnest().copy()))
        elif isinstance(node, exp.IgnoreNulls) and isinstance(node.this, FIRST_LAST) and not isinstance(node.parent, exp.Window):
            node.replace(_first_or_last(node.this, ignore_nulls=True))
        elif isinstance(node, (exp.FirstValue, exp.LastValue)) and not isinstance(node.parent, (exp.Window, exp.IgnoreNulls)):
            node.replace(_first_or_last(node, ignore_nulls=False))
        elif isinstance(node, exp.ApproxQuantile):
            node.replace(_call("quantile_disc", node.this.copy(), node.args["quantile"].copy()))
        elif isinstance(node, exp.Quantile):
            node.replace(_percentile(node.this, node.args["quantile"], None))
        elif isinstance(node, (exp.ArgMax, exp.ArgMin)):
            name = "arg_max_null" if isinstance(node, exp.ArgMax) else "arg_min_null"
            node.replace(_call(name, node.this.copy(), node.expression.copy()))
        elif isinstance(node, exp.ApproxDistinct) and node.args.get("accuracy") is not None:
            node.set("accuracy", None)
        elif isinstance(node, (exp.Kurtosis, exp.Skewness)):
            _population_moment(node)
        elif isinstance(node, exp.RegrCount) and not isinstance(node.parent, exp.Cast):
            node.replace(_cast(node.copy(), "BIGINT"))
        elif isinstance(node, (exp.ArrayAgg, exp.ArrayUniqueAgg)):
            _empty_not_null(node)
        elif isinstance(node, exp.Corr):
            outer = node.parent if isinstance(node.parent, exp.Window) else node
            if not isinstance(outer.parent, exp.Nullif):  # DuckDB's NaN for a constant column is Spark's NULL
                outer.replace(exp.Nullif(this=outer.copy(), expression=_cast(exp.Literal.string("NaN"), "DOUBLE")))


def _empty_not_null(node: exp.Expression) -> None:
    """``collect_list``/``collect_set`` of no values is an empty array in Spark, NULL in DuckDB."""
    outer = node
    while isinstance(outer.parent, (exp.Filter, exp.Window)):
        outer = outer.parent
    if not (isinstance(outer.parent, exp.Coalesce)):
        outer.replace(exp.Coalesce(this=outer.copy(), expressions=[exp.Array(expressions=[])]))


def _population_moment(node: exp.Kurtosis | exp.Skewness) -> None:
    """Spark's ``skewness`` is the population's, sqrt(n)·m3/m2^1.5: DuckDB's sample G1 times
    (n-2)/sqrt(n(n-1)) (0 for two values); its ``kurtosis`` the population's excess kurtosis,
    DuckDB's ``kurtosis_pop``; both NULL when all values are equal. Written out (a DuckDB macro
    cannot hold several aggregates over a window): over a window each aggregate gets the window."""
    window = node.parent if isinstance(node.parent, exp.Window) else None
    x = _cast(node.this.copy(), "DOUBLE")

    def windowed(name: str) -> exp.Expression:
        call = _call(name, x.copy())
        if window is None:
            return call
        over = window.copy()
        over.set("this", call)
        return over

    n = windowed("count")
    if isinstance(node, exp.Skewness):
        corrected = exp.Div(this=exp.Mul(this=windowed("skewness"), expression=exp.Paren(this=exp.Sub(this=n.copy(), expression=exp.Literal.number(2)))),
                            expression=_call("sqrt", exp.Mul(this=n.copy(), expression=exp.Paren(this=exp.Sub(this=n.copy(), expression=exp.Literal.number(1))))))
        value = exp.Case(ifs=[exp.If(this=exp.EQ(this=n.copy(), expression=exp.Literal.number(2)), true=exp.Literal.number("0.0"))], default=corrected)
    else:
        value = windowed("kurtosis_pop")
    result = exp.Case(ifs=[exp.If(this=exp.EQ(this=windowed("var_pop"), expression=exp.Literal.number(0)), true=exp.Null())], default=value)
    (window or node).replace(result)


def _first_or_last(node: exp.Expression, ignore_nulls: bool) -> exp.Expression:
    """``first``/``last`` as aggregates (``first_value``/``last_value`` too): DuckDB's keep NULLs;
    ignoring them is ``first(x) FILTER (WHERE x IS NOT NULL)``."""
    value = node.this
    call = _call("first" if isinstance(node, (exp.First, exp.FirstValue)) else "last", value.copy())
    if not ignore_nulls:
        return call
    return exp.Filter(this=call, expression=exp.Where(this=exp.Not(this=exp.Is(this=value.copy(), expression=exp.Null()))))


def _named_aggregate(node: exp.Anonymous) -> None:
    name, args = node.name.lower(), node.expressions
    if name in RENAMED and len(args) == 1:
        node.replace(_call(RENAMED[name], args[0].copy()))
    elif name in ("first_value", "last_value") and args:
        _first_value(node, args)
    elif name == "percentile" and len(args) in (2, 3):
        node.replace(_percentile(args[0], args[1], args[2] if len(args) == 3 else None))
    elif name == "histogram_numeric":
        raise MLSQLError("histogram_numeric is not supported (Spark's histogram bins have no DuckDB counterpart)")


def _first_value(node: exp.Anonymous, args: list[exp.Expression]) -> None:
    """``first_value(x[, ignoreNulls])``/``last_value``: a window function over a window, an
    aggregate otherwise; the second argument a boolean literal, as in Spark."""
    cls = exp.FirstValue if node.name.lower() == "first_value" else exp.LastValue
    function = cls(this=args[0].copy())
    wrapper = node.parent if isinstance(node.parent, (exp.IgnoreNulls, exp.RespectNulls)) else None
    ignore = isinstance(wrapper, exp.IgnoreNulls) or (len(args) > 1 and isinstance(args[1], exp.Boolean) and args[1].this)
    target = wrapper or node
    if isinstance(target.parent, exp.Window):
        target.replace(exp.IgnoreNulls(this=function) if ignore else function)
    else:
        target.replace(_first_or_last(function, ignore_nulls=ignore))


def _percentile(value: exp.Expression, p: exp.Expression, frequency: exp.Expression | None) -> exp.Expression:
    """Spark's ``percentile(x, p[, frequency])``: interpolated between the nearest ranks
    (DuckDB's ``quantile_cont``), a DOUBLE or an array of DOUBLEs; each value counted
    ``frequency`` times."""
    if frequency is not None:
        values = _call("flatten", _call("list", _call("repeat", exp.Array(expressions=[value.copy()]), frequency.copy())))
        result = _call("list_aggregate", values, exp.Literal.string("quantile_cont"), p.copy())
    else:
        result = _call("quantile_cont", value.copy(), p.copy())
    return _cast(result, "DOUBLE[]" if isinstance(p, exp.Array) else "DOUBLE")


def covariance_argument_order(tree: exp.Expression) -> None:
    """Spark's ``covar_pop(x, y)``/``covar_samp(x, y)`` update their co-moment as ``dx * (y - mean_y)``;
    DuckDB's ``covar_pop(y, x)`` names its arguments the other way round, so the same sum rounds
    differently (``covar_pop(val, val_long)`` of windows.txt: 4.772185885555556E8 against Spark's
    ...555E8). Given in DuckDB's order, the arithmetic is Spark's."""
    for node in list(tree.find_all(exp.CovarPop, exp.CovarSamp)):
        first, second = node.this, node.expression
        node.set("this", second.copy())
        node.set("expression", first.copy())


def values_rows_in_parentheses(tree: exp.Expression) -> None:
    """Spark reads ``VALUES (('a', 10)), (('b', 50)) AS t(x, y)`` (as the function reference
    writes ``max_by``'s example) as rows of two columns; DuckDB as rows of one struct. Rows without
    parentheses, ``VALUES 1, 2, 3 AS data(a)``: sqlglot takes the table's name for the last value's alias
    (``(3 AS data)``), which goes back to the table."""
    for values in list(tree.find_all(exp.Values)):
        last = values.expressions[-1] if values.expressions else None
        alias = values.args.get("alias")
        if isinstance(last, exp.Tuple) and last.expressions and isinstance(last.expressions[-1], exp.Alias) \
                and alias is not None and not alias.name:
            named = last.expressions[-1]
            alias.set("this", named.args["alias"].copy())
            named.replace(named.this.copy())
        for row in values.expressions:
            if isinstance(row, exp.Tuple) and len(row.expressions) == 1 and isinstance(row.expressions[0], exp.Tuple):
                row.set("expressions", [e.copy() for e in row.expressions[0].expressions])


# -- windows ---------------------------------------------------------------------------------------

def window_functions(tree: exp.Expression) -> None:
    """See the module's docstring."""
    for window in list(tree.find_all(exp.Window)):
        function = window.this
        if isinstance(function, exp.Filter):
            raise MLSQLError("window aggregate function with filter predicate is not supported yet.")
        if isinstance(function, (exp.Rank, exp.DenseRank, exp.PercentRank, exp.CumeDist)):
            function.set("expressions", [])
        if isinstance(function, (exp.Rank, exp.DenseRank, exp.Ntile)) and not isinstance(window.parent, exp.Cast):
            window.replace(_cast(window.copy(), "INT"))


TRANSFORMS: tuple[Callable[[exp.Expression], None], ...] = (gated(
    (grouping_analytics, (exp.Group, exp.Grouping, exp.GroupingId), frozenset()),
    (aggregates, AGGREGATES, frozenset(RENAMED) | {"first_value", "last_value", "percentile", "histogram_numeric"}),
    (window_functions, (exp.Window,), frozenset()),
    (covariance_argument_order, (exp.CovarPop, exp.CovarSamp), frozenset()),
    (values_rows_in_parentheses, (exp.Values,), frozenset()),
),)

FAMILY = Family("grouping", transforms=TRANSFORMS)

SPELLINGS = Family("grouping spellings", transforms=(grouping_expressions_spelt_once,))
"""Run before the casts, which would write two spellings of one grouping expression apart."""
