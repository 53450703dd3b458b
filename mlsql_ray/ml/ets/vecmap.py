"""``VecMapInPlace`` (``ml/feature/vecmap.md``): a column of maps (name → number) to vectors.
``train`` learns the names (sorted: name i is position i) and replaces the column by dense
``DOUBLE[]`` vectors (our vectors are dense, so Byzer's sparse rows print as plain lists); a name
missing in a row is 0, one never seen at ``train`` is dropped. ``register VecMapInPlace.`TARGET`
as f`` gives ``f(map(...))``."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...errors import MLSQLError
from ...options import Param
from . import fitted
from .base import ET, Call

NAME = "VecMapInPlace"


def _vectors(state: dict, maps: pa.Array) -> pa.Array:
    position = {name: i for i, name in enumerate(state["names"])}
    rows = np.zeros((len(maps), len(position)))
    for r, pairs in enumerate(maps.to_pylist()):
        for key, value in pairs or ():
            if key in position and value is not None:
                rows[r, position[key]] = value
    return pa.array(list(rows), pa.list_(pa.float64()))


def _fit(table: pa.Table, call: Call) -> dict:
    column = call.column("inputCol", table.column_names, NAME)
    _check(table, column)
    return {"inputCol": column, "names": sorted({str(k) for pairs in table.column(column).to_pylist() for k, _ in pairs or ()})}


def _check(table: pa.Table, column: str) -> None:
    kind = table.schema.field(column).type
    if not (pa.types.is_map(kind) and (pa.types.is_integer(kind.item_type) or pa.types.is_floating(kind.item_type)
                                       or pa.types.is_decimal(kind.item_type))):
        raise MLSQLError(f"{NAME}: inputCol {column!r} must be a map of names to numbers, not {kind}")


def _transform(state: dict, table: pa.Table, table_name: str) -> pa.Table:
    column = state["inputCol"]
    maps = fitted.column_of(table, column, table_name, NAME)
    _check(table, column)
    vectors = pa.chunked_array([_vectors(state, chunk) for chunk in maps.chunks], pa.list_(pa.float64()))
    return table.set_column(table.schema.get_field_index(column), column, vectors)


LEARNER = fitted.Learner(NAME, _fit, _transform, fitted.Applier(_vectors))

ETS = (
    ET(NAME, "a map column (name → number) to vectors, one position per name seen", LEARNER.train,
       (Param("inputCol", "", "the map column"),), kind="feature engineer", learner=LEARNER, example="""select map("a", 1.6, "b", 1.2) as f union all select map("a", 1.5, "b", 0.2) as f as newdata;
train newdata as VecMapInPlace.`db.vecmap` where inputCol="f" as vectors;
register VecMapInPlace.`db.vecmap` as to_vec;
select to_vec(map("a", 1, "b", 0)) as features as applied;
"""),
)
