"""The one containment check: is a path, its symbolic links followed, inside a folder?

``!fs`` and the other file commands, the Delta warehouse's table names and ``include`` all ask
it, so a link inside an allowed folder that leads out is refused by each of them alike.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path


def real_path(path: str | os.PathLike) -> Path:
    """``path`` made absolute with every symbolic link on it followed (the parts that exist:
    a missing tail is kept as written)."""
    return Path(os.path.abspath(path)).resolve()


def within(path: str | os.PathLike, roots: Iterable[str | os.PathLike]) -> bool:
    """Whether ``path``, links followed, is one of ``roots`` or lies below one (roots resolved too)."""
    real = real_path(path)
    return any(real == root or real.is_relative_to(root) for root in map(real_path, roots))
