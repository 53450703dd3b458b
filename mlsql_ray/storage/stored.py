"""Stored models, of every kind, as one family: each is a Delta table, and ``read`` is the one
reader that opens any of them and says which kind it holds. The kinds' own loaders make the model
from what it read: a built-in algorithm's groups (``ml.store``), a feature ET's state
(``ml.ets.fitted``), a Keras model's file rows (``models``).

| kind | the Delta table | its columns |
| --- | --- | --- |
| ``ALGORITHM`` | TARGET | algIndex, alg, status, metadata, start, offset, value |
| ``FEATURE_ET`` | TARGET/model (Byzer's layout: TARGET/data beside it) | et, state |
| ``KERAS`` | TARGET | start, offset, value (a ``.keras`` file as rows) |

A version written by this package records its kind in its commit metadata (``KIND_KEY``, see
``recorded``); a table written before the kind was recorded, or by anyone else (a Keras model saved
from a Python cell's rows), is told by its columns. Here because ``models.load_model``, below the
model subsystem, reads Keras tables through it too."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from ..errors import MLSQLError
from . import delta
from .rows import FILE_COLUMNS

KIND_KEY = "mlsql.model"
ALGORITHM, FEATURE_ET, KERAS = "algorithm", "feature ET", "keras"
#: the columns that tell a table's kind when no version of it recorded one, most columns first
LAYOUTS = ((ALGORITHM, ("algIndex", "alg", "status", "metadata", *FILE_COLUMNS)),
           (FEATURE_ET, ("et", "state")),
           (KERAS, FILE_COLUMNS))
#: what a table of each kind holds, as errors say it
HOLDS = {ALGORITHM: "a model trained by `train` as a built-in algorithm", FEATURE_ET: "a feature ET's state",
         KERAS: "a Keras model (tf, keras)"}
#: where a feature ET keeps its model under TARGET (Byzer's ``TARGET/model``)
ET_TABLE = "model"


@dataclass(frozen=True)
class StoredModel:
    """A model table as read: its kind (None: no kind's columns), the name it was asked for by, the
    Delta table's path and version, and its rows."""

    kind: str | None
    name: str
    path: Path
    version: int
    rows: pa.Table


def recorded(kind: str) -> dict[str, str]:
    """The commit metadata by which a version records the kind of model it holds."""
    return {KIND_KEY: kind}


def locate(target: Path) -> Path | None:
    """The Delta table a model at ``target`` is kept in: a feature ET's TARGET/model (which no
    other kind's TARGET holds), else TARGET itself; None when neither is a Delta table."""
    for path in (target / ET_TABLE, target):
        if delta.exists(path):
            return path
    return None


def read(target: Path, name: str, options: dict | None = None) -> StoredModel:
    """The model at ``target`` (``name``: as errors call it) at the ``version`` its ``options`` ask
    for, else the latest; no table there is the user's error, as Delta says it."""
    path = locate(target) or target
    version, rows = delta.read(path, name, {k: v for k, v in (options or {}).items() if k == "version"})
    commit = delta.commit(path, name, version)
    kind = commit.get(KIND_KEY) or next((k for k, columns in LAYOUTS if set(columns) <= set(rows.column_names)), None)
    return StoredModel(kind, name, path, version, rows)


def refuse_other(stored: StoredModel, kind: str) -> None:
    """A model of another kind than the statement's FORMAT reads is the user's mistake, said so
    (a table of no kind is left to the kind's loader, which names the columns it lacks)."""
    if stored.kind not in (kind, None):
        raise MLSQLError(f"{stored.name} holds {HOLDS[stored.kind]}, not {HOLDS[kind]}")
