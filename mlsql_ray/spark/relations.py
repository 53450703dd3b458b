"""Spark's relational queries on DuckDB (issue 43): which table a name means, how joins and table
functions are written; rewrites of the sqlglot tree (``TRANSFORMS``) applied before the others.

- ``WITH``: a CTE sees only the CTEs defined before it, so ``WITH t AS (SELECT 1 FROM t)`` reads the
  table ``t`` and a CTE naming a later CTE reads the table of that name (DuckDB: a circular
  reference); an inner CTE redefining an outer one's name where a query starts (a CTE's body, a
  subquery expression) is Spark 3.3's error (``spark.sql.legacy.ctePrecedencePolicy`` EXCEPTION, its
  default), elsewhere the inner one is meant.
- ``CROSS JOIN ... ON c`` is an inner join (DuckDB: a syntax error); ``FROM t JOIN t`` without aliases
  reads ``t`` twice (DuckDB: a duplicate alias).
- ``range(...)`` has Spark's one column ``id`` and takes expressions (``range(6 + cos(3))``: Spark
  casts them to bigint).
- ``PIVOT``'s values are constants, ``LIMIT`` a constant integer, and a select with ``*`` is not
  grouped by ordinals, as Spark requires.
- ``x [NOT] LIKE ANY|SOME|ALL (p, ...)``: each pattern, joined by OR (ANY, SOME) or AND (ALL), with
  SQL's three-valued logic as Spark's LikeAny/LikeAll (sqlglot's translation fails to bind for ALL
  and inside CASE).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from sqlglot import exp

from ..errors import MLSQLError
from .casts import spark_name
from .family import Family
from .sql_types import kind, spark_type

# -- WITH ------------------------------------------------------------------------------------------

_AMBIGUOUS = ("Name {} is ambiguous in nested CTE. Please set spark.sql.legacy.ctePrecedencePolicy to CORRECTED so "
              "that name defined in inner CTE takes precedence (Spark 3.3's default is EXCEPTION; see SPARK-28228)")


def ctes_as_spark_scopes_them(tree: exp.Expression) -> None:
    """See the module's docstring: Spark's CTESubstitution."""
    if tree.find(exp.With) is None:
        return
    _no_ambiguous_names(tree, frozenset(), True)
    for with_ in list(tree.find_all(exp.With)):
        ctes = list(with_.expressions)
        for i, cte in enumerate(ctes):
            name = cte.alias_or_name.lower()
            if any(_reads(earlier.this, name) for earlier in ctes[:i + 1]):
                _rename(cte, ctes[i + 1:], with_.parent, name, f"{cte.alias_or_name}__spark_cte{i}")


def _no_ambiguous_names(node: exp.Expression, outer: frozenset[str], start: bool) -> None:
    """Spark's CTESubstitution.assertNoNameConflictsInCTE: where a query starts (a CTE's body, a
    subquery expression) a WITH may not redefine a name of an enclosing WITH."""
    with_ = node.args.get("with_") if isinstance(node, exp.Query) else None
    names = set(outer)
    if with_ is not None:
        for cte in with_.expressions:
            name = cte.alias_or_name.lower()
            if name in names - outer:
                raise MLSQLError(f"CTE definition can't have duplicate names: '{cte.alias_or_name}'")
            if start and name in outer:
                raise MLSQLError(_AMBIGUOUS.format(cte.alias_or_name))
            _no_ambiguous_names(cte.this, frozenset(names), True)
            names.add(name)
    for child in _parts(node):
        if isinstance(child, exp.Subquery) and not isinstance(node, (exp.From, exp.Join)):
            _no_ambiguous_names(child.this, frozenset(names), True)  # a subquery expression starts a query
        else:
            _no_ambiguous_names(child, frozenset(names), False)


def _parts(node: exp.Expression) -> list[exp.Expression]:
    """A node's children but its WITH."""
    values = [v for k, v in node.args.items() if k != "with_"]
    return [c for v in values for c in (v if isinstance(v, list) else [v]) if isinstance(c, exp.Expression)]


def _table_names(node: exp.Expression, name: str) -> Iterator[exp.Table]:
    """The references to a table or CTE called ``name`` inside ``node`` (not to a function such as range)."""
    for table in node.find_all(exp.Table):
        if isinstance(table.this, exp.Identifier) and not table.args.get("db") and table.name.lower() == name:
            yield table


def _reads(node: exp.Expression, name: str) -> bool:
    return next(_table_names(node, name), None) is not None


def _rename(cte: exp.CTE, later: list[exp.CTE], query: exp.Expression, name: str, hidden: str) -> None:
    """CTE ``name`` as ``hidden`` for DuckDB, and the references that mean it (in the later CTEs and the
    query's body, not where an inner WITH defines ``name`` again) too, under their old name as alias."""
    cte.args["alias"].set("this", exp.to_identifier(hidden))
    for part in [c.this for c in later] + _parts(query):
        for table in list(_table_names(part, name)):
            if _redefined_between(table, part, name):
                continue
            if table.args.get("alias") is None:
                table.set("alias", exp.TableAlias(this=exp.to_identifier(table.name)))
            table.set("this", exp.to_identifier(hidden))


def _redefined_between(node: exp.Expression, top: exp.Expression, name: str) -> bool:
    while node is not None and node is not top:
        node = node.parent
        with_ = node.args.get("with_") if isinstance(node, exp.Query) else None
        if with_ is not None and any(c.alias_or_name.lower() == name for c in with_.expressions):
            return True
    return False


# -- joins and table functions ----------------------------------------------------------------------

def joins_as_spark_reads_them(tree: exp.Expression) -> None:
    """``CROSS JOIN t ON c`` as ``INNER JOIN t ON c``; a table joined with itself without an alias gets
    one for DuckDB (the second ``t`` is ``t__spark_self1``...), so ``SELECT * FROM t JOIN t`` reads both."""
    for select in list(tree.find_all(exp.Select)):
        joins = select.args.get("joins") or []
        for join in joins:
            if join.kind and join.kind.upper() == "CROSS" and join.args.get("on") is not None:
                join.set("kind", None)
        from_ = select.args.get("from_")
        sources = ([from_.this] if from_ is not None else []) + [join.this for join in joins]
        seen: dict[str, int] = {}
        for source in sources:
            if not isinstance(source, exp.Table) or not isinstance(source.this, exp.Identifier) or source.alias:
                continue
            key = source.name.lower()
            seen[key] = seen.get(key, 0) + 1
            if seen[key] > 1:
                source.set("alias", exp.TableAlias(this=exp.to_identifier(f"{source.name}__spark_self{seen[key] - 1}")))


def range_table(tree: exp.Expression) -> None:
    """Spark's ``range(...)`` table has one column ``id``; DuckDB's has ``range``. Read from
    ``(SELECT range AS id FROM range(...))`` instead, each argument cast to BIGINT as Spark casts an
    expression there (``range(6 + cos(3))`` is range(5)); Spark's 4th argument, the number of
    partitions, means nothing here."""
    for table in list(tree.find_all(exp.Table)):
        call = table.this
        if isinstance(call, exp.Anonymous) and call.name.lower() == "range":
            if not 1 <= len(call.expressions) <= 4:
                raise MLSQLError(f"Invalid number of arguments for function range: {len(call.expressions)} (Spark's "
                                 f"range takes end, start and end, start end and step, or those and numPartitions)")
            arguments = [a if isinstance(a, exp.Literal) else exp.Cast(this=a.copy(), to=exp.DataType.build("BIGINT"))
                         for a in call.expressions[:3]]
            rows = exp.Table(this=exp.Anonymous(this="range", expressions=arguments))
            select = exp.select(exp.alias_(exp.column("range"), "id")).from_(rows)
            table.replace(exp.Subquery(this=select, alias=table.args.get("alias")))


def pivot_values_are_literals(tree: exp.Expression) -> None:
    """Spark's PIVOT values are constants (``FOR year IN (course, 2013)`` is its error "Literal expressions
    required for pivot values"; DuckDB would pivot on each row's column)."""
    for pivot in tree.find_all(exp.Pivot):
        for field in pivot.args.get("fields") or []:
            for value in field.expressions if isinstance(field, exp.In) else []:
                column = value.find(exp.Column)
                if column is not None:
                    raise MLSQLError(f"Literal expressions required for pivot values, found '{column.sql('spark')}'")


def limits_as_spark_checks_them(tree: exp.Expression) -> None:
    """Spark's LIMIT takes a constant integer expression (``LIMIT 2 + 1``) and refuses the rest with its
    own words: a column or a subquery, a boolean, string or decimal, NULL, a negative number (DuckDB reads
    ``LIMIT 'a'`` as a number and ``LIMIT (SELECT 1)`` as a value, and words its refusals otherwise)."""
    for limit in tree.find_all(exp.Limit):
        value = limit.expression
        if value is None or isinstance(value, exp.Var):  # LIMIT ALL
            continue
        if value.find(exp.Column, exp.Subquery, exp.Query) is not None:
            raise MLSQLError(f"The limit expression must evaluate to a constant value, but got {value.sql('spark')}")
        family = kind(spark_type(value))
        if family == "null" or (isinstance(value, (exp.Cast, exp.TryCast)) and isinstance(value.this, exp.Null)):
            raise MLSQLError(f"The evaluated limit expression must not be null, but got {value.sql('spark')}")
        if family is not None and family != "integral":
            raise MLSQLError(f"The limit expression must be integer type, but got {spark_name(spark_type(value))}")
        if isinstance(value, exp.Neg) and isinstance(value.this, exp.Literal):
            raise MLSQLError(f"The limit expression must be equal to or greater than 0, but got {value.sql('spark')}")


def group_by_ordinals_without_star(tree: exp.Expression) -> None:
    """Spark refuses ``SELECT * ... GROUP BY 1`` (the ordinal of a star is not known); DuckDB groups by
    the star's first column."""
    for group in tree.find_all(exp.Group):
        select = group.parent
        ordinal = any(isinstance(e, exp.Literal) and e.is_int for e in group.expressions)
        if ordinal and isinstance(select, exp.Select) and any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))
                                                            for e in select.expressions):
            raise MLSQLError("Star (*) is not allowed in select list when GROUP BY ordinal position is used")


# -- LIKE ANY / ALL ---------------------------------------------------------------------------------

def like_any_or_all(tree: exp.Expression) -> None:
    """See the module's docstring."""
    for node in list(tree.find_all(exp.Like, exp.ILike)):
        quantified = node.expression
        if not isinstance(quantified, (exp.Any, exp.All)):
            continue
        patterns = quantified.this.expressions if isinstance(quantified.this, exp.Tuple) else [quantified.this.unnest()]
        negate = bool(node.args.get("negate"))
        tests: list[exp.Expression] = []
        for pattern in patterns:
            test = node.__class__(this=node.this.copy(), expression=pattern.copy())
            tests.append(exp.Not(this=test) if negate else test)
        joined = exp.or_(*tests) if isinstance(quantified, exp.Any) else exp.and_(*tests)
        node.replace(exp.Paren(this=joined))


TRANSFORMS: tuple[Callable[[exp.Expression], None], ...] = (
    ctes_as_spark_scopes_them, joins_as_spark_reads_them, range_table, pivot_values_are_literals, limits_as_spark_checks_them,
    group_by_ordinals_without_star, like_any_or_all,
)

FAMILY = Family("relations", transforms=TRANSFORMS)
"""First in the table: which table a name means is settled before anything is typed."""
