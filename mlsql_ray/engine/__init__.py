"""Statements → tables: the session, its catalog, file formats and the Delta warehouse."""

from .result import Result
from .session import Session

__all__ = ["Result", "Session"]
