"""The one table of Spark's function families (``FAMILIES``), each its module's ``FAMILY``
(``family.py``). Everything else reads it: the translator runs ``TRANSFORMS``, the estimate of a
call's expanded size (``macro_expansion``) and the DuckDB connection read ``MACROS``, and a
connection creates the Python-implemented functions (``define_python_functions``).

The order is the rewrites' order: which table a name means first (``relations``), then one
spelling for each grouping expression (before the casts write two spellings apart), then casts (every other rewrite sees Spark's types), the string,
math, hash and format families before the others (which write regexes and substrings of their own).
"""

from __future__ import annotations

import importlib
import re

from . import arrays_maps, byzer, casts, datetimes, formats, functions, grouping, hashes, json_csv, maths, regexes
from . import relations, strings, vectors
from .family import Family, Transform

FAMILIES: tuple[Family, ...] = (
    relations.FAMILY, grouping.SPELLINGS, casts.FAMILY, byzer.FAMILY, functions.FAMILY,
    regexes.FAMILY, strings.FAMILY, maths.FAMILY, hashes.FAMILY, formats.FAMILY,
    json_csv.FAMILY, arrays_maps.FAMILY, grouping.FAMILY, datetimes.FAMILY, vectors.FAMILY,
)

TRANSFORMS: tuple[Transform, ...] = tuple(t for family in FAMILIES for t in family.transforms)

_MACRO_CALL = re.compile(r"\b((?:spark|byzer|vec)_\w+)\s*\(", re.IGNORECASE)


def _declared() -> dict[str, str]:
    macros: dict[str, str] = {}
    for family in FAMILIES:
        for name, definition in family.macros.items():
            if name.lower() in macros:
                raise AssertionError(f"macro {name} is declared twice (the second by the {family.name} family)")
            macros[name.lower()] = definition
    return macros


_DECLARED = _declared()


def called(sql: str) -> set[str]:
    """The names of our macros that ``sql`` (a query or a macro's definition) calls."""
    return {m.group(1).lower() for m in _MACRO_CALL.finditer(sql)} & _DECLARED.keys()


NEEDS: dict[str, frozenset[str]] = {name: frozenset(called(definition) - {name}) for name, definition in _DECLARED.items()}
"""Macro name → the other macros its definition calls."""


def _each_after_those_it_calls() -> dict[str, str]:
    ordered: dict[str, str] = {}

    def add(name: str) -> None:
        if name not in ordered:
            for needed in sorted(NEEDS[name]):
                add(needed)
            ordered[name] = _DECLARED[name]

    for name in _DECLARED:
        add(name)
    return ordered


MACROS: dict[str, str] = _each_after_those_it_calls()
"""Every family's DuckDB macros, ``name → "(params) AS body"``, each after the macros it calls
(DuckDB binds a typed macro's body when it is created)."""


def define_python_functions(con) -> None:
    """Create every family's Python-implemented functions on the DuckDB connection ``con``."""
    import duckdb  # heavy, and only a connection needs it: parsing a script imports this module too

    varchar = duckdb.sqltype("VARCHAR")
    for family in FAMILIES:
        for function in family.python_functions:
            module, name = function.implementation.split(":")
            implementation = getattr(importlib.import_module(f"{__package__}.{module}"), name)
            con.create_function(function.name, implementation, [varchar] * function.arity, varchar, type="arrow")
