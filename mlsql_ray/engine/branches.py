"""Running ``!if/!elif/!else/!fi`` (``ast.If``): conditions at run time, one branch taken.

Variables a condition declares (``select ... as :name;``) live for the whole ``!if … !fi``: later
``!elif`` conditions, nested ``!if``s and the taken branch's statements (as ``${name}``) see them;
after ``!fi`` the names get their earlier values back.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import MLSQLError
from ..lang import ast
from ..lang.ast import substitute
from . import expressions
from .result import Result


def run_if(session, s: ast.If) -> Iterator[Result]:
    declared: dict[str, str | None] = {}
    for branch in s.branches:
        if branch.condition is not None:
            try:
                text = substitute(branch.condition, {**session.variables, **_texts(declared)})
                holds, names = expressions.evaluate(session, text, {**session.variables, **declared}, branch.line, branch.col)
            except MLSQLError as exc:
                raise exc.at(branch.line, branch.col)  # this !elif's position, not the opening !if's
            declared.update(names)
            if not holds:
                continue
        with _scoped(session.variables, declared):
            for statement in branch.statements:
                yield from session.run_one(statement)
        return


def _texts(declared: dict[str, str | None]) -> dict[str, str]:
    """The declared variables ``${name}`` can show (a NULL has no text)."""
    return {k: v for k, v in declared.items() if v is not None}


@contextmanager
def _scoped(variables: dict, declared: dict[str, str | None]):
    """Make ``declared`` visible as variables for the branch, then restore what they hid (unless
    the branch itself set the name again)."""
    shown = _texts(declared)
    hidden = {k: variables[k] for k in shown if k in variables}
    variables.update(shown)
    try:
        yield
    finally:
        for key, value in shown.items():
            if variables.get(key) == value:
                if key in hidden:
                    variables[key] = hidden[key]
                else:
                    variables.pop(key, None)
