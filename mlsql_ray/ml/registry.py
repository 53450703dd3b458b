"""Every algorithm ``train`` knows, by Byzer's name (case-insensitive), plus ``AutoML``, which is
not an algorithm but a plan: one group per algorithm in its ``algos`` option."""

from __future__ import annotations

from ..errors import MLSQLError
from .algorithm import CLASSIFIER, REGRESSOR, Algorithm
from .algs import als, clustering, gbt, keras_classifier, linear, naive_bayes, random_forest

ALGORITHMS: dict[str, Algorithm] = {
    alg.name.lower(): alg
    for module in (random_forest, gbt, linear, naive_bayes, clustering, keras_classifier, als)
    for alg in module.ALGORITHMS
}
AUTOML = "AutoML"
#: ml/algs/auto_ml.md's default algos; AutoML trains those of the kind it compares
AUTOML_DEFAULT = ("GBTs", "LinearRegression", "LogisticRegression", "NaiveBayes", "RandomForest")
#: the kinds AutoML compares, each with the metrics ``sortedBy`` may rank it by, default first: it
#: picks one model by one metric, so ``algos`` must all be of one kind (auto_ml.md: classifiers,
#: by accuracy or f1, ...; regressors, by rmse, ..., too)
AUTOML_KINDS = {CLASSIFIER: ("accuracy", "f1", "weightedPrecision", "weightedRecall"), REGRESSOR: ("rmse", "r2", "mse", "mae")}


def names() -> list[str]:
    return [alg.name for alg in ALGORITHMS.values()] + [AUTOML]


def is_known(name: str) -> bool:
    return name.lower() in ALGORITHMS or name.lower() == AUTOML.lower()


def get(name: str) -> Algorithm:
    alg = ALGORITHMS.get(name.lower())
    if alg is None:
        raise MLSQLError(f"unknown algorithm {name!r}: known are {', '.join(names())}")
    return alg


def automl_algorithms(algos: str | None, sorted_by: str | None) -> list[Algorithm]:
    """What ``AutoML`` trains: ``algos`` (else the default ones of the compared kind), all of the
    kind ``sortedBy`` ranks (without it: of the first algorithm's kind, classifiers by default)."""
    names = [n.strip() for n in (",".join(AUTOML_DEFAULT) if algos is None else algos).split(",") if n.strip()]
    algorithms = [get(n) for n in names]
    if sorted_by is not None:
        kind = next((k for k, metrics in AUTOML_KINDS.items() if sorted_by in metrics), None)
        if kind is None:
            raise MLSQLError(f"AutoML cannot rank by sortedBy={sorted_by!r}: {_automl_choices()}")
        why = f"sortedBy={sorted_by!r} ranks them"
    elif algos is not None and algorithms and algorithms[0].kind in AUTOML_KINDS:
        kind, why = algorithms[0].kind, f"{algorithms[0].name} is one"
    else:
        kind, why = CLASSIFIER, "the default"
    if algos is None:
        return [alg for alg in algorithms if alg.kind == kind]
    if not algorithms:
        raise MLSQLError(f"AutoML algos={algos!r} names no algorithm: {_automl_choices()}")
    for alg in algorithms:
        if alg.kind != kind:
            raise MLSQLError(f"AutoML compares algorithms of one kind, here {kind}s ({why}): {alg.name} is a "
                             f"{alg.kind} model; {_automl_choices()}")
    return algorithms


def _automl_choices() -> str:
    kinds = [f"{kind}s ({', '.join(a.name for a in ALGORITHMS.values() if a.kind == kind)}) ranked by sortedBy "
             f"{metrics[0]} (default), {', '.join(metrics[1:])}" for kind, metrics in AUTOML_KINDS.items()]
    return "algos lists " + ", or ".join(kinds)
