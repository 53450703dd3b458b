"""What one statement did, in a form every front end (CLI, kernel, Python) can show."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import pyarrow as pa

from ..lang import ast
from ..masking import mask

PREVIEW_ROWS = 20


@dataclass
class Result:
    """What one statement did: a one-line ``message`` and/or a ``table`` to show.

    ``table`` is a preview (at most PREVIEW_ROWS rows for selects and loads); ``num_rows`` is the
    full count when known; ``more``: the preview is not all, and the rest was not counted.
    The message and warnings are shown as they are: secrets in them are masked (``masking``).
    """

    statement: ast.Statement
    message: str = ""
    table: pa.Table | None = None
    num_rows: int | None = None
    more: bool = False
    name: str | None = None  # the table the statement defined or wrote, if any
    version: int | None = None  # the Delta version a save wrote
    warnings: list[str] = field(default_factory=list)  # things the user should know, e.g. unknown settings

    def __post_init__(self):
        self.message = mask(self.message)
        self.warnings = [mask(w) for w in self.warnings]

    def warn(self, warnings: list[str]) -> None:
        """Add warnings found while the statement ran, ahead of its own."""
        self.warnings[:0] = [mask(w) for w in warnings]


class _Previewed:
    """A field of a ``PreviewedResult`` that its preview fills in when first read."""

    def __set_name__(self, owner, name: str) -> None:
        self.key = f"_{name}"

    def __get__(self, result, owner=None):
        if result is None:
            return self
        result.take_preview()
        return result.__dict__[self.key]

    def __set__(self, result, value) -> None:
        result.__dict__[self.key] = value


class PreviewedResult(Result):
    """A select's result whose preview (``table``, ``num_rows``, ``more`` and the row count in
    ``message``) is computed only when one of them is read: a batch run that never shows it
    never runs the query. ``preview(result)`` sets them (and raises the query's run-time error,
    at the select's position)."""

    message = _Previewed()
    table = _Previewed()
    num_rows = _Previewed()
    more = _Previewed()

    def __init__(self, statement: ast.Statement, name: str, preview: Callable[["PreviewedResult"], None]):
        super().__init__(statement, name=name)
        self._preview = preview

    def pending(self) -> bool:
        """Whether the preview is still to be computed."""
        return "_preview" in self.__dict__

    def take_preview(self) -> None:
        preview = self.__dict__.pop("_preview", None)  # absent while Result.__init__ runs
        if preview is not None:
            try:
                preview(self)
            except BaseException:
                self._preview = preview  # asked again, it fails again
                raise
