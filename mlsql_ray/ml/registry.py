"""Every algorithm ``train`` knows, by Byzer's name (case-insensitive), plus ``AutoML``, which is
not an algorithm but a plan: one group per algorithm in its ``algos`` option."""

from __future__ import annotations

from ..errors import MLSQLError
from .algorithm import Algorithm
from .algs import als, clustering, gbt, keras_classifier, linear, naive_bayes, random_forest

ALGORITHMS: dict[str, Algorithm] = {
    alg.name.lower(): alg
    for module in (random_forest, gbt, linear, naive_bayes, clustering, keras_classifier, als)
    for alg in module.ALGORITHMS
}
AUTOML = "AutoML"
AUTOML_DEFAULT = ("GBTs", "LinearRegression", "LogisticRegression", "NaiveBayes", "RandomForest")


def names() -> list[str]:
    return [alg.name for alg in ALGORITHMS.values()] + [AUTOML]


def is_known(name: str) -> bool:
    return name.lower() in ALGORITHMS or name.lower() == AUTOML.lower()


def get(name: str) -> Algorithm:
    alg = ALGORITHMS.get(name.lower())
    if alg is None:
        raise MLSQLError(f"unknown algorithm {name!r}: known are {', '.join(names())}")
    return alg
