"""Text → tokens with positions. No statement knowledge lives here.

Every token keeps its 1-based ``line``/``col`` and its ``start``/``end`` offsets in the text, so
the parser can both point at it in errors and slice raw SQL back out of the source.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from ..errors import MLSQLSyntaxError


class T(enum.Enum):
    WORD = "word"  # identifiers and keywords; may embed ${var}
    STRING = "string"  # '…' or "…", value unescaped
    BLOCK_STRING = "block string"  # '''…''', value raw
    BACKQUOTED = "backquoted"  # `…`, value with `` → `
    SYMBOL = "symbol"  # any other single character: . = , ; ( ) ! …


@dataclass(frozen=True, slots=True)
class Token:
    type: T
    value: str
    line: int
    col: int
    start: int
    end: int

    def is_word(self, *words: str) -> bool:
        """True for a WORD equal (case-insensitively) to one of ``words``."""
        return self.type is T.WORD and self.value.lower() in words

    def is_symbol(self, symbol: str) -> bool:
        return self.type is T.SYMBOL and self.value == symbol


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", "'": "'", '"': '"', "`": "`"}


def _unescape(body: str) -> str:
    """Resolve the escapes a user expects in option values; unknown ones stay as written."""
    if "\\" not in body:
        return body
    out, i = [], 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append(_ESCAPES.get(nxt, "\\" + nxt))
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _is_word_char(ch: str) -> bool:
    return ch == "_" or ch.isalnum()


# Runs of what the scanner steps over a character at a time otherwise: Python's ``\s`` is exactly
# ``str.isspace`` and ``\w`` exactly ``_is_word_char`` (every code point checked), so a run is
# one C-level match instead of a Python loop per character (a million-character input: seconds)
_BLANKS = re.compile(r"\s+")
_WORD_CHARS = re.compile(r"\w+")


class Tokenizer:
    """Scans one piece of text. ``first_line`` lets a cell keep its line numbers in a script."""

    def __init__(self, text: str, first_line: int = 1):
        self.text = text
        self.pos = 0
        self.line = first_line
        self.line_start = 0  # offset where the current line begins
        self.first_line = first_line

    def source_line(self, line: int) -> str:
        lines = self.text.split("\n")
        index = line - self.first_line
        # without a CRLF file's \r, which would send the caret line back to column 1 on a terminal
        return lines[index].rstrip("\r") if 0 <= index < len(lines) else ""

    def position(self, offset: int) -> tuple[int, int]:
        """(line, column) of a character offset in the text."""
        line_start = self.text.rfind("\n", 0, offset) + 1
        return self.first_line + self.text.count("\n", 0, offset), offset - line_start + 1

    def error(self, message: str, line: int, col: int) -> MLSQLSyntaxError:
        return MLSQLSyntaxError(message, line, col, self.source_line(line))

    def _advance(self, n: int) -> None:
        """Move ``n`` characters on, keeping line bookkeeping right across newlines."""
        end = self.pos + n
        newlines = self.text.count("\n", self.pos, end)
        if newlines:
            self.line += newlines
            self.line_start = self.text.rfind("\n", self.pos, end) + 1
        self.pos = end

    def tokens(self) -> list[Token]:
        out: list[Token] = []
        text = self.text
        while True:
            self._skip_blank_and_comments()
            if self.pos >= len(text):
                return out
            line, col, start = self.line, self.pos - self.line_start + 1, self.pos
            kind, value, length = self._scan(line, col)
            self._advance(length)
            out.append(Token(kind, value, line, col, start, self.pos))

    def _skip_blank_and_comments(self) -> None:
        text = self.text
        while self.pos < len(text):
            blanks = _BLANKS.match(text, self.pos)
            if blanks:
                self._advance(blanks.end() - self.pos)
            elif text.startswith("--", self.pos):
                newline = text.find("\n", self.pos)
                self._advance((len(text) if newline < 0 else newline) - self.pos)
            elif text.startswith("/*", self.pos):
                close = text.find("*/", self.pos + 2)
                if close < 0:
                    raise self.error("unterminated /* comment", self.line, self.pos - self.line_start + 1)
                self._advance(close + 2 - self.pos)
            else:
                return

    def _scan(self, line: int, col: int) -> tuple[T, str, int]:
        """Recognise the token at ``self.pos``: (type, value, length in characters)."""
        text, pos = self.text, self.pos
        ch = text[pos]
        if text.startswith("'''", pos):
            close = text.find("'''", pos + 3)
            if close < 0:
                raise self.error("unterminated ''' string", line, col)
            return T.BLOCK_STRING, text[pos + 3 : close], close + 3 - pos
        if ch in "'\"":
            end = self._find_closing(ch, pos + 1, line, col, "string")
            return T.STRING, _unescape(text[pos + 1 : end]), end + 1 - pos
        if ch == "`":
            end = pos + 1
            while True:
                end = text.find("`", end)
                if end < 0:
                    raise self.error("unterminated ` quoted name", line, col)
                if text.startswith("``", end):
                    end += 2
                    continue
                break
            return T.BACKQUOTED, text[pos + 1 : end].replace("``", "`"), end + 1 - pos
        if _is_word_char(ch) or text.startswith("${", pos):
            end = pos
            while end < len(text):
                if text.startswith("${", end):
                    close = text.find("}", end + 2)
                    if close < 0:
                        raise self.error("unterminated ${ variable", line, col + end - pos)
                    end = close + 1
                elif word := _WORD_CHARS.match(text, end):
                    end = word.end()
                else:
                    break
            return T.WORD, text[pos:end], end - pos
        return T.SYMBOL, ch, 1

    def _find_closing(self, quote: str, pos: int, line: int, col: int, what: str) -> int:
        text = self.text
        while pos < len(text):
            ch = text[pos]
            if ch == "\\":
                pos += 2
            elif ch == quote:
                return pos
            else:
                pos += 1
        raise self.error(f"unterminated {what} (opening {quote} has no closing {quote})", line, col)


def tokenize(text: str, first_line: int = 1) -> list[Token]:
    return Tokenizer(text, first_line).tokens()
