"""Evaluation as Spark's evaluators define it, from numpy arrays: MulticlassClassificationEvaluator
(f1 = weighted F-measure, weightedPrecision, weightedRecall, accuracy; a label's weight is its
share of the true labels, an undefined precision or F-measure counts as 0),
RegressionEvaluator (rmse, mse, mae, r2), ClusteringEvaluator (silhouette, squared Euclidean) and
LDA's logPerplexity."""

from __future__ import annotations

import numpy as np

#: metrics where larger is better (the others, errors, are better small)
HIGHER_IS_BETTER = {"f1", "weightedPrecision", "weightedRecall", "accuracy", "r2", "silhouette"}


def classification(truth: np.ndarray, predicted: np.ndarray, n_classes: int) -> dict[str, float]:
    """``truth``/``predicted``: class indices in [0, n_classes)."""
    n = len(truth)
    confusion = np.bincount(truth * n_classes + predicted, minlength=n_classes * n_classes).reshape(n_classes, n_classes)
    hits = np.diag(confusion).astype(float)
    true_counts, predicted_counts = confusion.sum(axis=1), confusion.sum(axis=0)
    precision = np.divide(hits, predicted_counts, out=np.zeros(n_classes), where=predicted_counts > 0)
    recall = np.divide(hits, true_counts, out=np.zeros(n_classes), where=true_counts > 0)
    both = precision + recall
    f_measure = np.divide(2 * precision * recall, both, out=np.zeros(n_classes), where=both > 0)
    weights = true_counts / n
    return {"f1": float(weights @ f_measure), "weightedPrecision": float(weights @ precision),
            "weightedRecall": float(weights @ recall), "accuracy": float(hits.sum() / n)}


def regression(truth: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    errors = truth - predicted
    mse = float(np.mean(errors ** 2))
    total = float(np.sum((truth - truth.mean()) ** 2))
    return {"rmse": mse ** 0.5, "mse": mse, "mae": float(np.mean(np.abs(errors))),
            "r2": 1 - float(np.sum(errors ** 2)) / total if total else 0.0}


def silhouette(x: np.ndarray, clusters: np.ndarray) -> dict[str, float]:
    from sklearn.metrics import silhouette_score  # heavy: scikit-learn

    if len(np.unique(clusters)) < 2:
        return {}
    return {"silhouette": float(silhouette_score(x, clusters, metric="sqeuclidean"))}


def text(metrics: dict[str, float]) -> str:
    """Byzer's one-line form: ``f1: 0.76 weightedPrecision: 0.84 ...``."""
    return " ".join(f"{name}: {value!r}" for name, value in metrics.items())


def best(groups: list, metric: str):
    """The group whose ``metrics`` are best on ``metric`` (None when none has it)."""
    scored = [g for g in groups if metric in g.metrics]
    if not scored:
        return None
    sign = 1 if metric in HIGHER_IS_BETTER else -1
    return max(scored, key=lambda g: (sign * g.metrics[metric], -g.index))
