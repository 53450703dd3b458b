"""What feature ETs that learn something share (``ml/feature/*.md``): ``train T as ET.`TARGET```
saves the fitted state, and ``register ET.`TARGET` as f`` applies it to new rows in SQL.

TARGET (a path or a warehouse name, as for models) holds Byzer's layout: ``TARGET/data``, the
transformed table as Parquet (the docs read it back with ``load parquet.`TARGET/data```), and
``TARGET/model``, a Delta table of one row: the ET's name and its state as JSON (no pickle).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ...errors import MLSQLError
from ...storage import delta

_STATE_SCHEMA = pa.schema([("et", pa.string()), ("state", pa.string())])


def target_path(session, target: str):
    from ..learning import _target

    if not target:
        raise MLSQLError("train ... as ET.`TARGET` needs a TARGET path to save what it learnt")
    return _target(session, target, {})


def save(session, target: str, et: str, state: dict, transformed: pa.Table) -> None:
    path = target_path(session, target)
    data = pa.table({"et": [et], "state": [json.dumps(state)]}, schema=_STATE_SCHEMA)
    delta.write(path / "model", f"{target}/model", data.to_reader(), "overwrite", (), {})
    (path / "data").mkdir(parents=True, exist_ok=True)
    pq.write_table(transformed, path / "data" / "part-0.parquet")


def load(session, target: str, et: str) -> tuple[int, dict]:
    """(version, state) saved by ``train T as ET.`TARGET```; another ET's state is an error."""
    path = target_path(session, target) / "model"
    if not delta.exists(path):
        raise MLSQLError(f"{target} holds no {et} state (train a table as {et}.`{target}` first)")
    table = delta.open_table(path, f"{target}/model")
    [row] = table.to_pyarrow_table().to_pylist()
    if row["et"].lower() != et.lower():
        raise MLSQLError(f"{target} was trained by {row['et']}, not {et}")
    return table.version(), json.loads(row["state"])


@dataclass(frozen=True)
class Applier:
    """What ``register ET.`TARGET` as f`` runs: (state, the argument column) → the result column."""

    transform: Callable[[dict, pa.Array], pa.Array]
    duckdb_type: str = "DOUBLE[]"


def on_number_rows(transform: Callable[[dict, np.ndarray], np.ndarray]) -> Applier:
    """An Applier over lists of numbers (``f(array(7, 8))``): rows × values in, rows × values out."""

    def apply(state: dict, values: pa.Array) -> pa.Array:
        from ...arrays import matrix

        if values.null_count:
            raise MLSQLError("an input row is null")
        return pa.array(list(transform(state, matrix(values, np.float64))), pa.list_(pa.float64()))

    return Applier(apply)


@dataclass
class FittedFunction:
    """A registered feature ET as a DuckDB function (what session.FunctionRegistry expects of a
    function; it runs in this process: no actors)."""

    name: str
    table: str
    version: int
    applier: Applier
    state: dict
    output: str = "features"
    argument: str | None = None
    actors: list = field(default_factory=list)

    @property
    def duckdb_type(self) -> str:
        return self.applier.duckdb_type

    def __call__(self, values: pa.Array) -> pa.Array:
        try:
            return self.applier.transform(self.state, values)
        except MLSQLError as exc:
            raise MLSQLError(f"{self.name}: {exc.message}") from exc

    def close(self) -> None:
        pass
