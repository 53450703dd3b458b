"""``delta``: tables of the Delta warehouse, by name (``db.table``) or by path (``mode="path"``)."""

from __future__ import annotations

from ...errors import MLSQLError
from ...storage import delta
from ..result import Result
from ..sql import duckdb_message
from ...options import Param
from .base import DataSource


def _path(session, s):
    """Where the statement's table is: by name, in the warehouse; by path (``mode="path"``),
    where the session may reach (``Session.confined``: inside an owner's home)."""
    path = delta.table_path(session.warehouse, s.path, s.options, {**session.conf, **s.options})
    return session.confined(path, s.path) if s.options.get("mode") == "path" else path


def _load(session, s) -> None:
    path = _path(session, s)
    dataset = delta.arrow_dataset(delta.open_table(path, s.path, s.options), path)
    session.catalog.add_arrow(s.table, dataset, f"delta.`{s.path}`", kind="lazy")


def _save(session, s) -> Result:
    path = _path(session, s)
    reader = session.catalog.reader(s.table)
    try:
        written = delta.write(path, s.path, reader, s.mode, s.partition_by, s.options,
                              commit_metadata=session.catalog.metadata(s.table) or None)
    except delta.SourceFailed as exc:  # the query being saved failed part way: DuckDB's error, as for a small one
        raise MLSQLError(duckdb_message(exc.__cause__, session.catalog.names())) from exc.__cause__
    finally:
        reader.close()  # an unread stream keeps DuckDB busy: no other query could run
    if written.version is None:
        return Result(s, f"delta.`{s.path}` exists; nothing written (mode ignore)", name=s.path)
    verb = "merged" if written.operation == "MERGE" else "saved"
    cleaned = (f"; deleted {written.leftovers_removed} data files an interrupted save had left"
               if written.leftovers_removed else "")
    return Result(s, f"{verb} {written.rows} rows of {s.table} to delta.`{s.path}` (version {written.version}, "
                     f"mode {s.mode}{cleaned})", name=s.path, num_rows=written.rows, version=written.version)


SOURCE = DataSource(
    "delta", "Delta Lake tables of the warehouse (db.table), or at a path with mode=\"path\"", _load, _save,
    (
        Param("mode", "", "\"path\": the backquoted text is a folder, not a warehouse table name"),
        Param("version", "", "load this version of the table (time travel)"),
        Param("timestampAsOf", "", "load the version current at this time"),
        Param("idCols", "", "save: upsert (merge) on these comma-separated key columns"),
        Param("mergeSchema", "false", "save append: add new columns to the table's schema"),
    ),
)
