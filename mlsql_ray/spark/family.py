"""What one family of Spark's functions declares (``FAMILY`` in each family's module), read by
the one table of families (``families.py``): the translator runs its tree rewrites, the macro
size estimate and the DuckDB connection read its macros, and the connection creates its
Python-implemented functions."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from sqlglot import exp

Transform = Callable[[exp.Expression], None]
"""A rewrite of a parsed Spark tree, in place, towards DuckDB SQL that answers as Spark does."""


@dataclass(frozen=True)
class PythonFunction:
    """A DuckDB function written in Python over Arrow batches of text: ``name(VARCHAR × arity) →
    VARCHAR``. ``implementation`` is ``module:function`` within this package, imported only by a
    connection that creates it (its module imports pyarrow and numpy, which parsing a script never needs)."""

    name: str
    arity: int
    implementation: str


@dataclass(frozen=True)
class Family:
    """``transforms``: the tree rewrites, run in the order of the table of families; ``macros``:
    DuckDB macros, ``name → "(params) AS body"`` (overloads as ``"(x INT) AS body1, (x) AS
    body2"``), named ``spark_*``/``byzer_*``/``vec_*`` so they never shadow a DuckDB function;
    ``python_functions``: functions too Java-specific for SQL, written in Python."""

    name: str
    transforms: tuple[Transform, ...] = ()
    macros: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    python_functions: tuple[PythonFunction, ...] = ()
