"""The two error types for users' mistakes: a syntax error before anything runs, an execution
error after. Both carry the position of the offending text (1-based line and column) so every
front end (CLI, kernel, Python) can point at it the same way.

``NotAllowed`` is an execution error of its own kind: the statement asks for what its session
may not reach (a path outside an owner's home or the allowed folders), so a service answers it as
a refusal (403), not as a failed run.

Anything else that escapes a statement is a bug in mlsql-ray: an ``InternalError`` that keeps the
original exception (and its traceback) as its cause. ``InterruptedAfterCommit`` is Ctrl-C that
came too late to stop a save.
"""

from __future__ import annotations

from .masking import mask_at


def first_line(exc: BaseException, named: bool = False) -> str:
    """The first line of an exception's text, what a one-line message quotes (libraries put
    details and tracebacks on later lines); its class's name when it has no text. ``named``: after
    the class's name, for an error from elsewhere (a Ray worker) whose kind is news."""
    lines = str(exc).strip().splitlines()
    if not lines:
        return type(exc).__name__
    return f"{type(exc).__name__}: {lines[0]}" if named else lines[0]


class MLSQLError(Exception):
    """A statement could not run. ``line``/``column`` locate the statement (or None); ``source``
    is the file it is in when that is not the file being run (an included script)."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.source: str | None = None

    def at(self, line: int, column: int) -> "MLSQLError":
        """Give the error a position if it has none yet (the innermost position wins)."""
        if self.line is None:
            self.line, self.column = line, column
        return self

    def __str__(self) -> str:
        if self.line is None:
            return self.message
        return f"{self.line}:{self.column}: {self.message}"


class MLSQLSyntaxError(MLSQLError):
    """The text is not valid MLSQL. ``source_line`` and ``caret`` show the spot; ``reason`` says
    which kind of mistake it is, so that no caller reads the message to tell (the kernel's
    ``is_complete`` asks whether more typing could mend it)."""

    #: the text stops before it is finished: a statement without its ``;``, an open string, comment
    #: or quoted name, an ``!if`` without its ``!fi``
    UNFINISHED = "unfinished"
    #: anything else
    INVALID = "invalid"

    def __init__(self, message: str, line: int, column: int, source_line: str = "", reason: str = INVALID):
        super().__init__(message, line, column)
        self.source_line = source_line
        self.reason = reason

    @property
    def caret(self) -> str:
        """The offending source line, secrets masked, with a ``^`` under the column."""
        line, column = mask_at(self.source_line, self.column)
        pad = "".join("\t" if ch == "\t" else " " for ch in line[: column - 1])
        return f"{line}\n{pad}^"

    def __str__(self) -> str:
        text = f"{self.line}:{self.column}: {self.message}"
        return f"{text}\n{self.caret}" if self.source_line else text


class NotAllowed(MLSQLError):
    """The statement is refused, not failed: it names a path its session may not reach (outside
    the owner's home, outside the folders file commands may touch, an include outside the project
    root, object storage from a confined home). Nothing was read or written."""


class InternalError(Exception):
    """A bug in mlsql-ray, not the user's mistake: the exception a statement raised that no code
    turned into an ``MLSQLError``. ``__cause__`` is that exception (its traceback is the one to
    read); ``line``/``column``/``source`` say which statement was running."""

    def __init__(self, cause: BaseException, line: int | None, column: int | None, source: str | None = None):
        super().__init__(f"internal error (a bug in mlsql-ray): {type(cause).__name__}: {cause}")
        self.message = str(self)
        self.cause = cause
        self.line = line
        self.column = column
        self.source = source


class InterruptedAfterCommit(KeyboardInterrupt):
    """Ctrl-C that lost the race with a save's commit: every row had been handed over and the
    commit went through. The run still ends, as asked, but says what was committed, so that
    nobody runs an ``append`` again and doubles its rows."""

    def __init__(self, table: str, version: int):
        super().__init__(f"interrupted after {table} was committed as version {version}")
        self.table = table
        self.version = version
