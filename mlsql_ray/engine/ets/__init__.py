"""ETs (Byzer's estimators/transformers): ``run T as NAME.`path` where ... as OUT;``, by name.

This module is the one registry of every ET (``ETS``, ``find``): the engine owns it because it is
the one room that sees both families, the ETs over tables in this package (they read the catalog)
and the ETs that learn in ``mlsql_ray.ml.ets`` (below the engine, with what an ET is,
``ml.ets.base``). Adding one is one small module defining an ``ET`` and one entry in
``_MODULES``. ``!show et``, ``!show "et/NAME"`` and ``!show "et/params/NAME"`` list what is here; what
``predict`` and ``register`` do with the ETs that learn is their model kind's (``ml.kinds.FeatureETs``).
"""

from __future__ import annotations

import pyarrow as pa

from ...errors import MLSQLError
from ...lang import ast
from ...options import check_known, params_table
from ..result import PREVIEW_ROWS, Result
from ...ml.ets import discretizer, feature_extract, indexing, scaling, tfidf, vecmap, word2vec
from ...ml.ets.base import ET, Call, Partitioned
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


def run(session, s: ast.Train) -> Result:
    """``run|train T as NAME.`PATH` where ... [as OUT];``: the ET's output, named OUT when given.
    An option the ET does not know is a warning naming the known ones (a typo such as ``rountAt``
    would otherwise go unnoticed; Byzer ignores it, so the ET goes on), as for algorithms and data
    sources (``options.check_known``)."""
    et = find(s.format)
    check_known(s.options, [p.name for p in et.params], et.name)
    table = et.run(session, Call(s.table, dict(s.options), s.path, session.local_path))
    if table is None:
        return Result(s, f"{et.name} done")
    table, parts = (table.table, table.sizes) if isinstance(table, Partitioned) else (table, ())
    if s.output:
        session.catalog.add_arrow(s.output, table, f"{s.verb} {et.name}", partitions=parts)
    label = s.output or et.name
    return Result(s, f"{label}: {table.num_rows} rows", table=table.slice(0, PREVIEW_ROWS), num_rows=table.num_rows,
                  name=s.output)
