"""ETs (Byzer's estimators/transformers): ``run T as NAME.`path` where ... as OUT;``, by name.

Adding one is one small module defining an ``ET`` (``ml.ets.base.ET``) and one entry in
``_MODULES``: the data ETs are in this package, the ETs that learn in ``mlsql_ray.ml.ets``. ``!show et``, ``!show "et/NAME"`` and ``!show "et/params/NAME"`` list what is here.
"""

from __future__ import annotations

import pyarrow as pa

from ...errors import MLSQLError
from ...lang import ast
from ...options import check_known
from ..datasources.base import params_table
from ..result import PREVIEW_ROWS, Result
from ...ml.ets import discretizer, feature_extract, fitted, indexing, scaling, tfidf, vecmap, word2vec
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


def _learner(name: str, verb: str):
    et = find(name)
    if et.learner is None:
        raise MLSQLError(f"{et.name} learns nothing to {verb}; ETs that do: "
                         f"{', '.join(e.name for e in ETS.values() if e.learner) or 'none'}")
    return et.learner


def fitted_functions(session, s: ast.Register) -> list[fitted.FittedFunction]:
    """``register ET.`TARGET` as f``: the state ``train T as ET.`TARGET``` saved, as the function f
    (and f's companions, f_SUFFIX, for an ET that has them)."""
    learner = _learner(s.format, "register")
    version, state = fitted.load(session, s.path, learner.name)
    return [fitted.FittedFunction(s.function + suffix, s.path, version, applier, state)
            for suffix, applier in {"": learner.applier, **learner.companions}.items()]


def predict(session, s: ast.Train) -> Result:
    """``predict T as ET.`TARGET` [as OUT]``: T as ``train`` would have transformed it, with the
    state it saved (named OUT, else T_predictions as for algorithms)."""
    learner = _learner(s.format, "predict")
    version, state = fitted.load(session, s.path, learner.name)
    table = learner.transform(state, session.catalog.arrow(s.table), s.table)
    output = s.output or f"{s.table}_predictions"
    session.catalog.add_arrow(output, table, f"predict {learner.name}.`{s.path}`")
    return Result(s, f"{output}: {table.num_rows} rows ({learner.name} {s.path} version {version})",
                  table=table.slice(0, PREVIEW_ROWS), num_rows=table.num_rows, name=output)


def run(session, s: ast.Train) -> Result:
    """``run|train T as NAME.`PATH` where ... [as OUT];``: the ET's output, named OUT when given.
    An option the ET does not know is an error naming the known ones (a typo such as ``rountAt``
    would otherwise go unnoticed), as for algorithms and data sources."""
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
