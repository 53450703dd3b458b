"""What feature ETs that learn something share (``ml/feature/*.md``): ``train T as ET.`TARGET```
saves the fitted state, ``register ET.`TARGET` as f`` applies it to new rows in SQL, and
``predict T as ET.`TARGET``` to a whole table, as ``train`` did to its own.

TARGET (a path or a warehouse name, as for models) holds Byzer's layout: ``TARGET/data``, the
transformed table as Parquet (the docs read it back with ``load parquet.`TARGET/data```), and
``TARGET/model``, a Delta table of one row: the ET's name and its state as JSON (no pickle). A
state value that is an Arrow table (Word2VecInPlace's vectors) is a Delta table of its own,
``TARGET/model_KEY``, read back at the version the JSON records.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ...errors import MLSQLError
from ...storage import delta, stored as stored_models
from ..functions import SQLFunction
from ..store import model_target
from .base import Call, input_table
from ...arrays import matrix

_STATE_SCHEMA = pa.schema([("et", pa.string()), ("state", pa.string())])
_TABLES = "_tables"  # the state's key: {KEY: version of TARGET/model_KEY}


def target_path(session, target: str):
    if not target:
        raise MLSQLError("train ... as ET.`TARGET` needs a TARGET path to save what it learnt")
    return model_target(session, target, {})


def save(session, target: str, et: str, state: dict, transformed: pa.Table) -> None:
    path = target_path(session, target)
    tables = {key: value for key, value in state.items() if isinstance(value, pa.Table)}
    plain = {key: value for key, value in state.items() if key not in tables}
    plain[_TABLES] = {key: delta.write(path / f"model_{key}", f"{target}/model_{key}", table.to_reader(),
                                       "overwrite", (), {}).version
                      for key, table in tables.items()}  # written first: the model row commits them
    data = pa.table({"et": [et], "state": [json.dumps(plain)]}, schema=_STATE_SCHEMA)
    delta.write(path / stored_models.ET_TABLE, f"{target}/{stored_models.ET_TABLE}", data.to_reader(), "overwrite", (), {},
                commit_metadata=stored_models.recorded(stored_models.FEATURE_ET))
    (path / "data").mkdir(parents=True, exist_ok=True)
    pq.write_table(transformed, path / "data" / "part-0.parquet")


def load(session, target: str, et: str) -> tuple[int, dict]:
    """(version, state) saved by ``train T as ET.`TARGET```, read by the one reader of stored models
    (``storage.stored``); no feature ET's state there, or another ET's, is an error."""
    path = target_path(session, target)
    stored = stored_models.read(path, target) if stored_models.locate(path) else None
    if stored is None or stored.kind != stored_models.FEATURE_ET:
        raise MLSQLError(f"{target} holds no {et} state (train a table as {et}.`{target}` first)")
    [row] = stored.rows.to_pylist()
    if row["et"].lower() != et.lower():
        raise MLSQLError(f"{target} was trained by {row['et']}, not {et}")
    state = json.loads(row["state"])
    for key, saved in state.pop(_TABLES, {}).items():
        state[key] = delta.read(path / f"model_{key}", f"{target}/model_{key}", {"version": str(saved)})[1]
    return stored.version, state


@dataclass(frozen=True)
class Applier:
    """What ``register ET.`TARGET` as f`` runs: (state, the argument column) → the result column,
    of ``duckdb_type`` (a callable of the state when that decides it)."""

    transform: Callable[[dict, pa.Array], pa.Array]
    duckdb_type: str | Callable[[dict], str] = "DOUBLE[]"

    def type_for(self, state: dict) -> str:
        return self.duckdb_type(state) if callable(self.duckdb_type) else self.duckdb_type


@dataclass(frozen=True)
class Learner:
    """A feature ET that learns: ``fit`` reads train's table and options into a state,
    ``transform`` applies a state to a table (train's output, and predict's), ``applier`` to one
    column (register)."""

    name: str
    fit: Callable[[pa.Table, Call], dict]
    transform: Callable[[dict, pa.Table, str], pa.Table]  # (state, table, the table's name)
    applier: Applier
    #: more functions ``register ... as f`` gives, by the suffix of their names (FeatureExtractInPlace's ``f_email``...)
    companions: dict[str, Applier] = field(default_factory=dict)

    def train(self, session, call: Call) -> pa.Table:
        table = input_table(session, call)
        state = self.fit(table, call)
        out = self.transform(state, table, call.table)
        save(session, call.path, self.name, state, out)
        return out


def column_of(table: pa.Table, name: str, table_name: str, et: str) -> pa.ChunkedArray:
    """The column the state was trained on, in a table that must have it."""
    if name not in table.column_names:
        raise MLSQLError(f"{et} was trained on a column {name!r}, which {table_name} does not have "
                         f"(columns: {', '.join(table.column_names)})")
    return table.column(name)


def replace_or_append(table: pa.Table, name: str, column) -> pa.Table:
    """``name`` set to ``column``: in its place if the table has it, else as the last column."""
    if name in table.column_names:
        return table.set_column(table.schema.get_field_index(name), name, column)
    return table.append_column(name, column)


def on_number_rows(transform: Callable[[dict, np.ndarray], np.ndarray]) -> Applier:
    """An Applier over lists of numbers (``f(array(7, 8))``): rows × values in, rows × values out."""

    def apply(state: dict, values: pa.Array) -> pa.Array:
        if values.null_count:
            raise MLSQLError("an input row is null")
        return pa.array(list(transform(state, matrix(values, np.float64))), pa.list_(pa.float64()))

    return Applier(apply)


@dataclass
class FittedFunction(SQLFunction):
    """A registered feature ET as a DuckDB function (it runs in this process: no actors)."""

    name: str
    table: str
    version: int
    applier: Applier
    state: dict
    output: str = "features"
    actors: list = field(default_factory=list)

    @property
    def duckdb_type(self) -> str:
        return self.applier.type_for(self.state)

    def __call__(self, values: pa.Array) -> pa.Array:
        try:
            return self.applier.transform(self.state, values)
        except MLSQLError as exc:
            raise MLSQLError(f"{self.name}: {exc.message}") from exc
