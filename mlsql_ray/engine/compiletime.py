"""``set … where mode="compile"``: evaluated before any statement of the script runs.

Byzer evaluates ``type="sql"`` variables when the statement is reached (``mode="runtime"``, the
default) or, with ``mode="compile"``, while it pre-processes the script — before the first
statement runs, so such SQL cannot read tables the script itself creates, but it does see the
text variables set above it. When the statement is reached later, the variable gets the value
computed then.
"""

from __future__ import annotations

from ..lang import ast

_TEXT_TYPES = ("text", "defaultParam")


def is_compile_time(statement: ast.Statement) -> bool:
    return isinstance(statement, ast.Set) and statement.options.get("mode") == "compile"


def evaluate_compile_time_sets(session, statements: list[ast.Statement]) -> list[ast.Statement]:
    """Run the script's compile-mode sets now, in order (errors point at them), over a scratch
    copy of the variables that the text sets above them fill in; return the statements with each
    compile-mode set replaced by a plain set of the value it computed."""
    last = max((i for i, s in enumerate(statements) if is_compile_time(s)), default=None)
    if last is None:
        return statements
    computed: dict[int, str] = {}
    variables = session.variables
    session.variables = dict(variables)  # the pre-pass leaves the real variables alone
    try:
        for index, statement in enumerate(statements[: last + 1]):
            if is_compile_time(statement) or (isinstance(statement, ast.Set) and statement.type in _TEXT_TYPES):
                for _ in session.run_one(statement):
                    pass
                if is_compile_time(statement) and statement.type != "conf":
                    computed[index] = session.variables.get(statement.key, "")
    finally:
        session.variables = variables
    return [ast.Set(key=s.key, value=computed[i], options={k: v for k, v in s.options.items() if k == "scope"},
                    line=s.line, col=s.col) if i in computed else s
            for i, s in enumerate(statements)]
