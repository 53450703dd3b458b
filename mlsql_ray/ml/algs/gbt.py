"""GBTClassifier (alias GBTs) and GBTRegressor → XGBoost: gradient-boosted trees like Spark's,
but multi-class (Spark's GBT is binary only), multi-threaded, histogram-based, and saved in
XGBoost's own JSON model format."""

from __future__ import annotations

from ..algorithm import CLASSIFIER, REGRESSOR, Algorithm, spark_param, to_int
from .common import SEED


def _fraction(text: str) -> float:
    return {"auto": 1.0, "all": 1.0, "onethird": 1 / 3}.get(text) or float(text)


PARAMS = (
    spark_param("maxIter", "n_estimators", to_int, 20, "number of boosting rounds (trees)"),
    spark_param("maxDepth", "max_depth", to_int, 5, "maximum depth of a tree"),
    spark_param("stepSize", "learning_rate", float, 0.1, "learning rate (shrinkage)"),
    spark_param("subsamplingRate", "subsample", float, 1.0, "fraction of rows each tree is trained on"),
    spark_param("maxBins", "max_bin", to_int, 32, "histogram bins per feature"),
    spark_param("minInstancesPerNode", "min_child_weight", float, 1.0, "minimum weight (rows) in a leaf"),
    spark_param("minInfoGain", "gamma", float, 0.0, "minimum loss reduction of a split"),
    spark_param("featureSubsetStrategy", "colsample_bynode", str, "all",
          "fraction of features tried per split (all, onethird or a number)", adapt=_fraction),
    spark_param("checkpointInterval", None, to_int, 10, "accepted for Spark compatibility; no effect"),
    SEED,
)


def _classifier(kwargs: dict, n_samples: int):
    from xgboost import XGBClassifier  # heavy: XGBoost

    return XGBClassifier(tree_method="hist", **kwargs)


def _regressor(kwargs: dict, n_samples: int):
    from xgboost import XGBRegressor  # heavy: XGBoost

    return XGBRegressor(tree_method="hist", **kwargs)


CLASSIFIER_ALG = Algorithm(name="GBTClassifier", kind=CLASSIFIER, library="xgboost",
                           implementation="xgboost.XGBClassifier", params=PARAMS, build=_classifier,
                           threads_param="n_jobs")
ALGORITHMS = (
    CLASSIFIER_ALG,
    Algorithm(name="GBTs", kind=CLASSIFIER, library="xgboost", implementation="xgboost.XGBClassifier",
              params=PARAMS, build=_classifier, threads_param="n_jobs"),
    Algorithm(name="GBTRegressor", kind=REGRESSOR, library="xgboost", implementation="xgboost.XGBRegressor",
              params=PARAMS, build=_regressor, threads_param="n_jobs"),
)
