"""Velocity templates in SQL (byzer-doc grammar/select.md, grammar/template.md): ``#set``, ``#foreach``, ``#if``.

Byzer renders every statement with Apache Velocity before running it, so a ``select`` can write::

    select
    #set($columns = ["features", "label"])
    #foreach($column in $columns)
        SUM(case when `$column` is null or `$column` = '' then 1 else 0 end) as $column,
    #end
    1 as a from mockData as output;

This is a small evaluator of the subset Byzer's documentation uses, written by hand because no
maintained Python engine reads Velocity's syntax (jinja2's differs), and because Velocity proper can
call any Java method of any object in its context. Here nothing in a template calls Python: values
are strings, numbers, booleans, lists and ranges, and only the methods of ``METHODS`` exist.

Supported: ``#set($x = EXPR)``; ``#foreach($x in EXPR) … #end`` with ``$foreach.index``,
``$foreach.count``, ``$foreach.hasNext``, ``$foreach.first``, ``$foreach.last`` and ``$velocityCount``;
``#if(EXPR) … #elseif(EXPR) … #else … #end``; ``#{else}``/``#{end}``; references ``$x``, ``$!x``,
``$!{x}`` and method calls ``$x.size()``. EXPR: literals (``"…"`` with references in it, ``'…'``,
numbers, ``true``/``false``/``null``, ``[a, b]``, ``[1..3]``), references, ``+ - * / %``,
``== != < <= > >=`` (and ``eq ne lt le gt ge``), ``&& || !`` (and ``and or not``), parentheses.
As in Velocity, a reference to nothing stays as written (``$x``, so ``'^a$'`` in SQL is safe) and
``$!x`` renders empty; a line holding only a directive disappears whole (Velocity 2's
"lines" space gobbling). ``${x}`` is not a template reference here: ``${}`` is MLSQL's variable
syntax, replaced before the template is rendered.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import MLSQLError

DIRECTIVE = re.compile(r"#(?:\{(?P<brace>else|end)\}|(?P<name>set|foreach|if|elseif)\s*\(|(?P<bare>else|end)\b)")
HAS_DIRECTIVE = re.compile(r"#(?:\{(?:else|end)\}|(?:set|foreach|if)\s*\()")
REFERENCE = re.compile(r"\$(?P<quiet>!)?(?P<brace>\{)?(?P<path>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*(?:\([^()]*\))?)*)(?(brace)\})")
MAX_ITERATIONS = 100_000


def has_template(text: str) -> bool:
    return bool(HAS_DIRECTIVE.search(text))


def render(text: str, context: dict | None = None) -> str:
    """The text with its directives run and its references replaced."""
    nodes, rest = _parse(_tokens(text), 0, ())
    if rest is not None:
        raise MLSQLError(f"template: #{rest} without an opening #if or #foreach")
    out: list[str] = []
    _run(nodes, dict(context or {}), out)
    return "".join(out)


# -- tokens and tree ---------------------------------------------------------------------------------------

def _tokens(text: str) -> list[tuple[str, str]]:
    """("text", s) and (directive, argument text) pairs; lines that hold only a directive vanish."""
    tokens: list[tuple[str, str]] = []
    pos = 0
    while True:
        match = DIRECTIVE.search(text, pos)
        if match is None:
            tokens.append(("text", text[pos:]))
            break
        tokens.append(("text", text[pos:match.start()]))
        name = match.group("name")
        if name:
            end = _closing_parenthesis(text, match.end())
            tokens.append((name, text[match.end():end]))
            pos = end + 1
        else:
            tokens.append((match.group("brace") or match.group("bare"), ""))
            pos = match.end()
    return _gobble(tokens)


def _closing_parenthesis(text: str, start: int) -> int:
    depth, i, quote = 1, start, None
    while i < len(text):
        char = text[i]
        if quote:
            if char == quote:
                quote = None
        elif char in "\"'":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise MLSQLError(f"template: unclosed ( in #{text[max(0, start - 12):start + 30]!r}")


def _gobble(tokens: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Drop the indentation and line end around a directive alone on its line."""
    gobbled_line = True  # the text before the first token starts a line
    for i in range(1, len(tokens) - 1, 2):  # tokens alternate: text, directive, text, ...
        before, after = tokens[i - 1][1], tokens[i + 1][1]
        line = before.rsplit("\n", 1)
        starts_line = not line[-1].strip() and (len(line) == 2 or gobbled_line)
        tail = re.match(r"[ \t]*(\r?\n|$)", after)
        gobbled_line = bool(starts_line and tail and (tail.group(1) or i + 2 < len(tokens)))
        if gobbled_line:
            tokens[i - 1] = ("text", before[:len(before) - len(line[-1])])
            tokens[i + 1] = ("text", after[tail.end():])
    return tokens


@dataclass
class _Block:
    kind: str  # text, set, foreach, if
    argument: str = ""
    body: list = field(default_factory=list)
    branches: list = field(default_factory=list)  # if: [(condition or None, nodes)]


def _parse(tokens, i: int, stops: tuple[str, ...]):
    """Nodes up to a token in ``stops``; returns (nodes, stop kind or None) and leaves ``_parse.pos``."""
    nodes: list[_Block] = []
    while i < len(tokens):
        kind, argument = tokens[i]
        i += 1
        if kind in stops:
            _parse.pos = i
            return nodes, kind
        if kind in ("else", "elseif", "end"):
            _parse.pos = i
            return nodes, kind
        if kind in ("text", "set"):
            nodes.append(_Block(kind, argument))
        elif kind == "foreach":
            body, stop = _parse(tokens, i, ("end",))
            if stop != "end":
                raise MLSQLError(f"template: #foreach({argument}) has no #end")
            i = _parse.pos
            nodes.append(_Block("foreach", argument, body))
        elif kind == "if":
            block = _Block("if")
            condition = argument
            while True:
                body, stop = _parse(tokens, i, ("elseif", "else", "end"))
                i = _parse.pos
                block.branches.append((condition, body))
                if stop == "end":
                    break
                if stop is None:
                    raise MLSQLError(f"template: #if({argument}) has no #end")
                if stop == "elseif":
                    condition = tokens[i - 1][1]
                else:
                    else_body, stop = _parse(tokens, i, ("end",))
                    i = _parse.pos
                    if stop != "end":
                        raise MLSQLError(f"template: #if({argument}) has no #end")
                    block.branches.append((None, else_body))
                    break
            nodes.append(block)
    _parse.pos = i
    return nodes, None


# -- running -----------------------------------------------------------------------------------------------

def _run(nodes: list[_Block], context: dict, out: list[str]) -> None:
    for node in nodes:
        if node.kind == "text":
            out.append(_interpolate(node.argument, context))
        elif node.kind == "set":
            name, value = _assignment(node.argument)
            context[name] = _Expression(value, context).value()
        elif node.kind == "foreach":
            _foreach(node, context, out)
        else:
            for condition, body in node.branches:
                if condition is None or _truthy(_Expression(condition, context).value()):
                    _run(body, context, out)
                    break


def _assignment(argument: str) -> tuple[str, str]:
    match = re.fullmatch(r"\s*\$!?\{?([A-Za-z_]\w*)\}?\s*=(.*)", argument, re.DOTALL)
    if match is None:
        raise MLSQLError(f"template: #set({argument}) should be #set($name = value)")
    return match.group(1), match.group(2)


def _foreach(node: _Block, context: dict, out: list[str]) -> None:
    match = re.fullmatch(r"\s*\$\{?([A-Za-z_]\w*)\}?\s+in\s+(.*)", node.argument, re.DOTALL)
    if match is None:
        raise MLSQLError(f"template: #foreach({node.argument}) should be #foreach($item in $list)")
    name, items = match.group(1), _Expression(match.group(2), context).value()
    if items is None:
        return
    if isinstance(items, dict):
        items = list(items.values())
    if not isinstance(items, list):
        raise MLSQLError(f"template: #foreach over {items!r}, which is not a list")
    if len(items) > MAX_ITERATIONS:
        raise MLSQLError(f"template: #foreach over more than {MAX_ITERATIONS} items")
    saved = {k: context[k] for k in (name, "foreach", "velocityCount") if k in context}
    for index, item in enumerate(items):
        context[name] = item
        context["velocityCount"] = index + 1
        context["foreach"] = {"index": index, "count": index + 1, "hasNext": index + 1 < len(items),
                              "first": index == 0, "last": index + 1 == len(items)}
        _run(node.body, context, out)
    for key in (name, "foreach", "velocityCount"):
        context.pop(key, None)
    context.update(saved)


def _interpolate(text: str, context: dict) -> str:
    def replace(match: re.Match) -> str:
        found, value = _reference(match.group("path"), context)
        if not found or value is None:
            return "" if match.group("quiet") else match.group(0)
        return _text(value)

    return REFERENCE.sub(replace, text)


def _text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_text(v) for v in value) + "]"
    return str(value)


def _truthy(value) -> bool:
    return value is not None and value is not False


METHODS: dict[str, Callable] = {
    "size": len, "length": len, "isEmpty": lambda v: len(v) == 0,
    "get": lambda v, i: v[i], "contains": lambda v, x: x in v,
    "toUpperCase": str.upper, "toLowerCase": str.lower, "trim": str.strip,
    "startsWith": str.startswith, "endsWith": str.endswith, "replace": lambda s, a, b: s.replace(a, b),
    "substring": lambda s, a, b=None: s[a:b], "indexOf": lambda v, x: v.index(x) if x in v else -1,
    "toString": _text,
}
"""The only methods a template can call: Java's names, Python's implementations."""


def _reference(path: str, context: dict) -> tuple[bool, object]:
    """``name.prop.method(args)`` → (found, value); method arguments are expressions."""
    parts = re.findall(r"([A-Za-z_]\w*)(\(([^()]*)\))?", path)
    name = parts[0][0]
    if name not in context:
        return False, None
    value = context[name]
    for member, call, arguments in parts[1:]:
        if call:
            method = METHODS.get(member)
            if method is None:
                raise MLSQLError(f"template: ${path}: no method {member} (templates offer {', '.join(METHODS)})")
            args = _Expression(f"[{arguments}]", context).value() if arguments.strip() else []
            try:
                value = method(value, *args)
            except (TypeError, ValueError, IndexError, AttributeError) as exc:
                raise MLSQLError(f"template: ${path} failed: {exc}") from exc
        elif isinstance(value, dict) and member in value:
            value = value[member]
        else:
            return False, None
    return True, value


_EXPRESSION_TOKEN = re.compile(r"""\s*(?:(?P<number>\d+\.\d+|\d+)|"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<ref>\$!?\{?[A-Za-z_]\w*(?:\.[A-Za-z_]\w*(?:\([^()]*\))?)*\}?)|(?P<op>\.\.|==|!=|<=|>=|&&|\|\||[-+*/%<>!()\[\],])|(?P<word>[A-Za-z_]\w*))""")
_WORD_OPERATORS = {"and": "&&", "or": "||", "not": "!", "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


class _Expression:
    """Recursive descent over a Velocity expression, evaluated as it is read."""

    def __init__(self, text: str, context: dict):
        self.text, self.context, self.tokens, self.i = text, context, [], 0
        pos = 0
        while pos < len(text) and text[pos:].strip():
            match = _EXPRESSION_TOKEN.match(text, pos)
            if match is None or match.end() == pos:
                raise MLSQLError(f"template: cannot read {text.strip()!r} near {text[pos:pos + 20]!r}")
            kind = match.lastgroup
            value = match.group(kind)
            if kind == "word" and value in _WORD_OPERATORS:
                kind, value = "op", _WORD_OPERATORS[value]
            self.tokens.append((kind, value))
            pos = match.end()

    def value(self):
        result = self._or()
        if self.i != len(self.tokens):
            raise MLSQLError(f"template: unexpected {self.tokens[self.i][1]!r} in {self.text.strip()!r}")
        return result

    def _peek(self, *ops: str) -> str | None:
        if self.i < len(self.tokens) and self.tokens[self.i][0] == "op" and self.tokens[self.i][1] in ops:
            self.i += 1
            return self.tokens[self.i - 1][1]
        return None

    def _or(self):
        left = self._and()
        while self._peek("||"):
            right = self._and()
            left = _truthy(left) or _truthy(right)
        return left

    def _and(self):
        left = self._not()
        while self._peek("&&"):
            right = self._not()
            left = _truthy(left) and _truthy(right)
        return left

    def _not(self):
        if self._peek("!"):
            return not _truthy(self._not())
        return self._compare()

    def _compare(self):
        left = self._sum()
        op = self._peek("==", "!=", "<", "<=", ">", ">=")
        if op is None:
            return left
        right = self._sum()
        if op == "==":
            return left == right
        if op == "!=":
            return left != right
        try:
            return {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[op]
        except TypeError as exc:
            raise MLSQLError(f"template: cannot compare {left!r} {op} {right!r}") from exc

    def _sum(self):
        left = self._product()
        while op := self._peek("+", "-"):
            right = self._product()
            left = self._arithmetic(op, left, right)
        return left

    def _product(self):
        left = self._unary()
        while op := self._peek("*", "/", "%"):
            left = self._arithmetic(op, left, self._unary())
        return left

    def _unary(self):
        if self._peek("-"):
            return self._arithmetic("-", 0, self._unary())
        return self._atom()

    @staticmethod
    def _arithmetic(op: str, left, right):
        if op == "+" and (isinstance(left, str) or isinstance(right, str)):
            return _text(left) + _text(right)
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (left, right)):
            raise MLSQLError(f"template: {left!r} {op} {right!r} needs numbers")
        if op in "/%" and right == 0:
            raise MLSQLError("template: division by zero")
        if op == "/":
            return left // right if isinstance(left, int) and isinstance(right, int) else left / right
        return {"+": left + right, "-": left - right, "*": left * right, "%": left % right}[op]

    def _atom(self):
        if self.i >= len(self.tokens):
            raise MLSQLError(f"template: {self.text.strip()!r} ends too early")
        kind, value = self.tokens[self.i]
        self.i += 1
        if kind == "number":
            return float(value) if "." in value else int(value)
        if kind == "dq":
            return _interpolate(value, self.context)
        if kind == "sq":
            return value
        if kind == "ref":
            path = value.lstrip("$!").strip("{}")
            return _reference(path, self.context)[1]
        if kind == "word":
            if value in ("true", "false", "null"):
                return {"true": True, "false": False, "null": None}[value]
            raise MLSQLError(f"template: unknown word {value!r} in {self.text.strip()!r} (references start with $)")
        if value == "(":
            inner = self._or()
            self._expect(")")
            return inner
        if value == "[":
            return self._list()
        raise MLSQLError(f"template: unexpected {value!r} in {self.text.strip()!r}")

    def _list(self) -> list:
        if self._peek("]"):
            return []
        first = self._or()
        if self._peek(".."):
            last = self._or()
            self._expect("]")
            if not all(isinstance(v, int) for v in (first, last)) or abs(last - first) > MAX_ITERATIONS:
                raise MLSQLError(f"template: range [{first}..{last}] needs integers at most {MAX_ITERATIONS} apart")
            return list(range(first, last + 1) if first <= last else range(first, last - 1, -1))
        items = [first]
        while self._peek(","):
            items.append(self._or())
        self._expect("]")
        return items

    def _expect(self, op: str) -> None:
        if not self._peek(op):
            raise MLSQLError(f"template: expected {op!r} in {self.text.strip()!r}")
