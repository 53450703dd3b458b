"""``ScalerInPlace`` (``ml/feature/scale.md``) and ``NormalizeInPlace`` (``ml/feature/normalize.md``):
columns rescaled in place with statistics learnt at ``train`` and reapplied by ``register`` and
``predict``.

``inputCols="a,b"`` names numeric columns (each scaled on its own), or one column of number lists
(each position scaled on its own). The statistics are Spark's: ``min-max`` is MinMaxScaler's (a
constant column becomes 0.5), ``standard`` is StandardScaler with mean and the sample standard
deviation (a constant column becomes 0).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...arrays import matrix
from ...errors import MLSQLError
from ...options import Param
from . import fitted
from .base import ET, Call


def _min_max(x: np.ndarray) -> dict:
    return {"min": x.min(axis=0).tolist(), "max": x.max(axis=0).tolist()}


def _apply_min_max(state: dict, x: np.ndarray) -> np.ndarray:
    low, high = np.asarray(state["min"]), np.asarray(state["max"])
    span = high - low
    return np.where(span == 0, 0.5, (x - low) / np.where(span == 0, 1, span))


def _standard(x: np.ndarray) -> dict:
    std = x.std(axis=0, ddof=1) if len(x) > 1 else np.zeros(x.shape[1])
    return {"mean": x.mean(axis=0).tolist(), "std": std.tolist()}


def _apply_standard(state: dict, x: np.ndarray) -> np.ndarray:
    mean, std = np.asarray(state["mean"]), np.asarray(state["std"])
    return np.where(std == 0, 0.0, (x - mean) / np.where(std == 0, 1, std))


#: scaleMethod → (fit: rows × values → state, apply: state, rows × values → rows × values)
SCALER_METHODS = {"min-max": (_min_max, _apply_min_max)}
NORMALIZE_METHODS = {"standard": (_standard, _apply_standard)}


def _values(table: pa.Table, names: list[str], et: str, table_name: str) -> tuple[np.ndarray, bool]:
    """(rows × values of the columns, whether it is one list column)."""
    kinds = [fitted.column_of(table, n, table_name, et).type for n in names]
    vector = len(names) == 1 and (pa.types.is_list(kinds[0]) or pa.types.is_fixed_size_list(kinds[0])
                                  or pa.types.is_large_list(kinds[0]))
    for name, kind in zip(names, kinds):
        inner = kind.value_type if vector else kind
        if not (pa.types.is_integer(inner) or pa.types.is_floating(inner) or pa.types.is_decimal(inner)):
            raise MLSQLError(f"{et}: inputCols column {name!r} must hold numbers"
                             f"{' (or, alone, lists of numbers)' if not vector else ''}, not {kind}")
        if table.column(name).null_count:
            raise MLSQLError(f"{et}: inputCols column {name!r} has nulls; fill or filter them first")
    if vector:
        return matrix(table.column(names[0]), np.float64), True
    return np.column_stack([matrix(table.column(n), np.float64)[:, 0] for n in names]), False


def _method(call: Call, methods: dict, default: str, et: str) -> str:
    name = call.option("scaleMethod", default).strip()
    if name not in methods:
        raise MLSQLError(f"{et}: scaleMethod {name!r} is not supported (supported: {', '.join(methods)})")
    if call.flag("removeOutlierValue", False):
        raise MLSQLError(f"{et}: removeOutlierValue=\"true\" is not supported yet")
    return name


def _learner(et: str, methods: dict, default: str) -> fitted.Learner:
    def fit(table: pa.Table, call: Call) -> dict:
        names = call.columns("inputCols", table.column_names, et)
        x, vector = _values(table, names, et, call.table)
        method = _method(call, methods, default, et)
        if len(x) == 0:
            raise MLSQLError(f"{et}: {call.table} has no rows to learn from")
        return {"method": method, "inputCols": names, "vector": vector, **methods[method][0](x)}

    def transform(state: dict, table: pa.Table, table_name: str) -> pa.Table:
        names = state["inputCols"]
        x, vector = _values(table, names, et, table_name)
        if vector != state["vector"]:
            raise MLSQLError(f"{et}: {names[0]!r} of {table_name} must be "
                             f"{'a list of numbers' if state['vector'] else 'numeric'}, as it was at train")
        scaled = scale(state, x)
        if vector:
            return table.set_column(table.schema.get_field_index(names[0]), names[0],
                                    pa.array(list(scaled), pa.list_(pa.float64())))
        for i, name in enumerate(names):
            table = table.set_column(table.schema.get_field_index(name), name, pa.array(scaled[:, i], pa.float64()))
        return table

    def scale(state: dict, x: np.ndarray) -> np.ndarray:
        expected = len(state[next(k for k in state if k not in ("method", "inputCols", "vector"))])
        if x.shape[1] != expected:
            raise MLSQLError(f"the function was trained on {expected} values per row, not {x.shape[1]}")
        return methods[state["method"]][1](state, x)

    return fitted.Learner(et, fit, transform, fitted.on_number_rows(scale))


_PARAMS = (
    Param("inputCols", "", "the numeric columns to rescale, comma-separated, or one column of number lists"),
    Param("removeOutlierValue", "false", "replace outliers by the median first (only \"false\" for now)"),
)


def _example(name: str, method: str) -> str:
    """The script of Byzer's page for ``name``: train on the doc's rows, register, apply."""
    return f"""set jsonStr='''
{{"a":1,    "b":100, "label":0.0}}
{{"a":100,  "b":100, "label":1.0}}
{{"a":1000, "b":100, "label":0.0}}
{{"a":10,   "b":100, "label":0.0}}
{{"a":1,    "b":100, "label":1.0}}
''';
load jsonStr.`jsonStr` as data;
train data as {name}.`db.{name.lower()}` where inputCols="a,b" and scaleMethod="{method}" as featurize_table;
register {name}.`db.{name.lower()}` as scale_convert;
select scale_convert(array(cast(7.0 as double), cast(8.0 as double))) as features as output;
"""


SCALER = _learner("ScalerInPlace", SCALER_METHODS, "min-max")
NORMALIZER = _learner("NormalizeInPlace", NORMALIZE_METHODS, "standard")

ETS = (
    ET("ScalerInPlace", "rescale numeric columns in place (min-max); register and predict apply the learnt range",
       SCALER.train, (*_PARAMS, Param("scaleMethod", "min-max", "how to rescale: min-max")), kind="feature engineer",
       learner=SCALER, example=_example("ScalerInPlace", "min-max")),
    ET("NormalizeInPlace", "standardize numeric columns in place (mean 0, sample std 1); register and predict "
       "apply them", NORMALIZER.train, (*_PARAMS, Param("scaleMethod", "standard", "how to normalize: standard")),
       kind="feature engineer", learner=NORMALIZER,
       example=_example("NormalizeInPlace", "standard")),
)
