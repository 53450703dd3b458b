"""Nested Spark macros kept small enough for DuckDB to bind.

DuckDB expands a macro by copying each argument wherever the macro's body names its parameter,
and the macros that give Spark's answers name theirs often (``spark_real_to_string`` reads its
value six times, ``spark_round`` its own nine times). Nested, the copies multiply: Spark's
``cast(round(cast(c as double)) as string)`` expanded to tens of thousands of nodes and took DuckDB
5 s to bind, for one column. Where a call's expansion would be large, its arguments are computed
once and handed to the macro through a one-element list (DuckDB has no ``let``)::

    M(a, b)  ->  list_transform([{'v0': a, 'v1': b}], lambda __once1: M(__once1.v0, __once1.v1))[1]

which costs a list per row (tens of nanoseconds), so only calls over the limit pay it. The sizes
are estimates from the macros' own text: each macro's size when its arguments are single nodes,
and how many copies of each argument its expansion makes (through the macros it calls).
"""

from __future__ import annotations

import itertools
import re
from functools import cache
from typing import NamedTuple

import sqlglot
from sqlglot import exp

from . import families

LIMIT = 2_000
"""The expanded size (nodes) over which a call's arguments are computed once."""

_DEFINITIONS = families.MACROS

_OVERLOAD = re.compile(r"\(([^()]*)\)\s+AS\s+", re.IGNORECASE)


class Shape(NamedTuple):
    size: int  # nodes of the expansion when every argument is one node
    copies: tuple[int, ...]  # how many times each argument is copied into the expansion


def _overloads(definition: str) -> list[tuple[list[str], str]]:
    """``(x INT) AS body1, (x) AS body2`` as [(params, body)]: a body ends where the next
    top-level ``(params) AS`` begins."""
    starts = [m for m in _OVERLOAD.finditer(definition) if _depth(definition, m.start()) == 0]
    result = []
    for m, following in zip(starts, [*starts[1:], None]):
        body = definition[m.end():following.start() if following else len(definition)].strip().rstrip(",")
        params = [p.split()[0] for p in m.group(1).split(",") if p.strip()]
        result.append((params, body))
    return result


def _depth(text: str, at: int) -> int:
    depth, quoted = 0, False
    for ch in text[:at]:
        if ch == "'":
            quoted = not quoted
        elif not quoted:
            depth += (ch == "(") - (ch == ")")
    return depth


@cache
def shape(name: str) -> Shape | None:
    """The shape of macro ``name`` (the largest of its overloads); None if it is not ours."""
    definition = _DEFINITIONS.get(name)
    if definition is None:
        return None
    best = None
    for params, body in _overloads(definition):
        try:
            tree = sqlglot.parse_one(body, dialect="duckdb")
        except sqlglot.errors.SqlglotError:
            continue  # a body sqlglot cannot read: no estimate for this overload
        size, copies = _measure(tree, params)
        if best is None or size > best.size:
            best = Shape(size, tuple(copies.get(p, 0) for p in params))
    return best


def _measure(node: exp.Expression, params: list[str]) -> tuple[int, dict[str, int]]:
    """The expansion's size of ``node`` and how many copies of each of ``params`` it holds."""
    if isinstance(node, exp.Column):
        named = node.table or node.name  # p.field reads parameter p too
        if named in params:
            return 1, {named: 1}
    inner = shape(node.name.lower()) if isinstance(node, exp.Anonymous) else None
    if inner is not None:
        size, copies = inner.size, {}
        for argument, times in itertools.zip_longest(node.expressions, inner.copies, fillvalue=1):
            if not isinstance(argument, exp.Expression):
                continue
            s, c = _measure(argument, params)
            size += times * s
            for p, n in c.items():
                copies[p] = copies.get(p, 0) + times * n
        return size, copies
    size, copies = 1, {}
    for child in node.iter_expressions():
        s, c = _measure(child, params)
        size += s
        for p, n in c.items():
            copies[p] = copies.get(p, 0) + n
    return size, copies


def expanded_size(node: exp.Expression, sizes: dict[int, int] | None = None) -> int:
    """About how many nodes DuckDB binds for ``node`` once our macros in it are expanded
    (``sizes`` caches the sizes of nodes by id)."""
    sizes = {} if sizes is None else sizes
    known = sizes.get(id(node))
    if known is not None:
        return known
    s = shape(node.name.lower()) if isinstance(node, exp.Anonymous) else None
    if s is not None:
        total = s.size + sum(times * expanded_size(a, sizes)
                             for a, times in itertools.zip_longest(node.expressions, s.copies, fillvalue=1)
                             if isinstance(a, exp.Expression))
    else:
        total = 1 + sum(expanded_size(child, sizes) for child in node.iter_expressions())
    sizes[id(node)] = total
    return total


def compute_arguments_once(tree: exp.Expression) -> None:
    """Rewrite, innermost first, each call of our macros whose expansion would pass ``LIMIT`` so
    that its arguments are computed once (see the module's docstring)."""
    names = (f"__once{i}" for i in itertools.count(1))
    sizes: dict[int, int] = {}
    for node in list(tree.find_all(exp.Anonymous, bfs=False))[::-1]:  # children before their parents
        s = shape(node.name.lower())
        if s is None or expanded_size(node, sizes) <= LIMIT:
            continue
        once = next(names)
        fields, arguments = [], []
        for i, argument in enumerate(node.expressions):
            if not isinstance(argument, exp.Expression) or isinstance(argument, (exp.Literal, exp.Column, exp.Null, exp.Boolean)):
                arguments.append(argument)
                continue
            fields.append(exp.PropertyEQ(this=exp.to_identifier(f"v{i}"), expression=argument))
            arguments.append(exp.column(f"v{i}", table=once))
        call = exp.Anonymous(this=node.this, expressions=arguments)
        computed = exp.Anonymous(this="list_transform", expressions=[
            exp.Array(expressions=[exp.Struct(expressions=fields)]),
            exp.Lambda(this=call, expressions=[exp.to_identifier(once)]),
        ])
        replacement = exp.Bracket(this=computed, expressions=[exp.Literal.number(1)], offset=1)
        node.replace(replacement)
        sizes[id(replacement)] = 1 + sum(expanded_size(f.expression, sizes) for f in fields) + s.size + len(arguments)
