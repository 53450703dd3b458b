"""LogisticRegression and LinearRegression → scikit-learn, with Spark's objective: Spark
minimises mean loss + regParam·(α‖w‖₁ + (1−α)/2‖w‖²) on standardised features, so regParam is
converted with the row count (C = 1/(n·regParam)), elasticNetParam is l1_ratio, and
``standardization`` scales features first (without centring, as Spark)."""

from __future__ import annotations

import numpy as np

from ..algorithm import CLASSIFIER, REGRESSOR, Algorithm, spark_param
from ...options import boolean
from .common import MAX_ITER, TOL

PARAMS = (
    spark_param("regParam", "regParam", float, 0.0, "regularisation strength (0: none)"),
    spark_param("elasticNetParam", "elasticNetParam", float, 0.0, "mix of L1 (1) and L2 (0) regularisation"),
    MAX_ITER,
    TOL,
    spark_param("fitIntercept", "fit_intercept", boolean, True, "fit an intercept term"),
    spark_param("standardization", "standardization", boolean, True, "scale features to unit variance first"),
)


def _scaled(estimator, standardization: bool):
    if not standardization:
        return estimator
    from sklearn.pipeline import make_pipeline  # heavy: scikit-learn
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(with_mean=False), estimator)


def _logistic(kwargs: dict, n_samples: int):
    from sklearn.linear_model import LogisticRegression  # heavy: scikit-learn

    reg, l1 = kwargs.pop("regParam"), kwargs.pop("elasticNetParam")
    standardization = kwargs.pop("standardization")
    c = np.inf if reg == 0 else 1 / (max(n_samples, 1) * reg)
    solver = "saga" if reg and l1 else "lbfgs"
    return _scaled(LogisticRegression(C=c, l1_ratio=l1 if reg else 0.0, solver=solver, **kwargs), standardization)


def _linear(kwargs: dict, n_samples: int):
    from sklearn.linear_model import ElasticNet, LinearRegression, Ridge  # heavy: scikit-learn

    reg, l1 = kwargs.pop("regParam"), kwargs.pop("elasticNetParam")
    standardization = kwargs.pop("standardization")
    if reg == 0:
        kwargs.pop("max_iter"), kwargs.pop("tol")
        return _scaled(LinearRegression(**kwargs), standardization)
    if l1 == 0:
        return _scaled(Ridge(alpha=reg * n_samples, **kwargs), standardization)
    return _scaled(ElasticNet(alpha=reg, l1_ratio=l1, **kwargs), standardization)


ALGORITHMS = (
    Algorithm(name="LogisticRegression", kind=CLASSIFIER, library="skops",
              implementation="sklearn.linear_model.LogisticRegression", params=PARAMS, build=_logistic),
    Algorithm(name="LinearRegression", kind=REGRESSOR, library="skops",
              implementation="sklearn.linear_model.LinearRegression, Ridge or ElasticNet (by regParam, elasticNetParam)",
              params=PARAMS, build=_linear),
)
