"""``set … where mode="compile"``: evaluated before any statement of the script runs.

Byzer evaluates ``type="sql"`` variables when the statement is reached (``mode="runtime"``, the
default) or, with ``mode="compile"``, while it pre-processes the script — before the first
statement runs, so such SQL cannot read tables the script itself creates. When the statement is
reached later, the variable keeps the value computed then.
"""

from __future__ import annotations

from ..lang import ast


def is_compile_time(statement: ast.Statement) -> bool:
    return isinstance(statement, ast.Set) and statement.options.get("mode") == "compile"


def evaluate_compile_time_sets(session, statements: list[ast.Statement]) -> list[ast.Statement]:
    """Run the script's compile-mode sets now, in order (errors point at them), and return the
    statements with each of those replaced by a plain set of the value it computed."""
    if not any(is_compile_time(s) for s in statements):
        return statements
    out: list[ast.Statement] = []
    for statement in statements:
        if is_compile_time(statement):
            for _ in session._run_one(statement):
                pass
            if statement.type != "conf":
                options = {k: v for k, v in statement.options.items() if k == "scope"}
                statement = ast.Set(key=statement.key, value=session.variables.get(statement.key, ""),
                                    options=options, line=statement.line, col=statement.col)
        out.append(statement)
    return out
