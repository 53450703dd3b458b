"""Parameters several algorithms share, spelled once."""

from __future__ import annotations

from ..algorithm import spark_param, to_int

SEED = spark_param("seed", "random_state", to_int, 0, "random seed (Spark's default is fixed per class; ours is 0)")
MAX_ITER = spark_param("maxIter", "max_iter", to_int, 100, "maximum number of iterations")
TOL = spark_param("tol", "tol", float, 1e-6, "convergence tolerance")


def subset_strategy(text: str):
    """Spark's featureSubsetStrategy → max_features: auto/sqrt/log2/all/onethird or a fraction."""
    named = {"auto": "sqrt", "sqrt": "sqrt", "log2": "log2", "all": None, "onethird": 1 / 3}
    if text in named:
        return named[text]
    value = float(text)
    if not 0 < value <= 1:
        raise ValueError(f"expected auto, all, onethird, sqrt, log2 or a fraction in (0, 1], not {text!r}")
    return value
