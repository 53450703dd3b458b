"""The ``where`` options of statements, data sources, ETs and algorithms: one ``Param`` type
describing an option, one parser for the parameter groups (``fitParam.N.name``) and one check
that refuses an option nobody knows, naming the ones that are known; and the table that lists
a source's or an ET's options (``params_table``).

Low in the layering (only ``errors`` below it) so that data sources, ETs and algorithms share it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Callable

import pyarrow as pa

from .errors import MLSQLError


def _unchanged(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class Param:
    """One option as users write it: ``name``, its ``default`` and ``description`` (what
    ``!show "et/params/NAME"``, ``!show "datasources/params/NAME"`` and ``load modelParams`` list).

    An algorithm's parameter also says how it reaches the estimator: ``target``, the estimator
    keyword (None: accepted for compatibility and ignored, e.g. Spark's ``checkpointInterval``),
    ``convert`` (the text → a value) and ``adapt`` (Spark's value → the library's, e.g. "em" → "batch")."""

    name: str
    default: Any
    description: str
    target: str | None = None
    convert: Callable[[str], Any] = str
    adapt: Callable[[Any], Any] = _unchanged


#: ``fitParam.N.name``: the option ``name`` of parameter group N
_GROUP_OPTION = re.compile(r"fitParam\.(\d+)\.(\w+)", re.IGNORECASE)
GROUP_PREFIX = "fitparam."

#: options every ET and algorithm accepts and ignores, as Byzer's do: its estimators' common
#: options (``ml/algs/*.md`` write ``keepVersion`` and ``evaluateTable`` for every one)
ACCEPTED_EVERYWHERE: tuple[str, ...] = ()


def is_configuration(key: str) -> bool:
    """A dotted key (``fs.s3a.access.key``, ``es.nodes``): Hadoop's or a connector's setting, which
    a data source hands to the storage under it rather than reads itself."""
    return "." in key and not is_group_option(key)


def is_group_option(key: str) -> bool:
    return key.lower().startswith(GROUP_PREFIX)


def groups(options: Mapping[str, str]) -> dict[int, dict[str, str]]:
    """The parameter groups ``fitParam.N.name`` by N (in increasing order), each its options by
    name; a ``fitParam.`` option of another shape is the user's mistake."""
    found: dict[int, dict[str, str]] = {}
    for key, value in options.items():
        if is_group_option(key):
            match = _GROUP_OPTION.fullmatch(key)
            if match is None:
                raise MLSQLError(f"bad option {key!r}: group parameters are written `fitParam.N.name`, N a number")
            found.setdefault(int(match.group(1)), {})[match.group(2)] = value
    return dict(sorted(found.items()))


def check_known(options: Iterable[str], known: Iterable[str], what: str, ignore_case: bool = True) -> None:
    """Refuse the options ``what`` does not know, naming them and the known ones. ETs and data
    sources match names ignoring case, as Byzer does; an algorithm's parameters are matched exactly
    (its estimator reads them so). A group option ``fitParam.N.name`` is known when
    ``fitParam.N.name`` (written with the letter N) is."""
    known = list(dict.fromkeys(known))
    fold = str.lower if ignore_case else str
    accepted = {fold(name) for name in (*known, *ACCEPTED_EVERYWHERE)}
    unknown = [key for key in options
               if fold(key) not in accepted and fold(_GROUP_OPTION.sub(r"fitParam.N.\2", key)) not in accepted]
    if unknown:
        plural = "s" if len(unknown) > 1 else ""
        raise MLSQLError(f"{what} has no option{plural} {', '.join(map(repr, unknown))}; "
                         f"it knows: {', '.join(known) or 'none'}")


_PARAMS_SCHEMA = pa.schema([("param", pa.string()), ("description", pa.string()), ("default", pa.string())])


def params_table(params: tuple[Param, ...]) -> pa.Table:
    """Options as ``!show "datasources/params/NAME"`` and ``!show "et/params/NAME"`` show them:
    Byzer's columns ``param`` and ``description``, and the default."""
    return pa.table({"param": [p.name for p in params], "description": [p.description for p in params],
                     "default": [p.default for p in params]}, schema=_PARAMS_SCHEMA)
