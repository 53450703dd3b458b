"""RandomForest → scikit-learn's RandomForestClassifier: the same algorithm as Spark's (bagged
CART trees, a feature subset per split), multi-threaded over trees, and it reports feature
importances for modelExplain."""

from __future__ import annotations

import numpy as np

from ..algorithm import CLASSIFIER, Algorithm, spark_param, to_int
from ...options import boolean
from .common import SEED, subset_strategy


def _build(kwargs: dict, n_samples: int):
    from sklearn.ensemble import RandomForestClassifier  # heavy: scikit-learn

    rate = kwargs.pop("max_samples", 1.0)
    return RandomForestClassifier(max_samples=None if rate >= 1 else rate, **kwargs)


def _scores(forest, x: np.ndarray) -> np.ndarray:
    """The forest's ``predict_proba(x)``. On one thread (``n_jobs`` 1, a served model's), its
    trees are asked here one after another, as the forest asks them (each tree's class fractions
    for the rows as float32, ``tree_.predict``, what a tree's ``predict_proba`` answers; summed in
    order, divided by their number: the same numbers), without the forest's joblib dispatch and
    the checks of the forest and of each tree: for 40 trees those cost 1.5 ms a call whatever the
    rows, 12 times the trees' own work for the few rows of a ``/model/predict`` batch. Rows the
    checks would look at (not finite as float32) go the forest's way, which says what it says."""
    if forest.n_jobs not in (None, 1):
        return forest.predict_proba(x)
    with np.errstate(over="ignore"):  # a value no float32 holds: the forest's checks say so below
        rows = np.ascontiguousarray(x, dtype=np.float32)
    if not np.isfinite(rows).all():
        return forest.predict_proba(x)
    trees, classes = forest.estimators_, forest.n_classes_
    total = trees[0].tree_.predict(rows)[:, :classes].copy()
    for tree in trees[1:]:
        total += tree.tree_.predict(rows)[:, :classes]
    return total / len(trees)


ALGORITHMS = (Algorithm(
    name="RandomForest", kind=CLASSIFIER, library="skops",
    implementation="sklearn.ensemble.RandomForestClassifier",
    params=(
        spark_param("numTrees", "n_estimators", to_int, 20, "number of trees"),
        spark_param("maxDepth", "max_depth", to_int, 5, "maximum depth of a tree"),
        spark_param("minInstancesPerNode", "min_samples_leaf", to_int, 1, "minimum rows in a leaf"),
        spark_param("minInfoGain", "min_impurity_decrease", float, 0.0, "minimum impurity decrease of a split"),
        spark_param("featureSubsetStrategy", "max_features", str, "auto",
              "features tried per split: auto (sqrt), all, onethird, sqrt, log2 or a fraction", adapt=subset_strategy),
        spark_param("subsamplingRate", "max_samples", float, 1.0, "fraction of rows each tree is trained on"),
        spark_param("bootstrap", "bootstrap", boolean, True, "sample rows with replacement"),
        spark_param("impurity", "criterion", str, "gini", "gini or entropy"),
        spark_param("maxBins", None, to_int, 32, "accepted for Spark compatibility; exact splits are used"),
        spark_param("checkpointInterval", None, to_int, 10, "accepted for Spark compatibility; no effect"),
        SEED,
    ),
    build=_build, threads_param="n_jobs", features_dtype="float32", scores=_scores,
),)
