"""``modelList``, ``modelParams``, ``modelExample`` and ``modelExplain``: what the built-in algorithms
are, their (and the ETs') parameters, an ET's example script, and what a trained model learned
(``load modelExplain.`db.rf` where alg="RandomForest"``)."""

from __future__ import annotations

import pyarrow as pa

from ...ml import statements as model_statements
from ...errors import MLSQLError
from ...options import Param
from .. import ets
from .base import DataSource


def _loader(kind: str):
    def load(session, s) -> None:
        session.catalog.add_arrow(s.table, model_statements.LOADERS[kind](session, s), f"{s.format}.`{s.path}`")

    return load


def _params(session, s) -> None:
    """An algorithm's parameters (``ml.statements``), or an ET's options as ``!show "et/params/ET"``
    lists them (Byzer answers both from the ET's ``explainParams``)."""
    if model_statements.is_algorithm(s.path):
        table = model_statements.LOADERS["modelparams"](session, s)
    elif s.path.lower() in ets.ETS:
        table = ets.params(s.path)
    else:
        raise MLSQLError(f"modelParams.`{s.path}`: no algorithm or ET of that name (algorithms: load modelList.`` as t; "
                         f"ETs: {', '.join(e.name for e in ets.ETS.values())})")
    session.catalog.add_arrow(s.table, table, f"{s.format}.`{s.path}`")


def _example(session, s) -> None:
    """Byzer's ModelExample rows (name, value): name, codeExample, codeType, doc, docType; the
    example is the one the ET's registry entry holds ("" when it has none, as in Byzer)."""
    if s.path.lower() in ets.ETS:
        et = ets.find(s.path)
        name, code, doc = et.name, et.example, et.description
    elif model_statements.is_algorithm(s.path):
        name, code, doc = s.path, "", ""
    else:
        raise MLSQLError(f"modelExample.`{s.path}`: no ET or algorithm of that name (ETs: {', '.join(e.name for e in ets.ETS.values())}; "
                         f"algorithms: load modelList.`` as t;)")
    table = pa.table({"name": ["name", "codeExample", "codeType", "doc", "docType"],
                      "value": [name, code, "sql", doc, "text"]})
    session.catalog.add_arrow(s.table, table, f"{s.format}.`{s.path}`")


SOURCES = (
    DataSource("modelList", "the built-in algorithms of train/predict/register (load modelList.`` as t)",
               _loader("modellist")),
    DataSource("modelParams", "an algorithm's parameters with their defaults and docs, or an ET's options "
               "(load modelParams.`ALG` as t)", _params),
    DataSource("modelExample", "an ET's example script, name and doc as rows (name, value): load modelExample.`JsonExpandExt` as t",
               _example),
    DataSource("modelExplain", "what a trained model learned: feature importances or coefficients",
               _loader("modelexplain"), params=(Param("alg", "", "the algorithm the model was trained with"),
                       Param("index", "", "which train's models: the N of modelPath TARGET/_model_N/... (default: the latest)"))),
)
