"""Model tables: every parameter group of one ``train`` in one Delta table, a version per train.

Rows are the ``{start, offset, value}`` chunks of storage/rows.py with four more columns:
``algIndex`` (the group), ``alg`` (Byzer's algorithm name), ``status`` (success/fail) and
``metadata`` (JSON, repeated on each chunk of the group: algorithm, library, parameters,
metrics, feature and label columns, class labels, times, failure reason). A failed group is one
row with no bytes. The columns are the truth; the commit metadata repeats a summary so that
``!delta history`` shows what each version holds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import MLSQLError
from ..storage import delta, rows as file_rows, stored as stored_models

MODEL_SCHEMA = pa.schema([("algIndex", pa.int64()), ("alg", pa.string()), ("status", pa.string()),
                          ("metadata", pa.string())] + list(file_rows.FILE_SCHEMA))

#: the commit metadata of a train's version: its groups, status and metrics
TRAIN_SUMMARY = "mlsql.train"


@dataclass
class StoredGroup:
    """One parameter group's outcome: its metadata and, on success, the model's bytes."""

    index: int
    alg: str
    status: str
    metadata: dict
    data: bytes = b""
    metrics: dict = field(init=False)

    def __post_init__(self):
        self.metrics = self.metadata.get("metrics", {})


def model_target(session, name: str, options: dict) -> Path:
    """A model TARGET: a path (Byzer's `/tmp/model`) or a warehouse name (`db.model`)."""
    if "/" in name or options.get("mode") == "path":
        return session.local_path(name)
    return delta.table_path(session.warehouse, name, {})


def byzer_alg_index(group: StoredGroup, groups: list[StoredGroup]) -> str:
    """The group's algIndex as Byzer's AutoML writes it, ``ALG.N``: its algorithm and its place
    among that algorithm's groups (AutoML trains each algorithm as a train of its own)."""
    same = [g.index for g in groups if g.alg == group.alg]
    return f"{group.alg}.{same.index(group.index)}"


def to_table(groups: list[StoredGroup]) -> pa.Table:
    parts = []
    for group in groups:
        chunks = file_rows.bytes_to_rows(group.data) if group.data else pa.table(
            {"start": [0], "offset": [0], "value": [b""]}, schema=file_rows.FILE_SCHEMA)
        n = chunks.num_rows
        described = pa.table({"algIndex": pa.array([group.index] * n, pa.int64()), "alg": [group.alg] * n,
                              "status": [group.status] * n, "metadata": [json.dumps(group.metadata)] * n})
        parts.append(pa.Table.from_arrays(described.columns + chunks.columns, schema=MODEL_SCHEMA))
    return pa.concat_tables(parts)


def write(path: Path, name: str, groups: list[StoredGroup], keep_version: bool) -> int:
    """Save the groups as the table's new version; without ``keep_version`` the files of older
    versions are removed once the new one is committed (Byzer's default keeps one model)."""
    summary = {TRAIN_SUMMARY: json.dumps([{"algIndex": g.index, "alg": g.alg, "status": g.status,
                                           "metrics": g.metrics} for g in groups]),
               **stored_models.recorded(stored_models.ALGORITHM)}
    table = to_table(groups)
    written = delta.write(path, name, table.to_reader(), "overwrite", (), {}, commit_metadata=summary)
    if not keep_version:
        delta.drop_old_versions(path)
    return written.version


def read(path: Path, name: str, options: dict | None = None) -> tuple[int, list[StoredGroup]]:
    """(version, groups) of a model table (``storage.stored``, the one reader of stored models); a
    table that is not one is the user's mistake."""
    stored = stored_models.read(path, name, options)
    stored_models.refuse_other(stored, stored_models.ALGORITHM)
    return stored.version, groups_of(stored.rows, name)


def kept_versions(path: Path, name: str) -> list[int]:
    """The versions a train wrote whose files are all still there (a train without
    ``keepVersion`` vacuums the older ones, in commits of its own), oldest first."""
    kept = []
    for entry in delta.commits(path, name):
        if TRAIN_SUMMARY not in entry:
            continue
        if all((path / file).exists() for file in delta.version_files(path, entry["version"])):
            kept.append(entry["version"])
    return sorted(kept)


def groups_of(data: pa.Table, name: str) -> list[StoredGroup]:
    """The groups in a model table's rows."""
    missing = [c for c in MODEL_SCHEMA.names if c not in data.column_names]
    if missing:
        raise MLSQLError(f"{name} holds no model trained by `train` (it has no column {missing[0]!r}; "
                         f"a model table has columns {', '.join(MODEL_SCHEMA.names)})")
    groups = []
    for index in sorted(set(data.column("algIndex").to_pylist())):
        rows = data.filter(pc.equal(data.column("algIndex"), index))
        first = rows.slice(0, 1).to_pylist()[0]
        try:
            metadata = json.loads(first["metadata"])
        except (TypeError, ValueError) as exc:
            raise MLSQLError(f"{name} group {index} has unreadable metadata: {exc}") from exc
        groups.append(StoredGroup(index, first["alg"], first["status"], metadata,
                                  file_rows.rows_to_bytes(rows.select(list(file_rows.FILE_COLUMNS)))))
    return groups
