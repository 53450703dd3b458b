"""``modelList``, ``modelParams`` and ``modelExplain``: what the built-in algorithms are, their
parameters, and what a trained model learned (``load modelExplain.`db.rf` where alg="RandomForest"``)."""

from __future__ import annotations

from .. import learning
from .base import DataSource, Param


def _loader(kind: str):
    def load(session, s) -> None:
        session.catalog.add_arrow(s.table, learning.LOADERS[kind](session, s), f"{s.format}.`{s.path}`")

    return load


SOURCES = (
    DataSource("modelList", "the built-in algorithms of train/predict/register (load modelList.`` as t)",
               _loader("modellist")),
    DataSource("modelParams", "an algorithm's parameters with their defaults and docs (load modelParams.`ALG` as t)",
               _loader("modelparams")),
    DataSource("modelExplain", "what a trained model learned: feature importances or coefficients",
               _loader("modelexplain"), params=(Param("alg", "", "the algorithm the model was trained with"),)),
)
