"""Byzer's condition language, shared by ``!if``/``!elif`` and ``!assert``.

A condition is Spark SQL with ``:name`` references, optionally preceded by assignments::

    select split(:a, ",")[0] as :name, split(:a, ",")[1] as :num;  :name == "jack" and :num == 3

sqlglot reads ``:name`` as a placeholder, so the text is parsed once as Spark SQL trees; the
placeholders are then bound — to a variable's value (as Byzer does, every variable is text) or to
a column — and the query goes through the engine's usual Spark → DuckDB translation. Nothing in a
variable runs as code: values only ever become SQL string literals.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from ..spark import functions as spark_functions
from ..errors import MLSQLError, first_line
from ..lang.ast import substitute
from ..spark.translate import parse_error_description


@dataclass(frozen=True)
class Condition:
    """``assignments``: ``select EXPR as :name, ...`` trees, run in order; ``test``: the final
    boolean expression."""

    assignments: tuple[exp.Select, ...]
    test: exp.Expression


def parse(text: str) -> Condition:
    """Parse a condition; a malformed one is the user's mistake (MLSQLError)."""
    try:
        trees = [t for t in spark_functions.parse(text) if t is not None]
    except ParseError as exc:
        reason = parse_error_description(exc.errors[0] if exc.errors else {}, exc)
        raise MLSQLError(f"cannot read the condition ''' {text.strip()} ''': {reason}") from exc
    except TokenError as exc:
        raise MLSQLError(f"cannot read the condition ''' {text.strip()} ''': {first_line(exc)}") from exc
    if not trees:
        raise MLSQLError("the condition is empty")
    *assignments, test = trees
    for assignment in assignments:
        names = [e.args.get("alias") for e in assignment.expressions] if isinstance(assignment, exp.Select) else []
        if not names or assignment.args.get("from_") or not all(isinstance(n, exp.Placeholder) for n in names):
            raise MLSQLError(f"only `select EXPR as :name, ...;` may come before the last part of a condition, "
                             f"not: {assignment.sql('spark')}")
    if isinstance(test, exp.Query):
        raise MLSQLError("the last part of a condition must be an expression, like :num == 3, not a query")
    return Condition(tuple(assignments), test)


def bind(tree: exp.Expression, value: Callable[[str], exp.Expression]) -> exp.Expression:
    """A copy of ``tree`` with each ``:name`` replaced by ``value(name)``, and each ``as :name``
    alias by the plain name."""

    def replace(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Alias) and isinstance(node.args.get("alias"), exp.Placeholder):
            node.set("alias", exp.to_identifier(node.args["alias"].name))  # in place: its value is bound next
        if isinstance(node, exp.Placeholder):
            if not node.name:
                raise MLSQLError("a bare '?' in a condition: refer to a variable or column as :name")
            return value(node.name)
        return node

    return tree.copy().transform(replace)


def as_text(value) -> str | None:
    """A SQL value as Byzer writes it into a variable (Spark's ``toString``)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat(sep=" ") if isinstance(value, datetime.datetime) else value.isoformat()
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    return str(value)


def evaluate(session, text: str, variables: Mapping[str, str | None], line: int, col: int) -> tuple[bool, dict[str, str | None]]:
    """Evaluate a condition over ``variables`` (``:name`` → the variable's text). Returns whether
    it holds and the variables its assignments declared."""
    condition = parse(text)
    declared: dict[str, str | None] = {}
    texts = {k: v for k, v in variables.items() if v is not None}

    def literal(name: str) -> exp.Expression:
        if name in declared:
            found = declared[name]
        elif name in variables:
            found = variables[name]
            if found is not None:
                found = substitute(found, texts, strict=False)  # as ${name} would read
        else:
            raise MLSQLError(f"undefined variable :{name} in the condition: set it first with `set {name} = \"...\";`")
        return exp.null() if found is None else exp.Literal.string(found)

    for assignment in condition.assignments:
        query = bind(assignment, literal)
        relation = session.query(query.sql(dialect="spark"), line, col)
        (row,) = relation.fetchall()
        declared.update({name: as_text(v) for name, v in zip(relation.columns, row)})
    query = exp.select(exp.alias_(bind(condition.test, literal), "holds"))
    ((holds,),) = session.query(query.sql(dialect="spark"), line, col).fetchall()
    if holds is not None and not isinstance(holds, bool):
        raise MLSQLError(f"the condition must be true or false, but it gives {holds!r}: {condition.test.sql('spark')}")
    return bool(holds), declared


def failing_rows(session, table: str, text: str, line: int, col: int) -> int:
    """How many rows of ``table`` the condition does not hold for (``:name`` → the column; a
    NULL result fails, as in Byzer, where it stops the script)."""
    condition = parse(text)
    if condition.assignments:
        raise MLSQLError("a table assertion takes one expression over the table's columns (:col), without `select ... as :x;` parts")
    test = bind(condition.test, lambda name: exp.column(name, quoted=True))
    query = (exp.select(exp.Count(this=exp.Star())).from_(exp.table_(table, quoted=True))
             .where(exp.not_(exp.Coalesce(this=exp.paren(test), expressions=[exp.false()]))))
    ((count,),) = session.query(query.sql(dialect="spark"), line, col).fetchall()
    return count
