"""``Discretizer`` (``ml/feature/discretizer/``): numeric columns to bucket numbers, one
``fitParam.N`` group per column, or one column with the options at the top (``inputCol``,
``splitArray``/``bucketSplits``, ``numBuckets``: the single-column form of Byzer's first
SQLDiscretizer; ``splits``, Spark's Bucketizer's name: that of Byzer's current one).
``method="bucketizer"`` takes the bucket edges (``splitArray="-inf,0.0,1.0,inf"``; the
single-column form's default, as Byzer's), ``method="quantile"`` learns them (``numBuckets``)
as Spark's QuantileDiscretizer does: the edges are values of the column at ranks
ceil(i/numBuckets × rows) (exact, which is what Spark's approxQuantile returns on small data),
duplicates dropped. Buckets are Spark's Bucketizer's: [x, y), the last one closed; the result is
the bucket's index as a double, null for null. ``handleInvalid`` is Byzer's: ``keep`` (the
default) puts NaN in one more bucket, ``error`` refuses it, ``skip`` drops its rows at train and
predict (and refuses it in the registered function, as Byzer's does); a value outside the edges
is an error.

``register Discretizer.`TARGET` as f`` then maps ``f(array(v0, v1, ...))`` (one value per group,
in group order) to their buckets, or, trained in the single-column form, ``f(v)`` to its bucket;
trained with ``splits`` (Byzer's current SQLDiscretizer, whose function takes arrays whatever the
form), ``f(array(v))`` to ``array(its bucket)``.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...arrays import matrix
from ...errors import MLSQLError
from ...spark import type_names as spark_types
from ...options import Param, groups as parameter_groups
from . import fitted
from .base import ET, Call

NAME = "Discretizer"


#: the names of the given edges, first found first: a group's, the single-column form's (Byzer's
#: first SQLDiscretizer's), and Spark's Bucketizer's (Byzer's current SQLDiscretizer's)
EDGE_OPTIONS = ("splitArray", "bucketSplits", "splits")
#: the options of the single-column form, as ``fitParam.N.NAME`` are a group's
_SINGLE_OPTIONS = ("inputCol", "outputCol", *EDGE_OPTIONS, "numBuckets", "handleInvalid")
#: edge options whose single-column form registers a function over arrays, as Byzer's current
#: SQLDiscretizer does (``convert(array(double(7)))``); the others' function maps one number
_ARRAY_FUNCTION_EDGES = {"splits"}
HANDLE_INVALID = ("keep", "error", "skip")


def _groups(call: Call) -> tuple[list[dict], bool]:
    """The groups' options, and whether they are the single-column form's one group."""
    groups = parameter_groups(call.options)
    single = {key: value for key, value in call.options.items() if key in _SINGLE_OPTIONS}
    if groups and "inputCol" in single:
        raise MLSQLError(f"{NAME}: give either inputCol=\"...\" (one column) or `fitParam.N.inputCol` groups, not both")
    if groups:
        return list(groups.values()), False
    if "inputCol" not in single:
        raise MLSQLError(f"{NAME} needs inputCol=\"...\" (one column) or one `fitParam.N.inputCol`=\"...\" per column "
                         "to discretize")
    if call.option("method", "bucketizer").strip() == "bucketizer" and not (set(EDGE_OPTIONS) & set(single)):
        single["splitArray"] = "-inf,0.0,1.0,inf"  # Byzer's default edges for the single-column form
    return [single], True


def _option(index: int | None, name: str) -> str:
    """How the user wrote a group's option: ``fitParam.0.splitArray``, or ``splitArray`` alone."""
    return name if index is None else f"fitParam.{index}.{name}"


def _splits_given(group: dict, index: int | None) -> list[float]:
    name = next((n for n in EDGE_OPTIONS if n in group), EDGE_OPTIONS[0])
    text = group.get(name, "")
    try:
        splits = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise MLSQLError(f"{NAME}: {_option(index, name)} must be numbers (and -inf, inf), not {text!r}") from None
    if len(splits) < 3 or any(b <= a for a, b in zip(splits, splits[1:])):
        raise MLSQLError(f"{NAME}: {_option(index, name)} needs at least 3 strictly increasing edges, "
                         f"e.g. \"-inf,0.0,1.0,inf\"; got {text!r}")
    return splits


def _splits_learnt(group: dict, index: int | None, values: np.ndarray) -> list[float]:
    try:
        buckets = int(group.get("numBuckets", "2"))
    except ValueError:
        raise MLSQLError(f"{NAME}: {_option(index, 'numBuckets')} must be a whole number") from None
    if buckets < 2:
        raise MLSQLError(f"{NAME}: {_option(index, 'numBuckets')} must be at least 2, not {buckets}")
    ordered = np.sort(values[~np.isnan(values)])
    if len(ordered) == 0:
        raise MLSQLError(f"{NAME}: {_option(index, 'inputCol')} has no values to learn buckets from")
    edges = [float(ordered[max(math.ceil(i / buckets * len(ordered)), 1) - 1]) for i in range(1, buckets)]
    return [-math.inf, *sorted(set(edges)), math.inf]


#: method → (group options, its index, the column's values) → bucket edges
METHODS = {"bucketizer": lambda group, index, values: _splits_given(group, index), "quantile": _splits_learnt}


def bucket(splits: list[float], values: np.ndarray, invalid: str = "keep", nulls: np.ndarray | None = None) -> np.ndarray:
    """Spark's Bucketizer: bucket i holds [splits[i], splits[i+1]), the last one its upper edge
    too; NaN in bucket len(splits) - 1 when ``invalid`` is keep. ``nulls``: the rows that were
    null (NaN in ``values``, no bucket, never an error)."""
    edges = np.asarray(splits)
    out = np.searchsorted(edges, values, side="right") - 1.0
    out[values == edges[-1]] = len(edges) - 2
    nan = np.isnan(values)
    if ((out < 0) | (out > len(edges) - 2))[~nan].any():
        raise MLSQLError(f"{NAME}: a value is outside the bucket edges {splits}")
    if invalid != "keep" and (nan if nulls is None else nan & ~nulls).any():
        raise MLSQLError(f"{NAME}: a value is NaN; handleInvalid=\"keep\" puts NaN in a bucket of its own")
    out[nan] = len(edges) - 1
    return out


def _nulls(column) -> np.ndarray:
    return pc.is_null(column).to_numpy(zero_copy_only=False)


def _handle_invalid(group: dict, index: int | None) -> str:
    value = group.get("handleInvalid", "keep").strip()
    if value not in HANDLE_INVALID:
        raise MLSQLError(f"{NAME}: {_option(index, 'handleInvalid')} is one of {', '.join(HANDLE_INVALID)}, not {value!r}")
    return value


def _fit(table: pa.Table, call: Call) -> dict:
    method = call.option("method", "bucketizer").strip()
    if method not in METHODS:
        raise MLSQLError(f"{NAME}: method {method!r} is not supported (supported: {', '.join(METHODS)})")
    groups, single = _groups(call)
    # "single": the registered function maps one number (else an array, one value per group)
    state = {"method": method, "single": single and not (_ARRAY_FUNCTION_EDGES & set(groups[0])), "groups": []}
    for index, group in enumerate(groups):
        where = None if single else index
        column = group.get("inputCol") or group.get("inputCols")
        if column not in table.column_names:
            raise MLSQLError(f"{NAME}: {_option(where, 'inputCol')} must name a column of {call.table} "
                             f"(columns: {', '.join(table.column_names)}), not {column!r}")
        splits = METHODS[method](group, where, _numbers(table, column, _option(where, "inputCol")))
        state["groups"].append({"inputCol": column, "outputCol": group.get("outputCol", column), "splits": splits,
                                "handleInvalid": _handle_invalid(group, where)})
    return state


def _numbers(table: pa.Table, column: str, what: str) -> np.ndarray:
    kind = table.schema.field(column).type
    if not (pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind)):
        raise MLSQLError(f"{NAME}: {what} {column!r} must be numeric, not {kind}")
    return matrix(table.column(column).cast(pa.float64()).fill_null(math.nan), np.float64)[:, 0]


def _transform(state: dict, table: pa.Table, table_name: str) -> pa.Table:
    """Each group's buckets (null for null); ``handleInvalid="skip"`` first drops the rows with
    NaN or null in its column, as Spark's Bucketizer does."""
    for group in state["groups"]:
        column = fitted.column_of(table, group["inputCol"], table_name, NAME)
        if group.get("handleInvalid") == "skip":
            table = table.filter(pc.invert(pc.is_null(column, nan_is_null=True)))
    out = table
    for group in state["groups"]:
        nulls = _nulls(table.column(group["inputCol"]))
        buckets = bucket(group["splits"], _numbers(table, group["inputCol"], "inputCol"),
                         group.get("handleInvalid", "error"), nulls)
        out = fitted.replace_or_append(out, group["outputCol"], pa.array(buckets, pa.float64(), mask=nulls))
    return out


def _apply(state: dict, x: np.ndarray) -> np.ndarray:
    groups = state["groups"]
    if x.shape[1] != len(groups):
        raise MLSQLError(f"the function takes {len(groups)} values per row (one per column it learnt: "
                         f"{', '.join(g['inputCol'] for g in groups)}), not {x.shape[1]}")
    return np.column_stack([bucket(g["splits"], x[:, i], g.get("handleInvalid", "error")) for i, g in enumerate(groups)])


def _apply_to_one(state: dict, values: pa.Array) -> pa.Array:
    """The single-column form's function, ``f(v)``: the bucket of each value (null for null)."""
    if not (pa.types.is_integer(values.type) or pa.types.is_floating(values.type) or pa.types.is_decimal(values.type)
            or pa.types.is_null(values.type)):
        raise MLSQLError("trained on one column (inputCol), the function takes a number, "
                         f"not {spark_types.simple_string(values.type)}")
    [group] = state["groups"]
    nulls = _nulls(values)
    numbers = matrix(values.cast(pa.float64()).fill_null(math.nan), np.float64)[:, 0]
    return pa.array(bucket(group["splits"], numbers, group["handleInvalid"], nulls), pa.float64(), mask=nulls)


_ON_ARRAYS = fitted.on_number_rows(_apply)


def _applier(state: dict, values: pa.Array) -> pa.Array:
    return _apply_to_one(state, values) if state.get("single") else _ON_ARRAYS.transform(state, values)


LEARNER = fitted.Learner(NAME, _fit, _transform,
                         fitted.Applier(_applier, lambda state: "DOUBLE" if state.get("single") else "DOUBLE[]"))

ETS = (
    ET(NAME, "numeric columns to bucket numbers: given edges (bucketizer) or learnt quantiles (quantile)", LEARNER.train,
       (Param("method", "bucketizer", "bucketizer (splitArray) or quantile (numBuckets)"),
        Param("fitParam.N.inputCol", "", "the numeric column of group N"),
        Param("fitParam.N.outputCol", "", "where group N's buckets go (default: in place of inputCol)"),
        Param("fitParam.N.splitArray", "", "bucketizer: the edges, e.g. -inf,0.0,1.0,inf ([x, y) buckets)"),
        Param("fitParam.N.numBuckets", "2", "quantile: how many buckets to learn"),
        Param("fitParam.N.handleInvalid", "keep", "NaN: keep (a bucket of its own), error, or skip (drop the row)"),
        Param("inputCol", "", "the single-column form (no fitParam groups): the numeric column"),
        Param("outputCol", "", "the single-column form: where the buckets go (default: in place of inputCol)"),
        Param("splitArray", "-inf,0.0,1.0,inf", "the single-column form, bucketizer: the edges (also bucketSplits)"),
        Param("bucketSplits", "-inf,0.0,1.0,inf", "the single-column form, bucketizer: the edges (Byzer's older name)"),
        Param("splits", "-inf,0.0,1.0,inf", "the single-column form, bucketizer: the edges (Spark's Bucketizer's name, "
                                            "as Byzer's current Discretizer takes them); f then takes arrays"),
        Param("numBuckets", "2", "the single-column form, quantile: how many buckets to learn"),
        Param("handleInvalid", "keep", "the single-column form: NaN's handling, as fitParam.N.handleInvalid")),
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
