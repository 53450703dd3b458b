"""The typed statements a script becomes. Plain frozen dataclasses: easy to compare in tests,
easy to print, no behaviour beyond ``${}`` substitution.

Every statement records where it starts (``line``, ``col``); they are left out of equality so
tests can compare trees without spelling positions.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from typing import ClassVar, Mapping

from ..errors import MLSQLError
from . import datevars

Options = Mapping[str, str]

#: as users write them (the parser reads them in any case)
SAVE_MODES = ("overwrite", "append", "errorIfExists", "ignore")
_VARIABLE = re.compile(r"\$\{([^}]*)\}")


MAX_SUBSTITUTION_DEPTH = 32


def substitute(text: str, variables: Mapping[str, str], strict: bool = True, _depth: int = 0) -> str:
    """Replace every ``${name}`` by its value, and ``${date...}`` by the built-in date (see
    ``datevars``). An unknown name is an error, not silence — unless ``strict`` is false, when it
    stays as written (a ``set`` value may name a variable set later, or a macro's parameter).
    A value that still holds ``${other}`` is resolved in turn, as Byzer re-merges its variables."""
    if _depth > MAX_SUBSTITUTION_DEPTH:
        raise MLSQLError(f"variables refer to each other more than {MAX_SUBSTITUTION_DEPTH} levels deep (a loop?): {text[:80]}")

    def value(match: re.Match) -> str:
        name = match.group(1).strip()
        if name in variables:
            return substitute(variables[name], variables, strict, _depth + 1)
        if datevars.is_date_expression(name):
            return datevars.evaluate(name)
        call = _TEMPLATE_GET.fullmatch(name)
        if call:
            return _template_get(call.group(1), variables, strict, _depth)
        if not strict:
            return match.group(0)
        raise MLSQLError(f"undefined variable ${{{name}}}: set it first with `set {name} = \"...\";` or --set {name}=...")

    return _VARIABLE.sub(value, text) if "${" in text else text


def variable_text(value) -> str:
    """A value from outside MLSQL (a papermill parameter, a Python variable) as the text a
    variable holds: strings as they are, numbers, booleans, lists and maps as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def referenced_variables(text: str) -> set[str]:
    """The names ``text`` refers to as ``${name}``."""
    return {match.group(1).strip() for match in _VARIABLE.finditer(text)}


_TEMPLATE_GET = re.compile(r"\s*template\.get\((.*)\)\s*", re.DOTALL)
_QUOTED_ARGUMENT = re.compile(r"""\s*(?:"([^"]*)"|'([^']*)')\s*(?:,|$)""")


def _template_get(arguments: str, variables: Mapping[str, str], strict: bool, depth: int) -> str:
    """``${template.get("tpl", "a", "b")}`` (byzer-doc grammar/select.md): the text of variable
    ``tpl`` with ``{0}``, ``{1}``... replaced by the other arguments."""
    values, pos = [], 0
    while pos < len(arguments):
        match = _QUOTED_ARGUMENT.match(arguments, pos)
        if match is None or match.end() == pos:
            raise MLSQLError(f"${{template.get({arguments})}}: the arguments should be quoted strings separated by commas")
        values.append(match.group(1) if match.group(1) is not None else match.group(2))
        pos = match.end()
    if not values or values[0] not in variables:
        raise MLSQLError(f"${{template.get({arguments})}} needs first the name of a variable holding the template "
                         f"(set NAME = '''...{{0}}...''';)")
    text = substitute(variables[values[0]], variables, strict, depth + 1)
    arguments_by_position = values[1:]

    def argument(match: re.Match) -> str:
        index = int(match.group(1))
        return arguments_by_position[index] if index < len(arguments_by_position) else match.group(0)

    return re.sub(r"\{(\d+)\}", argument, text)


@dataclass(frozen=True)
class Statement:
    line: int = field(default=0, compare=False, kw_only=True)
    col: int = field(default=0, compare=False, kw_only=True)

    keyword: ClassVar[str] = ""
    #: fields, and option keys, that ``${}`` substitution leaves alone (they hold code)
    raw_fields: ClassVar[tuple[str, ...]] = ()
    raw_options: ClassVar[tuple[str, ...]] = ("code",)

    def substituted(self, variables: Mapping[str, str]) -> "Statement":
        """A copy with ``${}`` resolved in names, paths, option values and SQL."""
        changes = {}
        for f in dataclasses.fields(self):
            if f.name in ("line", "col") or f.name in self.raw_fields:
                continue
            value = getattr(self, f.name)
            if isinstance(value, str):
                value = substitute(value, variables)
            elif isinstance(value, tuple):
                value = tuple(substitute(v, variables) for v in value)
            elif isinstance(value, Mapping):
                value = {k: v if k in self.raw_options else substitute(v, variables) for k, v in value.items()}
            changes[f.name] = value
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class Load(Statement):
    """``load FORMAT.`PATH` [where k="v" and ...] as NAME;``"""

    keyword: ClassVar[str] = "load"
    format: str
    path: str
    table: str
    options: Options = field(default_factory=dict)


@dataclass(frozen=True)
class Save(Statement):
    """``save [MODE] NAME as FORMAT.`PATH` [where ...] [partitionBy c1, c2];``"""

    keyword: ClassVar[str] = "save"
    table: str
    format: str
    path: str
    mode: str = "errorifexists"  # one of SAVE_MODES, lower-cased
    options: Options = field(default_factory=dict)
    partition_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class Select(Statement):
    """``select ... as NAME;`` — ``sql`` is the Spark SQL text without the trailing ``as NAME``."""

    keyword: ClassVar[str] = "select"
    sql: str
    table: str


@dataclass(frozen=True)
class Set(Statement):
    """``set KEY = VALUE [where type="text|sql|shell|conf|defaultParam" and scope="..."];``"""

    keyword: ClassVar[str] = "set"
    key: str
    value: str
    options: Options = field(default_factory=dict)

    def substituted(self, variables: Mapping[str, str]) -> "Set":
        """As for any statement, except that in a text value a ``${name}`` not (yet) set stays as
        written, as in Byzer: a macro body's ``${param}`` is filled in when the macro is called."""
        if self.type not in ("text", "defaultParam"):
            return super().substituted(variables)
        done = super(Set, dataclasses.replace(self, value="")).substituted(variables)
        return dataclasses.replace(done, value=substitute(self.value, variables, strict=False))

    @property
    def type(self) -> str:
        return self.options.get("type", "text")

    @property
    def raw_fields(self) -> tuple[str, ...]:
        """A shell command's text is never substituted: its variables reach it through its
        environment (see ``engine/shell.py``), so a value cannot become shell syntax."""
        return ("value",) if self.type == "shell" else ()

    @property
    def scope(self) -> str:
        """``request`` (Byzer's default: the variable lasts for this script run or notebook cell)
        or ``session`` (it lasts for the session, across cells)."""
        return self.options.get("scope", "request")


@dataclass(frozen=True)
class Include(Statement):
    """``include local.`path/to/other.mlsql`;``"""

    keyword: ClassVar[str] = "include"
    format: str
    path: str
    options: Options = field(default_factory=dict)


@dataclass(frozen=True)
class Register(Statement):
    """``register FORMAT.`TABLE` as FUNCTION [where ...];``"""

    keyword: ClassVar[str] = "register"
    format: str
    path: str
    function: str
    options: Options = field(default_factory=dict)


@dataclass(frozen=True)
class Unregister(Statement):
    """``unregister FORMAT.`PATH` [where ...];``"""

    keyword: ClassVar[str] = "unregister"
    format: str
    path: str
    options: Options = field(default_factory=dict)


@dataclass(frozen=True)
class Train(Statement):
    """``train|run|predict NAME as FORMAT.`PATH` [where ...] [as OUT];`` — ``verb`` tells which."""

    keyword: ClassVar[str] = "train"
    verb: str  # "train", "run" or "predict"
    table: str
    format: str
    path: str
    options: Options = field(default_factory=dict)
    output: str | None = None
    code_line: int = field(default=0, compare=False)  # the line where a code= option's text starts


@dataclass(frozen=True)
class Connect(Statement):
    """``connect FORMAT [where ...] [as DB];``"""

    keyword: ClassVar[str] = "connect"
    format: str
    options: Options = field(default_factory=dict)
    alias: str | None = None


@dataclass(frozen=True)
class RawSQL(Statement):
    """``insert|create|drop|refresh ...;`` kept as text (byzer passes these to Spark)."""

    keyword: ClassVar[str] = "sql"
    verb: str
    sql: str


@dataclass(frozen=True)
class Command(Statement):
    """``!name arg ...;`` — e.g. ``!show tables;``, ``!python conf "k=v";``, ``!delta history db.t;``"""

    keyword: ClassVar[str] = "!"
    name: str
    args: tuple[str, ...] = ()


@dataclass(frozen=True)
class PythonCell(Statement):
    """A ``--%python`` cell. ``code`` starts at the first annotation line (``line``) and keeps the
    annotation lines as ``#`` comments, so line k of a traceback is line ``line + k - 1`` of the
    script or notebook cell."""

    keyword: ClassVar[str] = "python"
    code: str
    annotations: Options = field(default_factory=dict)

    raw_fields: ClassVar[tuple[str, ...]] = ("code",)


@dataclass(frozen=True)
class Branch:
    """One arm of an ``!if``: its condition (None for ``!else``) and the statements it guards, at
    the position of its ``!if``/``!elif``/``!else``."""

    condition: str | None
    statements: tuple[Statement, ...]
    line: int = field(default=0, compare=False, kw_only=True)
    col: int = field(default=0, compare=False, kw_only=True)


@dataclass(frozen=True)
class If(Statement):
    """``!if '''COND''';`` … [``!elif '''COND''';`` …]* [``!else;`` …] ``!fi;``

    Built by the parser from the flat ``!`` commands, so an unbalanced ``!if`` is a syntax error
    before anything runs. The engine evaluates the conditions in order and runs only the first
    branch whose condition holds; the others are parsed but never run (nor substituted)."""

    keyword: ClassVar[str] = "!if"
    branches: tuple[Branch, ...]

    raw_fields: ClassVar[tuple[str, ...]] = ("branches",)
