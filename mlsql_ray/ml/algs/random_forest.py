"""RandomForest → scikit-learn's RandomForestClassifier: the same algorithm as Spark's (bagged
CART trees, a feature subset per split), multi-threaded over trees, and it reports feature
importances for modelExplain."""

from __future__ import annotations

from ..algorithm import CLASSIFIER, Algorithm, spark_param, to_int
from ...options import boolean
from .common import SEED, subset_strategy


def _build(kwargs: dict, n_samples: int):
    from sklearn.ensemble import RandomForestClassifier  # heavy: scikit-learn

    rate = kwargs.pop("max_samples", 1.0)
    return RandomForestClassifier(max_samples=None if rate >= 1 else rate, **kwargs)


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
    build=_build, threads_param="n_jobs", features_dtype="float32",
),)
