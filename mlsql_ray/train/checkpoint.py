"""Training checkpoints in the warehouse, so a run survives the death of its driver.

A checkpoint is one ``.npz`` file (averaged weights, optimizer state, round, history) stored as
``{round, start, offset, value}`` rows in a Delta table; each save is one append commit, and
checkpoints beyond the last ``keep`` are deleted. Any Delta reader sees what a run has saved.
"""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import config
from ..errors import MLSQLError
from ..objectstore import ObjectPath
from ..storage import delta, rows as file_rows


@dataclass(frozen=True)
class Checkpoints:
    """``table``: Delta name (``db.table``) in ``warehouse``; save after every ``every`` rounds,
    keep the last ``keep``."""

    table: str
    warehouse: str | os.PathLike | None = None
    every: int = 1
    keep: int = 3

    def __post_init__(self):
        if self.every < 1 or self.keep < 1:
            raise MLSQLError("checkpoint every and keep must be at least 1")

    @property
    def path(self) -> Path | ObjectPath:
        return delta.table_path(config.warehouse(self.warehouse), self.table, {})

    def due(self, round_number: int, last_round: int) -> bool:
        return round_number % self.every == 0 or round_number == last_round

    def save(self, round_number: int, weights, optimizer_state, history: list[dict]) -> None:
        chunks = file_rows.bytes_to_rows(_pack(round_number, weights, optimizer_state, history))
        rows = chunks.add_column(0, "round", pa.array([round_number] * chunks.num_rows, pa.int64()))
        delta.write(self.path, self.table, rows.to_reader(), "append", (), {})
        rounds = self.rounds()
        if len(rounds) > self.keep:
            delta.delete_where(self.path, self.table, f"round < {rounds[-self.keep]}")

    def rounds(self) -> list[int]:
        """Rounds that have a checkpoint, oldest first."""
        if not delta.exists(self.path):
            return []
        column = delta.read(self.path, self.table, columns=["round"])[1].column("round")
        return sorted(set(column.to_pylist()))

    def latest(self) -> dict | None:
        """The newest checkpoint as {round, weights, optimizer_state, history}, or None."""
        rounds = self.rounds()
        if not rounds:
            return None
        table = delta.read(self.path, self.table)[1]
        mask = pc.equal(table.column("round"), rounds[-1])
        return _unpack(file_rows.rows_to_bytes(table.filter(mask)))


def _pack(round_number: int, weights, optimizer_state, history: list[dict]) -> bytes:
    arrays = {f"w{i}": np.asarray(w) for i, w in enumerate(weights)}
    if optimizer_state is not None:
        arrays.update({f"o{i}": np.asarray(o) for i, o in enumerate(optimizer_state)})
    meta = {"round": round_number, "weights": len(weights),
            "optimizer": None if optimizer_state is None else len(optimizer_state), "history": history}
    buffer = io.BytesIO()
    np.savez(buffer, meta=np.array(json.dumps(meta)), **arrays)
    return buffer.getvalue()


def _unpack(data: bytes) -> dict:
    with np.load(io.BytesIO(data), allow_pickle=False) as npz:
        meta = json.loads(str(npz["meta"]))
        weights = [npz[f"w{i}"] for i in range(meta["weights"])]
        optimizer = None if meta["optimizer"] is None else [npz[f"o{i}"] for i in range(meta["optimizer"])]
    return {"round": meta["round"], "weights": weights, "optimizer_state": optimizer, "history": meta["history"]}
