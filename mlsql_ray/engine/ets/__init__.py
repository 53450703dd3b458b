"""ETs (Byzer's estimators/transformers): ``run T as NAME.`path` where ... as OUT;``, by name.

This module is the one registry of every ET (``ETS``, ``find``): the engine owns it because it is
the one room that sees both families, the ETs over tables in this package (they read the catalog)
and the ETs that learn in ``mlsql_ray.ml.ets`` (below the engine, with what an ET is,
``ml.ets.base``). Adding one is one small module defining an ``ET`` and one entry in
``_MODULES``. ``!show et``, ``!show "et/NAME"`` and ``!show "et/params/NAME"`` list what is here; what
``train``/``run`` do with an ET, and ``predict`` and ``register`` with the ETs that learn, is their
model kind's (``ml.kinds.FeatureETs``).
"""

from __future__ import annotations

import pyarrow as pa

from ...errors import MLSQLError
from ...options import params_table
from ...ml.ets import discretizer, feature_extract, indexing, scaling, tfidf, vecmap, word2vec
from ...ml.ets.base import ET
from . import confusion, data_summary, distributions, evaluation, json_expand, sampling, syntax, tables, transpose, tree

_MODULES = (tables, json_expand, syntax, tree, data_summary, transpose, distributions, sampling, scaling,
            discretizer, indexing, confusion, evaluation, vecmap, tfidf, word2vec, feature_extract)

ETS: dict[str, ET] = {et.name.lower(): et for module in _MODULES for et in module.ETS}


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

