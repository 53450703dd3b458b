"""Tokens → typed statements, following byzer-lang's DSLSQL.g4.

Statements are found by their leading keyword (``STATEMENT_PARSERS``): a new statement is one
entry plus one method. Each method walks the tokens of exactly one statement (up to its ``;``)
through a small cursor that raises :class:`MLSQLSyntaxError` at the token it did not expect.
"""

from __future__ import annotations

import re
from typing import Callable

from ..errors import MLSQLError, MLSQLSyntaxError
from . import ast, branches
from .script_sql import translate
from .tokens import ANNOTATION, CELL_MARKER, T, Token, Tokenizer

_CELL_MARKER = re.compile(CELL_MARKER)
# ``--%name`` or ``--%name=value``; trailing \r allowed: scripts and notebooks saved with CRLF line
# ends must still be recognised
_ANNOTATION = re.compile(rf"{ANNOTATION}[ \t\r]*(?:=(.*))?$")
_SAVE_MODES = tuple(mode.lower() for mode in ast.SAVE_MODES)


class _Cursor:
    """The tokens of one statement, with the helpers every statement parser needs."""

    def __init__(self, tokens: list[Token], end: Token, tokenizer: Tokenizer):
        self.tokens = tokens
        self.i = 0
        self.end = end  # the terminating ';', used to point at "end of statement"
        self.tokenizer = tokenizer
        #: the value token of each option read by options(), so checks on a value can point at it
        self.option_values: dict[str, Token] = {}

    def peek(self, ahead: int = 0) -> Token | None:
        j = self.i + ahead
        return self.tokens[j] if j < len(self.tokens) else None

    def next(self) -> Token:
        tok = self.peek()
        if tok is None:
            raise self.error_at(self.end, "unexpected end of statement")
        self.i += 1
        return tok

    def done(self) -> bool:
        return self.i >= len(self.tokens)

    def error_at(self, tok: Token, message: str) -> MLSQLSyntaxError:
        return self.tokenizer.error(message, tok.line, tok.col)

    def _describe(self, tok: Token | None) -> str:
        if tok is None or tok is self.end:
            return "end of statement"
        return f"'{tok.value}'" if tok.type in (T.WORD, T.SYMBOL) else f"{tok.type.value} `{tok.value[:30]}`"

    def expect_word(self, *words: str, what: str | None = None) -> Token:
        tok = self.peek()
        if tok is not None and (tok.is_word(*words) if words else tok.type in (T.WORD, T.BACKQUOTED)):
            self.i += 1
            return tok
        wanted = what or " or ".join(f"'{w}'" for w in words)
        raise self.error_at(tok or self.end, f"expected {wanted}, found {self._describe(tok)}")

    def expect_symbol(self, symbol: str) -> Token:
        tok = self.peek()
        if tok is not None and tok.is_symbol(symbol):
            self.i += 1
            return tok
        raise self.error_at(tok or self.end, f"expected '{symbol}', found {self._describe(tok)}")

    def accept_word(self, *words: str) -> Token | None:
        tok = self.peek()
        if tok is not None and tok.is_word(*words):
            self.i += 1
            return tok
        return None

    def name(self, what: str) -> str:
        """An identifier: a WORD or a `quoted` name."""
        return self.expect_word(what=what).value

    def qualified_name(self, what: str) -> str:
        parts = [self.name(what)]
        while (tok := self.peek()) is not None and tok.is_symbol(".") and self._adjacent():
            self.i += 1
            parts.append(self.name(what))
        return ".".join(parts)

    def _adjacent(self) -> bool:
        nxt = self.peek(1)
        return nxt is not None and nxt.type in (T.WORD, T.BACKQUOTED)

    def format_and_path(self) -> tuple[str, str]:
        """``FORMAT.`PATH``` or ``FORMAT.name[.name...]``."""
        fmt = self.expect_word(what="a format name (parquet, csv, json, text, delta, ...)").value
        self.expect_symbol(".")
        tok = self.peek()
        if tok is not None and tok.type is T.BACKQUOTED:
            self.i += 1
            return fmt, tok.value
        return fmt, self.qualified_name("a `path` in backquotes")

    def options(self) -> dict[str, str]:
        """``[where|options] [and] k="v" [and k="v"]...`` — values must be quoted strings."""
        keyword = self.accept_word("where", "options")
        opts: dict[str, str] = {}
        if self._leading_and():  # DSLSQL.g4: `where? expression? booleanExpression*` — `where and k="v"`
            self.i += 1
        tok, after = self.peek(), self.peek(1)
        if tok is None or tok.type not in (T.WORD, T.BACKQUOTED) or tok.is_word("as", "partitionby"):
            return opts
        if keyword is None and not (after is not None and (after.is_symbol("=") or after.is_symbol("."))):
            # no where/options and no `k=`: not an option list, so the caller reports the word it
            # expected here (`load a.`x` t;` → expected 'as'), not a puzzling "expected '='"
            return opts
        while True:
            key_tok = self.peek()
            key = self.qualified_name("an option name")
            self.expect_symbol("=")
            value = self.next()
            # a bare whole number (`partitionNum=2`) too: byzer-lang 2.x's DSLSQL.g4 takes
            # expression : qualifiedName '=' (MUMERIC | STRING_TEXT | BLOCK_STRING_TEXT)
            if value.type not in (T.STRING, T.BLOCK_STRING) and not (value.type is T.WORD and value.value.isdigit()):
                raise self.error_at(value, f"option '{key}' needs a quoted value, like {key}=\"...\"")
            if key in opts:
                raise self.error_at(key_tok, f"option '{key}' is given twice")
            opts[key] = value.value
            self.option_values[key] = value
            if not self.accept_word("and"):
                return opts

    def _leading_and(self) -> bool:
        """An ``and`` that opens an option list (``and k="v"``), as Byzer's grammar allows."""
        tok, key, sign = self.peek(), self.peek(1), self.peek(2)
        return (tok is not None and tok.is_word("and") and key is not None and key.type in (T.WORD, T.BACKQUOTED)
                and sign is not None and (sign.is_symbol("=") or sign.is_symbol(".")))

    def finish(self, what: str) -> None:
        tok = self.peek()
        if tok is not None:
            raise self.error_at(tok, f"unexpected {self._describe(tok)} after {what}; expected ';'")


class Parser:
    def __init__(self, text: str, first_line: int = 1):
        self.tokenizer = Tokenizer(text, first_line)
        self.text = text

    def statements(self) -> list[ast.Statement]:
        tokens = self.tokenizer.tokens()
        out: list[ast.Statement] = []
        start = 0
        for i, tok in enumerate(tokens):
            if tok.is_symbol(";"):
                if i > start:
                    out.append(self._statement(tokens[start:i], tok))
                start = i + 1
        if start < len(tokens):
            line, col = self.tokenizer.position(tokens[-1].end)
            raise self.tokenizer.error("missing ';' at the end of this statement", line, col, MLSQLSyntaxError.UNFINISHED)
        return out

    def _statement(self, tokens: list[Token], end: Token) -> ast.Statement:
        first = tokens[0]
        cursor = _Cursor(tokens, end, self.tokenizer)
        if first.is_symbol("!"):
            parse = Parser._command
        elif first.type is T.WORD and first.value.lower() in STATEMENT_PARSERS:
            parse = STATEMENT_PARSERS[first.value.lower()]
        else:
            known = ", ".join(sorted(STATEMENT_PARSERS))
            raise cursor.error_at(first, f"unknown statement {cursor._describe(first)}: expected one of {known}, or a !command")
        statement = parse(self, cursor)
        return _at(statement, first)

    # -- one method per statement ------------------------------------------------------------

    def _load(self, c: _Cursor) -> ast.Load:
        c.next()
        fmt, path = c.format_and_path()
        options = c.options()
        c.expect_word("as")
        table = c.name("a table name after 'as'")
        c.finish("the table name")
        return ast.Load(format=fmt, path=path, table=table, options=options)

    def _save(self, c: _Cursor) -> ast.Save:
        c.next()
        mode = "errorifexists"
        while (tok := c.peek()) is not None and tok.is_word(*_SAVE_MODES) and not _is_as(c.peek(1)):
            mode = tok.value.lower()
            c.i += 1
        table = c.name("the name of the table to save")
        c.expect_word("as")
        fmt, path = c.format_and_path()
        options = c.options()
        partition_by: list[str] = []
        if c.accept_word("partitionby"):
            partition_by.append(c.name("a column name after partitionBy"))
            while (tok := c.peek()) is not None and tok.is_symbol(","):
                c.i += 1
                partition_by.append(c.name("a column name"))
        c.finish("the save statement")
        return ast.Save(table=table, format=fmt, path=path, mode=mode, options=options, partition_by=tuple(partition_by))

    def _select(self, c: _Cursor) -> ast.Select:
        tokens = c.tokens
        if len(tokens) < 3 or not tokens[-2].is_word("as") or tokens[-1].type not in (T.WORD, T.BACKQUOTED):
            raise c.error_at(tokens[-1] if len(tokens) > 1 else c.end, "a select must end with 'as TABLE_NAME' to name its result")
        # end at the last SQL token, not at 'as': a trailing `-- comment` kept in the text would
        # swallow whatever the engine puts after the query
        sql = self.text[tokens[0].start : tokens[-3].end]
        self._check_sql(sql, tokens[0].line, tokens[0].col)
        return ast.Select(sql=sql, table=tokens[-1].value)

    def _check_sql(self, sql: str, line: int, col: int, query: bool = False) -> None:
        """Translate Spark SQL now, so a script with a SQL syntax error runs nothing. SQL with
        ``${}`` is only known once its variables are set: it is checked when it runs. The
        translation is cached, so the run does not pay for it twice. ``query``: it must be one."""
        if "${" in sql:
            return
        try:
            translate(sql, line, col, query=query)
        except MLSQLError as exc:
            raise self.tokenizer.error(exc.message, exc.line, exc.column) from exc

    def _set(self, c: _Cursor) -> ast.Set:
        c.next()
        key = c.qualified_name("a variable name")
        c.expect_symbol("=")
        tok = c.peek()
        if tok is None:
            raise c.error_at(c.end, f"set {key} needs a value after '='")
        if tok.type in (T.STRING, T.BLOCK_STRING, T.BACKQUOTED):
            c.i += 1
            value = tok.value
        else:
            value = c.qualified_name("a value (a quoted string or a name)")
        options = c.options()
        kind = options.get("type", "text")
        if kind not in ("text", "sql", "shell", "conf", "defaultParam"):
            raise c.error_at(c.option_values["type"], f"set type must be text, sql, shell, conf or defaultParam, not '{kind}'")
        if kind == "sql":
            self._check_sql(value, tok.line, tok.col + _OPENING_QUOTE.get(tok.type, 0), query=True)
        scope = options.get("scope", "request")
        if scope not in ("session", "request"):
            raise c.error_at(c.option_values["scope"], f"set scope must be session or request, not '{scope}'")
        mode = options.get("mode", "runtime")
        if mode not in ("compile", "runtime"):
            raise c.error_at(c.option_values["mode"], f"set mode must be compile or runtime, not '{mode}'")
        c.finish("the set statement")
        return ast.Set(key=key, value=value, options=options)

    def _include(self, c: _Cursor) -> ast.Include:
        c.next()
        fmt, path = c.format_and_path()
        options = c.options()
        c.finish("the include statement")
        return ast.Include(format=fmt, path=path, options=options)

    def _register(self, c: _Cursor) -> ast.Register:
        c.next()
        fmt, path = c.format_and_path()
        c.expect_word("as")
        function = c.name("a function name after 'as'")
        options = c.options()
        c.finish("the register statement")
        return ast.Register(format=fmt, path=path, function=function, options=options)

    def _unregister(self, c: _Cursor) -> ast.Unregister:
        c.next()
        fmt, path = c.format_and_path()
        options = c.options()
        c.finish("the unregister statement")
        return ast.Unregister(format=fmt, path=path, options=options)

    def _train(self, c: _Cursor) -> ast.Train:
        verb = c.next().value.lower()
        table = c.name(f"a table name after '{verb}'")
        c.expect_word("as", "into")  # DSLSQL.g4: (TRAIN|RUN|PREDICT) tableName (as|into) format '.' path
        fmt, path = c.format_and_path()
        options = c.options()
        output = None
        while c.accept_word("as"):  # DSLSQL.g4: asTableName* — Byzer keeps the last
            output = c.name("an output table name after 'as'")
        if output is not None and not options:  # `run t as ET.`` as out where k="v"`, as the ET docs write it
            options = c.options()
        c.finish(f"the {verb} statement")
        code = c.option_values.get("code")
        return ast.Train(verb=verb, table=table, format=fmt, path=path, options=options, output=output,
                         code_line=code.line if code is not None else 0)

    def _connect(self, c: _Cursor) -> ast.Connect:
        c.next()
        fmt = c.expect_word(what="a format name").value
        options = c.options()
        alias = None
        if c.accept_word("as"):
            alias = c.qualified_name("a name after 'as'")
        c.finish("the connect statement")
        return ast.Connect(format=fmt, options=options, alias=alias)

    def _raw_sql(self, c: _Cursor) -> ast.RawSQL:
        tokens = c.tokens
        return ast.RawSQL(verb=tokens[0].value.lower(), sql=self.text[tokens[0].start : tokens[-1].end])

    def _command(self, c: _Cursor) -> ast.Command:
        bang = c.next()
        name_tok = c.peek()
        if name_tok is None or name_tok.type is not T.WORD or name_tok.start != bang.end:
            raise c.error_at(name_tok or c.end, "expected a command name right after '!', like !show tables;")
        c.i += 1
        args: list[str] = []
        # An argument is a run of tokens with no blank between them: `db.table`, `-ls`, "k=v".
        prev_end = None
        while not c.done():
            tok = c.next()
            piece = tok.value if tok.type in (T.STRING, T.BLOCK_STRING, T.BACKQUOTED) else self.text[tok.start : tok.end]
            if prev_end is not None and tok.start == prev_end:
                args[-1] += piece
            else:
                args.append(piece)
            prev_end = tok.end
        return ast.Command(name=name_tok.value, args=tuple(args))


_OPENING_QUOTE = {T.STRING: 1, T.BLOCK_STRING: 3, T.BACKQUOTED: 1}  # where a quoted value's text starts


def _is_as(tok: Token | None) -> bool:
    return tok is not None and tok.is_word("as")


def _at(statement: ast.Statement, tok: Token) -> ast.Statement:
    object.__setattr__(statement, "line", tok.line)
    object.__setattr__(statement, "col", tok.col)
    return statement


STATEMENT_PARSERS: dict[str, Callable[[Parser, _Cursor], ast.Statement]] = {
    "load": Parser._load,
    "save": Parser._save,
    "select": Parser._select,
    "set": Parser._set,
    "include": Parser._include,
    "register": Parser._register,
    "unregister": Parser._unregister,
    "train": Parser._train,
    "run": Parser._train,
    "predict": Parser._train,
    "connect": Parser._connect,
    "insert": Parser._raw_sql,
    "create": Parser._raw_sql,
    "drop": Parser._raw_sql,
    "refresh": Parser._raw_sql,
}


def split_cells(text: str) -> list[tuple[int, str]]:
    """Split a script at ``-- %%`` lines (jupytext percent format): (first line, cell text)."""
    cells: list[tuple[int, str]] = []
    current: list[str] = []
    first = 1
    for number, line in enumerate(text.split("\n"), start=1):
        if _CELL_MARKER.match(line):
            cells.append((first, "\n".join(current)))
            current, first = [""], number  # the marker line stays a (blank) line of the new cell
        else:
            current.append(line)
    cells.append((first, "\n".join(current)))
    return [(line, cell) for line, cell in cells if cell.strip()]


def python_cell(text: str, first_line: int = 1) -> ast.PythonCell | None:
    """The cell as a PythonCell if its leading ``--%`` annotations include ``--%python``."""
    lines = text.split("\n")
    annotations: dict[str, str] = {}
    code_lines = list(lines)
    start = None
    for index, line in enumerate(lines):
        if not line.strip() and not annotations:
            continue
        match = _ANNOTATION.match(line)
        if not match:
            break
        start = index if start is None else start
        annotations[match.group(1)] = (match.group(2) or "").strip()
        code_lines[index] = "#" + line  # keep the line so tracebacks count cell lines
    if "python" not in annotations or start is None:
        return None
    annotations.pop("python")
    # code starts at the first annotation, the line the cell is reported at: line k of the code is
    # line `cell.line + k - 1` whether blank lines or a `-- %%` marker came before it
    cell = ast.PythonCell(code="\n".join(code_lines[start:]), annotations=annotations)
    return _at(cell, Token(T.WORD, "python", first_line + start, 1, 0, 0))


def parse(text: str) -> list[ast.Statement]:
    """Parse a whole script or cell; raises MLSQLSyntaxError before anything could run.
    ``!if``/``!elif``/``!else``/``!fi`` come back nested as ``ast.If`` statements."""
    statements: list[ast.Statement] = []
    for first_line, cell in split_cells(text):
        as_python = python_cell(cell, first_line)
        if as_python is not None:
            statements.append(as_python)
        else:
            statements.extend(Parser(cell, first_line).statements())
    return branches.nest(statements, text)
