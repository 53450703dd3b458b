"""``Discretizer`` (``ml/feature/discretizer/``): numeric columns to bucket numbers, one
``fitParam.N`` group per column. ``method="bucketizer"`` takes the bucket edges
(``splitArray="-inf,0.0,1.0,inf"``), ``method="quantile"`` learns them (``numBuckets``) as Spark's
QuantileDiscretizer does: the edges are values of the column at ranks ceil(i/numBuckets × rows)
(exact, which is what Spark's approxQuantile returns on small data), duplicates dropped. Buckets
are Spark's Bucketizer's: [x, y), the last one closed; the result is the bucket's index as a double.

``register Discretizer.`TARGET` as f`` then maps ``f(array(v0, v1, ...))`` (one value per group,
in group order) to their buckets.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pyarrow as pa

from ...arrays import matrix
from ...errors import MLSQLError
from ..datasources.base import Param
from . import fitted
from .base import ET, Call

_GROUP = re.compile(r"fitParam\.(\d+)\.(\w+)")
NAME = "Discretizer"


def _groups(call: Call) -> list[dict]:
    groups: dict[int, dict] = {}
    for key, value in call.options.items():
        match = _GROUP.fullmatch(key)
        if match:
            groups.setdefault(int(match.group(1)), {})[match.group(2)] = value
    if not groups:
        raise MLSQLError(f"{NAME} needs one `fitParam.N.inputCol`=\"...\" per column to discretize")
    return [groups[i] for i in sorted(groups)]


def _splits_given(group: dict, index: int) -> list[float]:
    text = group.get("splitArray", "")
    try:
        splits = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise MLSQLError(f"{NAME}: fitParam.{index}.splitArray must be numbers (and -inf, inf), not {text!r}") from None
    if len(splits) < 3 or any(b <= a for a, b in zip(splits, splits[1:])):
        raise MLSQLError(f"{NAME}: fitParam.{index}.splitArray needs at least 3 strictly increasing edges, "
                         f"e.g. \"-inf,0.0,1.0,inf\"; got {text!r}")
    return splits


def _splits_learnt(group: dict, index: int, values: np.ndarray) -> list[float]:
    try:
        buckets = int(group.get("numBuckets", "2"))
    except ValueError:
        raise MLSQLError(f"{NAME}: fitParam.{index}.numBuckets must be a whole number") from None
    if buckets < 2:
        raise MLSQLError(f"{NAME}: fitParam.{index}.numBuckets must be at least 2, not {buckets}")
    ordered = np.sort(values[~np.isnan(values)])
    if len(ordered) == 0:
        raise MLSQLError(f"{NAME}: fitParam.{index}.inputCol has no values to learn buckets from")
    edges = [float(ordered[max(math.ceil(i / buckets * len(ordered)), 1) - 1]) for i in range(1, buckets)]
    return [-math.inf, *sorted(set(edges)), math.inf]


#: method → (group options, its index, the column's values) → bucket edges
METHODS = {"bucketizer": lambda group, index, values: _splits_given(group, index), "quantile": _splits_learnt}


def bucket(splits: list[float], values: np.ndarray) -> np.ndarray:
    """Spark's Bucketizer: bucket i holds [splits[i], splits[i+1]), the last one its upper edge too."""
    edges = np.asarray(splits)
    out = np.searchsorted(edges, values, side="right") - 1.0
    out[values == edges[-1]] = len(edges) - 2
    if ((out < 0) | (out > len(edges) - 2) | np.isnan(values)).any():
        raise MLSQLError(f"{NAME}: a value is outside the bucket edges {splits} (or NaN)")
    return out


def _fit(table: pa.Table, call: Call) -> dict:
    method = call.option("method", "bucketizer").strip()
    if method not in METHODS:
        raise MLSQLError(f"{NAME}: method {method!r} is not supported (supported: {', '.join(METHODS)})")
    state = {"method": method, "groups": []}
    for index, group in enumerate(_groups(call)):
        column = group.get("inputCol") or group.get("inputCols")
        if column not in table.column_names:
            raise MLSQLError(f"{NAME}: fitParam.{index}.inputCol must name a column of {call.table} "
                             f"(columns: {', '.join(table.column_names)}), not {column!r}")
        splits = METHODS[method](group, index, _numbers(table, column, f"fitParam.{index}.inputCol"))
        state["groups"].append({"inputCol": column, "outputCol": group.get("outputCol", column), "splits": splits})
    return state


def _numbers(table: pa.Table, column: str, what: str) -> np.ndarray:
    kind = table.schema.field(column).type
    if not (pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind)):
        raise MLSQLError(f"{NAME}: {what} {column!r} must be numeric, not {kind}")
    return matrix(table.column(column).cast(pa.float64()).fill_null(math.nan), np.float64)[:, 0]


def _transform(state: dict, table: pa.Table, table_name: str) -> pa.Table:
    out = table
    for group in state["groups"]:
        fitted.column_of(table, group["inputCol"], table_name, NAME)
        buckets = bucket(group["splits"], _numbers(table, group["inputCol"], "inputCol"))
        out = fitted.replace_or_append(out, group["outputCol"], pa.array(buckets, pa.float64()))
    return out


def _apply(state: dict, x: np.ndarray) -> np.ndarray:
    groups = state["groups"]
    if x.shape[1] != len(groups):
        raise MLSQLError(f"the function takes {len(groups)} values per row (one per fitParam group), not {x.shape[1]}")
    return np.column_stack([bucket(g["splits"], x[:, i]) for i, g in enumerate(groups)])


LEARNER = fitted.Learner(NAME, _fit, _transform, fitted.on_number_rows(_apply))

ETS = (
    ET(NAME, "numeric columns to bucket numbers: given edges (bucketizer) or learnt quantiles (quantile)", LEARNER.train,
       (Param("method", "bucketizer", "bucketizer (fitParam.N.splitArray) or quantile (fitParam.N.numBuckets)"),
        Param("fitParam.N.inputCol", "", "the numeric column of group N"),
        Param("fitParam.N.outputCol", "", "where group N's buckets go (default: in place of inputCol)"),
        Param("fitParam.N.splitArray", "", "bucketizer: the edges, e.g. -inf,0.0,1.0,inf ([x, y) buckets)"),
        Param("fitParam.N.numBuckets", "2", "quantile: how many buckets to learn")),
       kind="feature engineer", learner=LEARNER, example="""set jsonStr='''
{"features":[5.1,3.5,1.4,0.2],"label":0.0}
{"features":[4.4,2.9,1.4,0.2],"label":0.0}
{"features":[4.7,3.2,1.3,0.2],"label":1.0}
''';
load jsonStr.`jsonStr` as data;
select features[0] AS a ,features[1] as b from data as data1;
train data1 as Discretizer.`db.discretizer` where method="bucketizer"
and `fitParam.0.inputCol`="a" and `fitParam.0.splitArray`="-inf,0.0,1.0,inf"
and `fitParam.1.inputCol`="b" and `fitParam.1.splitArray`="-inf,0.0,1.0,inf" as buckets;
register Discretizer.`db.discretizer` as bucket_of;
select bucket_of(array(7,8)) as features as output;
"""),
)
