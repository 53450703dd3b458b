"""The read-only tables ``load`` offers about algorithms and models: ``modelList``,
``modelParams.`ALG``` and ``modelExplain.`TARGET```."""

from __future__ import annotations

import sys

import numpy as np
import pyarrow as pa

from . import registry
from ..options import Param
from .algorithm import CLASSIFIER, spark_param
from .predictor import FittedModel
from .store import StoredGroup


def model_list() -> pa.Table:
    algs = list(registry.ALGORITHMS.values())
    docs = [(sys.modules[a.build.__module__].__doc__ or "").strip().split("\n\n")[0].replace("\n", " ") for a in algs]
    return pa.table({"name": [a.name for a in algs] + [registry.AUTOML],
                     "algType": [a.kind for a in algs] + ["classifier"],
                     "implementation": [a.implementation for a in algs] + ["one group per algorithm in algos"],
                     "doc": docs + [f"trains {', '.join(a.name for a in registry.automl_algorithms(None, None))} (or "
                                    "algos=..., all classifiers or all regressors) and ranks them by sortedBy"]})


def _automl_params() -> tuple[Param, ...]:
    """AutoML's own options (each algorithm it trains takes the parameters that are its own)."""
    trained = ",".join(a.name for a in registry.automl_algorithms(None, None))
    return (spark_param("algos", None, str, trained, "the algorithms to train, one group each, all classifiers or all "
                  "regressors (default: the classifiers)"),
            spark_param("sortedBy", None, str, registry.AUTOML_KINDS[CLASSIFIER][0],
                  "the metric that ranks them: " + "; ".join(f"{kind}s: {', '.join(metrics)}"
                                                            for kind, metrics in registry.AUTOML_KINDS.items())))


def model_params(alg_name: str) -> pa.Table:
    if alg_name.lower() == registry.AUTOML.lower():
        params = _automl_params()
    else:
        alg = registry.get(alg_name)
        params = alg.params + alg.statement_params
    return pa.table({"param": [p.name for p in params], "defaultValue": [str(p.default) for p in params],
                     "implementationParam": [p.target or "" for p in params], "doc": [p.description for p in params]})


def _final_step(estimator):
    return estimator.steps[-1][1] if hasattr(estimator, "steps") else estimator


#: fitted attribute → what modelExplain calls it (an algorithm's own ``explain`` comes first)
EXPLAINED = (("feature_importances_", "featureImportance"), ("coef_", "coefficient"),
             ("intercept_", "intercept"), ("cluster_centers_", "clusterCenter"),
             ("components_", "topicWord"), ("feature_log_prob_", "featureLogProbability"),
             ("theta_", "classMean"))


def _explained(fitted: FittedModel) -> dict:
    """name → numbers: the algorithm's ``explain`` (ALS: parameters and shapes), else the
    fitted attributes in EXPLAINED that the model has."""
    model = _final_step(fitted.estimator)
    if fitted.algorithm.explain is not None:
        return fitted.algorithm.explain(model)
    return {label: getattr(model, attribute) for attribute, label in EXPLAINED
            if getattr(model, attribute, None) is not None}


def model_explain(groups: list[StoredGroup], what: str) -> pa.Table:
    """Per successful group the numbers that explain it (importances, coefficients, centres):
    one row per value, ``row`` the class/cluster/topic (null for one-row attributes)."""
    out = {"algIndex": [], "alg": [], "name": [], "row": [], "feature": [], "value": []}
    for group in groups:
        if group.status != "success":
            continue
        for label, values in _explained(FittedModel(group, what)).items():
            values = np.atleast_1d(np.asarray(values, dtype=np.float64))
            grid = values.reshape(1, -1) if values.ndim == 1 else values
            for r, row in enumerate(grid):
                for f, value in enumerate(row):
                    out["algIndex"].append(group.index)
                    out["alg"].append(group.alg)
                    out["name"].append(label)
                    out["row"].append(None if values.ndim == 1 else r)
                    out["feature"].append(f)
                    out["value"].append(float(value))
    return pa.table(out, schema=pa.schema([("algIndex", pa.int64()), ("alg", pa.string()), ("name", pa.string()),
                                           ("row", pa.int64()), ("feature", pa.int64()), ("value", pa.float64())]))
