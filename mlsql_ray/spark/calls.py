"""Small builders of sqlglot trees shared by the Spark function families (``regexes``,
``strings``, ``maths``, ``formats``): calls of DuckDB functions and macros,
casts, and the literal values a rewrite can decide on while translating."""

from __future__ import annotations

import re

from sqlglot import exp

from ..errors import MLSQLError


def call(name: str, *args: exp.Expression) -> exp.Anonymous:
    """``name(args...)``, written as is (a DuckDB function or one of our macros)."""
    return exp.Anonymous(this=name, expressions=list(args))


def cast(node: exp.Expression, to: str) -> exp.Cast:
    return exp.Cast(this=node, to=exp.DataType.build(to, dialect="duckdb"))


def string(value: str) -> exp.Literal:
    return exp.Literal.string(value)


def number(value: int | float) -> exp.Expression:
    return exp.Literal.number(value) if value >= 0 else exp.Neg(this=exp.Literal.number(-value))


def text_of(node: exp.Expression | None) -> str | None:
    """The value of a string literal (``'...'``, ``r'...'``), else None: the argument is only known
    when the query runs."""
    if isinstance(node, exp.RawString):
        return node.this
    return node.this if isinstance(node, exp.Literal) and node.is_string else None


def integer_of(node: exp.Expression | None) -> int | None:
    """The value of an integer literal (``3``, ``-3``), else None."""
    negative = isinstance(node, exp.Neg)
    inner = node.this if negative else node
    if isinstance(inner, exp.Paren):
        return integer_of(inner.this) if not negative else _negate(integer_of(inner.this))
    if isinstance(inner, exp.Literal) and not inner.is_string and inner.this.lstrip("-").isdigit():
        return -int(inner.this) if negative else int(inner.this)
    return None


def _negate(value: int | None) -> int | None:
    return None if value is None else -value


def is_null(node: exp.Expression | None) -> bool:
    return isinstance(node, exp.Null)


def case(*whens: tuple[exp.Expression, exp.Expression], default: exp.Expression | None = None) -> exp.Case:
    return exp.Case(ifs=[exp.If(this=c, true=v) for c, v in whens], default=default)


def fail(function: str, message: str) -> MLSQLError:
    """The error for a call that cannot run as Spark runs it: it names the function (the statement's
    line is added where the statement runs)."""
    return MLSQLError(f"{function}: {message}")


_LAMBDA = re.compile(r"\blambda\s+([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*:")


def hygienic(macros: dict[str, str]) -> dict[str, str]:
    """The macros with each lambda parameter ``p`` of macro ``m`` renamed ``__m_p`` within its
    lambda. DuckDB copies a macro's arguments into its body, so an argument that names a column
    ``i`` (or a lambda parameter of the calling macro) inside ``lambda i: ...`` would read the
    lambda's ``i`` instead."""
    return {name: _hygienic(body, f"__{name}_") for name, body in macros.items()}


def _hygienic(sql: str, prefix: str) -> str:
    match = _LAMBDA.search(sql)
    while match is not None:
        params = [p.strip() for p in match.group(1).split(",")]
        end = _expression_end(sql, match.end())
        body = sql[match.end():end]
        for param in params:
            body = re.sub(rf"(?<![\w.'])({re.escape(param)})(?![\w'])", prefix + r"\1", body)
        renamed = "lambda " + ", ".join(prefix + p for p in params) + ":"
        sql = sql[:match.start()] + renamed + body + sql[end:]
        match = _LAMBDA.search(sql, match.start() + len(renamed))
    return sql


def _expression_end(sql: str, start: int) -> int:
    """Where the lambda body starting at ``start`` ends: the first ',' or ')' outside parentheses,
    brackets, braces and string literals."""
    depth, i = 0, start
    while i < len(sql):
        c = sql[i]
        if c == "'":
            i = sql.index("'", i + 1)
            while sql.startswith("'", i + 1):  # '' inside a literal
                i = sql.index("'", i + 2)
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                return i
            depth -= 1
        elif c == "," and depth == 0:
            return i
        i += 1
    return i
