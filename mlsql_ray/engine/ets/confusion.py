"""``ConfusionMatrix`` (``ml/feature/confusion_matrix.md``): how actual values (``actualCol``)
meet predicted ones (``predictCol``). ``train`` returns the matrix (rows: actual, columns:
predicted, both in sorted order; the first column is Byzer's ``act\\prt``) and saves it to
``TARGET/data``; ``TARGET/detail`` gets the per-label counts and rates (one-vs-rest), with
Byzer's column names (``lable`` spelt as Byzer spells it)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ...options import Param
from ...ml.ets import fitted
from ...ml.ets.base import ET, Call, input_table

NAME = "ConfusionMatrix"


def _ratio(a: float, b: float) -> float:
    return a / b if b else 0.0


#: name → (description, f(tp, tn, fp, fn))
DETAILS = {
    "TN": ("True negative [eqv with correct rejection]", lambda tp, tn, fp, fn: tn),
    "FP": ("False positive [eqv with false alarm, Type I error]", lambda tp, tn, fp, fn: fp),
    "FN": ("False negative [eqv with miss, Type II error]", lambda tp, tn, fp, fn: fn),
    "TPR": ("Sensitivity or true positive rate [eqv with hit rate, recall]", lambda tp, tn, fp, fn: _ratio(tp, tp + fn)),
    "SPC": ("Specificity or true negative rate", lambda tp, tn, fp, fn: _ratio(tn, tn + fp)),
    "PPV": ("Precision or positive predictive value", lambda tp, tn, fp, fn: _ratio(tp, tp + fp)),
    "NPV": ("Negative predictive value", lambda tp, tn, fp, fn: _ratio(tn, tn + fn)),
    "FPR": ("Fall-out or false positive rate", lambda tp, tn, fp, fn: _ratio(fp, fp + tn)),
    "FDR": ("False discovery rate", lambda tp, tn, fp, fn: _ratio(fp, fp + tp)),
    "FNR": ("Miss rate or false negative rate", lambda tp, tn, fp, fn: _ratio(fn, fn + tp)),
    "ACC": ("Accuracy", lambda tp, tn, fp, fn: _ratio(tp + tn, tp + tn + fp + fn)),
    "F1": ("F1 score: harmonic mean of precision and sensitivity", lambda tp, tn, fp, fn: _ratio(2 * tp, 2 * tp + fp + fn)),
}


def _train(session, call: Call) -> pa.Table:
    table = input_table(session, call)
    actual_col = call.column("actualCol", table.column_names, NAME)
    predict_col = call.column("predictCol", table.column_names, NAME)
    actual = [str(v) for v in table.column(actual_col).to_pylist()]
    predicted = [str(v) for v in table.column(predict_col).to_pylist()]
    labels = sorted(set(actual) | set(predicted))
    position = {label: i for i, label in enumerate(labels)}
    counts = np.zeros((len(labels), len(labels)), np.int64)
    np.add.at(counts, ([position[a] for a in actual], [position[p] for p in predicted]), 1)
    matrix = pa.table({"act\\prt": labels, **{label: counts[:, i] for i, label in enumerate(labels)}})
    rows = []
    for i, label in enumerate(labels):
        tp = int(counts[i, i])
        fp, fn = int(counts[:, i].sum()) - tp, int(counts[i].sum()) - tp
        tn = int(counts.sum()) - tp - fp - fn
        rows += [{"lable": label, "name": name, "value": str(f(tp, tn, fp, fn)), "desc": desc}
                 for name, (desc, f) in DETAILS.items()]
    fitted.save(session, call.path, NAME, {"labels": labels}, matrix)
    detail = fitted.target_path(session, call.path) / "detail"
    detail.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), detail / "part-0.parquet")
    return matrix


ETS = (
    ET(NAME, "the confusion matrix of actual and predicted values, and per-label counts and rates", _train,
       (Param("actualCol", "", "the column of actual values"), Param("predictCol", "", "the column of predictions")),
       kind="feature engineer", example="""set rawData='''
{"label":"cat","predict":"rabbit"}
{"label":"cat","predict":"dog"}
{"label":"cat","predict":"cat"}
{"label":"dog","predict":"dog"}
{"label":"cat","predict":"dog"}
''';
load jsonStr.`rawData` as data;
train data as ConfusionMatrix.`db.confusion` where actualCol="label" and predictCol="predict" as matrix;
"""),
)
