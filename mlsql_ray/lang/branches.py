"""The flat ``!if/!elif/!else/!fi`` commands → nested :class:`ast.If` statements.

Byzer runs its branch commands one by one and skips statements while a branch is off; we build
the structure once, after parsing, so that an ``!if`` without ``!fi`` (or an ``!fi`` without
``!if``) is a syntax error with a position before anything runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import MLSQLSyntaxError
from . import ast

BRANCH_COMMANDS = ("if", "elif", "else", "fi", "then")


@dataclass
class _Arm:
    command: ast.Command
    condition: str | None
    statements: list[ast.Statement] = field(default_factory=list)


@dataclass
class _OpenIf:
    start: ast.Command
    arms: list[_Arm] = field(default_factory=list)

    def to_statement(self) -> ast.If:
        branches = tuple(ast.Branch(a.condition, tuple(a.statements), line=a.command.line, col=a.command.col)
                         for a in self.arms)
        return ast.If(branches=branches, line=self.start.line, col=self.start.col)


def _branch_command(statement: ast.Statement) -> str | None:
    if isinstance(statement, ast.Command) and statement.name.lower() in BRANCH_COMMANDS:
        return statement.name.lower()
    return None


def nest(statements: list[ast.Statement], text: str, first_line: int = 1) -> list[ast.Statement]:
    """Fold the branch commands of ``statements`` (parsed from ``text``) into ``ast.If`` nodes."""
    lines = text.split("\n")

    def error(at: ast.Statement, message: str, reason: str = MLSQLSyntaxError.INVALID) -> MLSQLSyntaxError:
        index = at.line - first_line
        source = lines[index].rstrip("\r") if 0 <= index < len(lines) else ""
        return MLSQLSyntaxError(message, at.line, at.col, source, reason)

    top: list[ast.Statement] = []
    stack: list[_OpenIf] = []
    for statement in statements:
        name = _branch_command(statement)
        if name is None:
            (stack[-1].arms[-1].statements if stack else top).append(statement)
            continue
        if name != "if" and not stack:
            raise error(statement, f"!{name} without an open !if")
        current = stack[-1] if stack else None
        if name in ("if", "elif"):
            if not statement.args:
                raise error(statement, f"!{name} needs a condition, like !{name} ''' :x == \"1\" ''';")
            condition = " ".join(statement.args)
            if name == "if":
                stack.append(_OpenIf(statement, [_Arm(statement, condition)]))
            elif current.arms[-1].condition is None:
                raise error(statement, "!elif after !else: the !else branch must come last")
            else:
                current.arms.append(_Arm(statement, condition))
        elif name == "else":
            if current.arms[-1].condition is None:
                raise error(statement, "a second !else in the same !if")
            if statement.args:
                raise error(statement, "!else takes no condition (for one, use !elif '''...''';)")
            current.arms.append(_Arm(statement, None))
        elif name == "then":  # Byzer's optional `!then;` right after !if/!elif
            if current.arms[-1].statements or current.arms[-1].condition is None:
                raise error(statement, "!then may only come right after !if or !elif")
        else:  # fi
            closed = stack.pop()
            (stack[-1].arms[-1].statements if stack else top).append(closed.to_statement())
    if stack:
        raise error(stack[-1].start, "this !if has no matching !fi", MLSQLSyntaxError.UNFINISHED)
    return top
