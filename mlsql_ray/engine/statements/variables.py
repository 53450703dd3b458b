"""``set KEY = VALUE [where type=... and scope=...];``: a variable, or a setting (``type="conf"``)."""

from __future__ import annotations

from ...lang import ast
from ..result import Result
from ..shell import run_shell
from ..sql import translate


def run(session, s: ast.Set) -> Result:
    s = s.substituted(session.variables)
    kind = s.type
    if kind == "defaultParam" and s.key in session.variables:
        return Result(s, f"{s.key} keeps its value")
    if kind == "sql":
        translate(s.value, s.line, s.col, query=True)  # a query, as in Byzer (checked at parse time unless ${} hid it)
        first = session.query(s.value, s.line, s.col).limit(1).fetchall()
        value = "" if not first or first[0][0] is None else str(first[0][0])
    elif kind == "shell":
        value = run_shell(s.key, s.value, session.variables, s.options.get("timeout"))
    else:
        value = s.value
    if kind == "conf":
        session.set_conf(s.key, value)
    else:
        session.set_variable(s.key, value, s.scope)
    return Result(s, f"set {s.key}")
