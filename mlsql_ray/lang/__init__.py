"""MLSQL text → typed statements. Pure: no I/O, no engine."""

from .ast import *  # noqa: F401,F403  (the statement classes are this package's vocabulary)
from .ast import Statement, substitute
from .parser import parse, python_cell, split_cells

__all__ = ["parse", "python_cell", "split_cells", "substitute", "Statement"]
