"""What one statement did, in a form every front end (CLI, kernel, Python) can show."""

from __future__ import annotations

from dataclasses import dataclass, field

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
