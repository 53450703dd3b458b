"""ETs (Byzer's estimators/transformers): ``run T as NAME.`path` where ... as OUT;``, by name.

Adding one is one small module in this package defining an ``ET`` and one entry in ``ETS``.
``!show et``, ``!show "et/NAME"`` and ``!show "et/params/NAME"`` list what is here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import pyarrow as pa

from ...errors import MLSQLError
from ..datasources.base import Param, params_table


@dataclass(frozen=True)
class ET:
    name: str
    description: str
    #: (session, ast.Train) -> pa.Table: the output table of ``run T as NAME.`` ...``
    run: Callable
    params: tuple[Param, ...] = ()
    kind: str = "transform"  # !show et's algType: algorithm, feature engineer, data process, ...


ETS: dict[str, ET] = {}


def find(name: str) -> ET:
    et = ETS.get(name.lower())
    if et is None:
        known = ", ".join(e.name for e in ETS.values()) or "none yet"
        raise MLSQLError(f"unknown ET {name!r} (known: {known})")
    return et


def listing() -> pa.Table:
    """``!show et``: Byzer's columns name, algType, doc."""
    ets = list(ETS.values())
    return pa.table({"name": [e.name for e in ets], "algType": [e.kind for e in ets], "doc": [e.description for e in ets]},
                    schema=pa.schema([("name", pa.string()), ("algType", pa.string()), ("doc", pa.string())]))


def params(name: str) -> pa.Table:
    """``!show "et/params/NAME"``."""
    return params_table(find(name).params)
