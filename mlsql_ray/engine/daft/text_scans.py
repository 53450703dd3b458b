"""``load csv.`` and ``load json.`` as lazy Daft scans, where Daft gives the DuckDB engine's answer.

The DuckDB engine reads CSV as Spark does (``engine/csv_files.py``) and JSON lines as DuckDB infers
them, made Spark's (``files.read_json``). Here the same files become a Daft scan (``daft.read_csv``,
``daft.read_json``) with what fixes the columns taken as the DuckDB engine takes it, reading no more
than it does: the first record (and, with ``inferSchema``, DuckDB's sniffer over the first file's
sample) for CSV, DuckDB's sample of the records for JSON. Where Daft cannot give that answer
exactly the scan is None and the load stays with the DuckDB engine's reader (docs/daft.md lists when).
"""

from __future__ import annotations

import contextlib

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import MLSQLError
from ...objectstore import ObjectPath
from ...options import choice, flag
from .. import csv_files
from .rows import BatchQuery, batch_function
from .translate import BATCH

#: the DuckDB types of JSON values Daft's reader, given them as its schema, reads as DuckDB does
_JSON_SCALARS = ("BIGINT", "DOUBLE", "VARCHAR", "BOOLEAN")


# -- CSV ------------------------------------------------------------------------------------------

def csv_scan(session, daft, files: list[str], options: dict[str, str], store: ObjectPath | None, shown: str):
    """The CSV ``files`` (on ``store``, or local) as Daft reads them with Spark's options; None
    where the DuckDB engine's reader must read them: a ``mode`` other than PERMISSIVE, a
    corrupt-record column, a ``sep``, ``quote`` or ``escape`` of other than one character, or no
    record in any file."""
    spelled = csv_files.dialect(options)
    if choice(options, "mode", csv_files.PARSE_MODES, "PERMISSIVE") != "PERMISSIVE" \
            or options.get("columnNameOfCorruptRecord") \
            or any(len(c) != 1 for c in (spelled.sep, spelled.quote, spelled.escape)):
        return None
    with _reading(session, store) as (con, opener):
        layout = csv_files.layout(con, files, options, opener)
    if layout is None:
        return None
    from daft import DataType, col  # heavy: Daft, only for sessions whose sql_engine is daft
    from daft.functions import when

    names = layout.names
    # read as bytes: Daft's reader makes a value that is not UTF-8 NULL, where the DuckDB reader stops
    frame = daft.read_csv(files, infer_schema=False, schema={n: DataType.binary() for n in names},
                          has_headers=spelled.header, delimiter=spelled.sep, quote=spelled.quote,
                          escape_char=spelled.escape, double_quote=spelled.escape == spelled.quote,
                          allow_variable_columns=True, **_io(store))  # PERMISSIVE: short records padded, long ones cut
    checked = _Checked(shown, flag(options, "multiLine", False))
    frame = frame.where(daft.func.batch(return_dtype=DataType.bool())(checked)(*map(col, names)))
    text = {n: col(n).cast(DataType.string()) for n in names}
    frame = frame.select(*(when(text[n] != "", text[n]).alias(n) for n in names))  # Spark: an empty field is NULL
    typed = {n: _typed(session, daft, n, kind, layout.formats) for n, kind in zip(names, layout.types) if kind != "VARCHAR"}
    if typed:
        frame = frame.with_columns(typed)
    if len(names) == 1:  # as the DuckDB reader: a record of one empty field (or one that fits no type) goes
        frame = frame.where(col(names[0]).not_null())
    return frame


class _Checked:
    """What the DuckDB reader refuses in the values, refused here too (its words; the load's path,
    not the line): bytes that are not UTF-8, and, without ``multiLine``, a line end in a value (a
    value quoted across lines: a record ends at its line's end)."""

    def __init__(self, shown: str, multiline: bool):
        self.shown, self.multiline = shown, multiline

    def __call__(self, *columns) -> pa.Array:
        for column in columns:
            try:
                values = column.to_arrow().cast(pa.string())
            except pa.ArrowInvalid as exc:
                raise MLSQLError(f"CSV error in {self.shown}: this file is not UTF-8 encoded") from exc
            if not self.multiline and pc.any(pc.match_substring_regex(values, r"[\r\n]")).as_py():
                raise MLSQLError(f'CSV error in {self.shown}: a quoted value spans lines: '
                                 f'add where multiLine="true" to read records that do')
        return pa.array([True] * len(columns[0]), pa.bool_())


def _typed(session, daft, name: str, kind: str, formats: dict):
    """inferSchema: column ``name`` (strings) as DuckDB's type ``kind``, cast per batch by DuckDB as
    the DuckDB engine's reader casts it (NULL where a value does not fit)."""
    from daft import DataType, col  # heavy: Daft, only for sessions whose sql_engine is daft

    schema = pa.schema([("c", pa.string())])
    sql = f"SELECT {csv_files.typed(csv_files.quoted('c'), kind, formats)} FROM {BATCH}"
    result = session.con.sql(sql.replace(BATCH, "(SELECT NULL::VARCHAR AS c LIMIT 0)")).to_arrow_table().schema.field(0).type
    query = BatchQuery(sql, schema, result, tuple(session.connection_setup), (), f"the CSV column {name} as {kind}")
    return batch_function(daft, query, DataType.from_arrow_type(result))(col(name))


# -- JSON lines ------------------------------------------------------------------------------------

def json_scan(session, daft, files: list[str], store: ObjectPath | None):
    """The JSON lines ``files`` (on ``store``, or local) as Daft reads them, given the columns and
    types DuckDB finds in its sample (as the DuckDB engine's reader); None when a type is one Daft
    reads otherwise: a field of mixed types (JSON text), dates and times DuckDB finds in strings,
    numbers beyond BIGINT."""
    with _reading(session, store) as (con, _):
        relation = con.read_json(files, format="newline_delimited")
        if not all(map(_json_alike, relation.types)):
            return None
        schema = relation.limit(0).to_arrow_table().schema
    from daft import DataType  # heavy: Daft, only for sessions whose sql_engine is daft

    return daft.read_json(files, infer_schema=False,
                          schema={f.name: DataType.from_arrow_type(f.type) for f in schema}, **_io(store))


def _json_alike(kind) -> bool:
    if kind.id in ("list", "struct"):
        return all(_json_alike(child) for _, child in kind.children)
    return str(kind) in _JSON_SCALARS


# -- where the files are ---------------------------------------------------------------------------

@contextlib.contextmanager
def _reading(session, store: ObjectPath | None):
    """(a DuckDB connection, an ``open(path, mode)``) that read the files: the session's for local
    files; for files on ``store`` a connection of its own that reads them through the store's
    filesystem (fsspec's view of pyarrow's, opened with the session's settings), fetching only what
    DuckDB reads of them (the first record, the sniffer's or the JSON reader's sample)."""
    if store is None:
        yield session.con, open
        return
    from fsspec.implementations.arrow import ArrowFSWrapper  # heavy: fsspec, only for object storage

    class Store(ArrowFSWrapper):
        protocol = store.scheme

        @classmethod
        def _strip_protocol(cls, path):
            return path.split("://", 1)[-1] if isinstance(path, str) else path

    files = Store(store.filesystem())
    con = duckdb.connect()
    try:
        con.register_filesystem(files)
        yield con, files.open
    finally:
        con.close()


def _io(store: ObjectPath | None) -> dict:
    """Daft's I/O settings for files on ``store`` (none for local ones)."""
    return {} if store is None else {"io_config": store.daft_io_config()}
