"""``modelList``, ``modelParams``, ``modelExample`` and ``modelExplain``: what the built-in algorithms
are, their (and the ETs') parameters, an ET's example script, and what a trained model learned
(``load modelExplain.`db.rf` where alg="RandomForest"``); each asks the kind of model its path
names (``engine.kinds``)."""

from __future__ import annotations

import pyarrow as pa

from ...errors import MLSQLError
from ...ml.kinds import ALGORITHMS
from ...options import Param
from ..kinds import FEATURE_ETS, KINDS
from .base import DataSource


def _list(session, s) -> None:
    session.catalog.add_arrow(s.table, ALGORITHMS.listing(), f"{s.format}.`{s.path}`")


def _explain(session, s) -> None:
    session.catalog.add_arrow(s.table, ALGORITHMS.explain(session, s), f"{s.format}.`{s.path}`")


def _params(session, s) -> None:
    """An algorithm's parameters, or an ET's options as ``!show "et/params/ET"`` lists them (Byzer
    answers both from the ET's ``explainParams``)."""
    kind = KINDS.find(s.path, "params")
    if kind is None:
        raise MLSQLError(f"modelParams.`{s.path}`: no algorithm or ET of that name (algorithms: load modelList.`` as t; "
                         f"ETs: {', '.join(FEATURE_ETS.names())})")
    session.catalog.add_arrow(s.table, kind.params(s.path), f"{s.format}.`{s.path}`")


def _example(session, s) -> None:
    """Byzer's ModelExample rows (name, value): name, codeExample, codeType, doc, docType; the
    example is the one the ET's registry entry holds ("" when it has none, as in Byzer)."""
    kind = KINDS.find(s.path, "example")
    if kind is None:
        raise MLSQLError(f"modelExample.`{s.path}`: no ET or algorithm of that name (ETs: {', '.join(FEATURE_ETS.names())}; "
                         f"algorithms: load modelList.`` as t;)")
    name, code, doc = kind.example(s.path)
    table = pa.table({"name": ["name", "codeExample", "codeType", "doc", "docType"],
                      "value": [name, code, "sql", doc, "text"]})
    session.catalog.add_arrow(s.table, table, f"{s.format}.`{s.path}`")


SOURCES = (
    DataSource("modelList", "the built-in algorithms of train/predict/register (load modelList.`` as t)", _list),
    DataSource("modelParams", "an algorithm's parameters with their defaults and docs, or an ET's options "
               "(load modelParams.`ALG` as t)", _params),
    DataSource("modelExample", "an ET's example script, name and doc as rows (name, value): load modelExample.`JsonExpandExt` as t",
               _example),
    DataSource("modelExplain", "what a trained model learned: feature importances or coefficients",
               _explain, params=(Param("alg", "", "the algorithm the model was trained with"),
                       Param("index", "", "which train's models: the N of modelPath TARGET/_model_N/... (default: the latest)"))),
)
