"""``load ET.`TARGET/data` as t``, by the name of each feature ET that learns (ml/feature/vecmap.md):
the transformed table ``train T as ET.`TARGET``` saved, read as ``parquet.`TARGET/data``` reads it,
once TARGET is known to hold that ET's state."""

from __future__ import annotations

from ...errors import MLSQLError
from ...ml.ets import fitted
from .. import ets
from .base import DataSource
from .file_formats import add_files


def _load(session, s) -> None:
    target, _, last = s.path.rstrip("/").rpartition("/")
    if last != "data" or not target:
        raise MLSQLError(f"{s.format}.`{s.path}`: {s.format} loads the table its train saved, "
                         f"{s.format}.`TARGET/data` (train T as {s.format}.`TARGET` first)")
    fitted.load(session, target, s.format)  # TARGET holds this ET's state, else the user's error
    add_files(session, s.table, "parquet", fitted.target_path(session, target) / "data", s.options,
              f"{s.format}.`{s.path}`")


#: one source per ET with a learner
SOURCES = tuple(DataSource(et.name, f"the table train T as {et.name}.`TARGET` saved: load {et.name}.`TARGET/data` as t",
                           _load) for et in ets.ETS.values() if et.learner)
