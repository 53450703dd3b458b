"""User macros: ``set NAME='''…{}…''';`` then ``!NAME arg1 arg2;`` (Byzer's ``grammar/macro.md``).

The body is only known when the call runs, so it is expanded and parsed then. Arguments fill
``{}`` (in order), ``{N}`` (by index) and ``{:all}`` (all of them as a JSON list); with ``_`` as the
first argument, ``-name value`` pairs fill ``${name}``. As in Byzer, a missing argument becomes
empty text, the last statement of a body needs no ``;``, and a body may not call ``!`` commands
(so no macro can call itself). Every statement of the expansion reports the ``!NAME`` position.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator

from .. import lang
from ..errors import MLSQLError
from ..lang import ast
from .result import Result

_POSITIONAL = re.compile(r"(?<!\$)\{\s*(\d*)\s*\}")
_NAMED = re.compile(r"\$\{\s*([A-Za-z_][\w.]*)\s*\}")


def is_macro(session, name: str) -> bool:
    return name in session.variables


def expand(body: str, args: list[str]) -> str:
    """The body with the call's arguments filled in (text only; nothing runs here)."""
    if "{:all}" in body:
        return body.replace("{:all}", json.dumps(args, ensure_ascii=False))
    named: dict[str, str] = {}
    if args and args[0] == "_":
        rest = args[1:]
        for i in range(0, len(rest), 2):
            if not rest[i].startswith("-") or len(rest[i]) < 2:
                raise MLSQLError(f"expected -name value pairs after _, found {rest[i]!r}")
            named[rest[i][1:]] = rest[i + 1] if i + 1 < len(rest) else ""
    counter = iter(range(len(args) + body.count("{}")))

    def positional(match: re.Match) -> str:
        index = int(match.group(1)) if match.group(1) else next(counter)
        return args[index] if index < len(args) else ""

    text = _POSITIONAL.sub(positional, body)
    return _NAMED.sub(lambda m: named.get(m.group(1), m.group(0)), text) if named else text


def run_macro(session, s: ast.Command) -> Iterator[Result]:
    body = session.variables[s.name]
    text = expand(body, list(s.args)).rstrip()
    if not text.endswith(";"):
        text += ";"
    try:
        statements = lang.parse(text)
    except MLSQLError as exc:
        raise MLSQLError(f"in macro !{s.name} (line {exc.line} of its body): {exc.message}") from exc
    for statement in statements:
        if isinstance(statement, (ast.Command, ast.If)):
            raise MLSQLError(f"macro !{s.name} calls a ! command (line {statement.line} of its body): "
                             f"a macro body cannot call commands or macros")
    for statement in statements:
        yield from session.run_one(dataclasses.replace(statement, line=s.line, col=s.col))
