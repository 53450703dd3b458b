"""``PredictionEva``: how good a binary classifier's scores are, as Byzer's ``SQLPredictionEva``
prints it — one ``metrics``/``value`` row (both text) per metric: ``threshold``, ``precision``,
``recall``, ``f1`` (a row is predicted positive when ``probCol >= threshold``, and is positive
when ``labelCol`` equals ``labelValue``; 0/0 is ``NaN``, as Scala divides), ``auc`` and ``prc``
(the areas under the ROC and precision-recall curves of Spark's ``BinaryClassificationMetrics``:
one point per distinct score, highest first, a label above 0.5 counting as positive; trapezoids;
the PR curve starts at recall 0 with the first point's precision). Numbers are printed as Scala's
``Double.toString``."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...arrays import matrix
from ...errors import MLSQLError
from ...options import Param
from ...ml.ets.base import ET, Call, input_table
from ...spark import java_numbers as spark_format

NAME = "PredictionEva"


def _numbers(table: pa.Table, call: Call, option: str, default: str) -> np.ndarray:
    """The numeric column ``option`` names (Byzer reads both columns as doubles)."""
    name = call.option(option, default).strip()
    if name not in table.column_names:
        raise MLSQLError(f"{NAME}: {option} names {name!r}, which {call.table} does not have "
                         f"(columns: {', '.join(table.column_names)})")
    column = table.column(name)
    if not (pa.types.is_integer(column.type) or pa.types.is_floating(column.type) or pa.types.is_decimal(column.type)):
        raise MLSQLError(f"{NAME}: {option} {name!r} must be numeric, not {column.type}")
    if column.null_count:
        raise MLSQLError(f"{NAME}: {option} {name!r} has {column.null_count} null values")
    return matrix(column.cast(pa.float64()), np.float64)[:, 0]


def _number(call: Call, option: str, default: float) -> float:
    text = call.option(option)
    if text is None:
        return default
    try:
        return float(text)
    except ValueError:
        raise MLSQLError(f"{NAME}: {option} must be a number, not {text!r}") from None


def _ratio(a: float, b: float) -> float:
    """Scala's ``a / b`` of counts where b = 0 means a = 0: NaN."""
    return a / b if b else float("nan")


def _area(xs: np.ndarray, ys: np.ndarray) -> float:
    """Spark's AreaUnderCurve: the trapezoids between consecutive points, summed in order."""
    area = 0.0
    for x1, x2, y1, y2 in zip(xs[:-1], xs[1:], ys[:-1], ys[1:]):
        area += (x2 - x1) * (y2 + y1) / 2.0
    return area


def _curves(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """(areaUnderROC, areaUnderPR) of Spark's BinaryClassificationMetrics (numBins 0)."""
    distinct, inverse = np.unique(-scores, return_inverse=True)  # highest score first
    positive = labels > 0.5
    tp = np.cumsum(np.bincount(inverse, weights=positive, minlength=len(distinct)))
    fp = np.cumsum(np.bincount(inverse, weights=~positive, minlength=len(distinct)))
    positives, negatives = tp[-1], fp[-1]
    recall = tp / positives if positives else np.zeros_like(tp)
    false_positive_rate = fp / negatives if negatives else np.zeros_like(fp)
    precision = np.where(tp + fp == 0, 1.0, tp / np.maximum(tp + fp, 1))
    roc = _area(np.concatenate([[0.0], false_positive_rate, [1.0]]), np.concatenate([[0.0], recall, [1.0]]))
    pr = _area(np.concatenate([[0.0], recall]), np.concatenate([[precision[0]], precision]))
    return roc, pr


def _evaluate(session, call: Call) -> pa.Table:
    table = input_table(session, call)
    scores = _numbers(table, call, "probCol", "prob")
    labels = _numbers(table, call, "labelCol", "label")
    if len(scores) == 0:
        raise MLSQLError(f"{NAME}: {call.table} has no rows to evaluate")
    threshold = _number(call, "threshold", 0.5)
    positive_value = _number(call, "labelValue", 1.0)
    predicted, actual = scores >= threshold, labels == positive_value
    tp, fp = float(np.sum(predicted & actual)), float(np.sum(predicted & ~actual))
    fn = float(np.sum(~predicted & actual))
    auc, prc = _curves(scores, labels)
    metrics = {"threshold": threshold, "precision": _ratio(tp, tp + fp), "recall": _ratio(tp, tp + fn),
               "f1": _ratio(2 * tp, 2 * tp + fp + fn), "auc": auc, "prc": prc}
    return pa.table({"metrics": list(metrics), "value": [spark_format.java_double(float(v)) for v in metrics.values()]})


ETS = (
    ET(NAME, "precision, recall, f1, auc and prc of a binary classifier's scores", _evaluate, (
        Param("labelCol", "label", "the column of actual labels (numbers)"),
        Param("probCol", "prob", "the column of scores: the probability of the positive label"),
        Param("labelValue", "1.0", "the label of the positive rows"),
        Param("threshold", "0.5", "the score from which a row is predicted positive"),
    ), kind="undefined", example="""set jsonStr='''
{"prob":0.9,"label":1.0}
{"prob":0.8,"label":0.0}
{"prob":0.7,"label":1.0}
{"prob":0.3,"label":1.0}
{"prob":0.2,"label":0.0}
''';
load jsonStr.`jsonStr` as res3;
run res3 as PredictionEva.`` where labelCol='label' and probCol='prob' as metrics;
"""),
)
