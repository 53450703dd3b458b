"""A cell's input split into partitions that Ray workers read without the driver in the path.

Two kinds, chosen by where the table's rows come from:

- ``FileRows``: the table is read from files (a parquet load, a Delta table, or a select that
  takes each row from one row of such a table: projections, filters, scalar functions). The
  partition is a description of what to read, a range of the input's rows, the files (or Delta
  fragments) it spans and the query on top; whoever holds it runs that in DuckDB on its own
  node. The driver reads only parquet footers (row counts), and for a select that filters, the
  columns its filters need, to count each partition's rows (DuckDB keeps none of them).
- ``StoredRows``: anything else (in-memory tables, aggregates, joins, limits...) is computed
  in the driver and streamed batch by batch into Ray's object store; the driver holds one
  batch at a time, never the whole table. A partition is a list of (batch, offset, length).

Either way the partitions are the same rows in the same order as before: today's row bounds
(equal shares, at most one partition per row, or the parts a jdbc load read), filtered rows
dropped from within their range.
"""

from __future__ import annotations

import json
import os
from collections import OrderedDict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import sqlglot
import sqlglot.errors
from pyarrow import fs
from sqlglot import exp

from ..errors import MLSQLError

READ_CACHE_BYTES = 256 * 2**20  # per process: a partition read again (the same handle, a loop) is not re-read

_read_cache: OrderedDict[Any, pa.Table] = OrderedDict()


def _quoted(name: str) -> str:
    """A DuckDB identifier. The SQL of a partition's read is written as text, with names and paths
    quoted here and in ``_string``, not as sqlglot trees: partitions are read in Ray workers, where
    importing sqlglot would cost each fresh worker about 0.15-0.2 s."""
    return '"' + name.replace('"', '""') + '"'


def _string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@dataclass(frozen=True)
class ParquetRows:
    """Rows ``[start, stop)`` of one parquet file, or (``start`` None) some files whole, as the
    session's ``read_parquet`` sees them. ``stamps``: (size, mtime) of each file when planned."""

    files: tuple[str, ...]
    stamps: tuple[tuple[int, int], ...]
    hive_types: tuple[tuple[str, str], ...] | None = None  # None: not Hive-partitioned
    start: int | None = None
    stop: int | None = None

    def define(self, con, name: str) -> None:
        _check_unchanged(self.files, self.stamps, _local_stamps(self.files))
        listed = ", ".join(_string(f) for f in self.files)
        options = ""
        if self.hive_types is not None:
            types = ", ".join(f"{_string(k)}: {_string(v)}" for k, v in self.hive_types)
            options = f", hive_partitioning = true, hive_types = {{{types}}}"
        if self.start is None:
            sql = f"SELECT * FROM read_parquet([{listed}]{options})"
        else:
            sql = (f"SELECT * EXCLUDE (file_row_number) FROM read_parquet([{listed}]{options}, file_row_number = true) "
                   f"WHERE file_row_number >= {self.start} AND file_row_number < {self.stop}")
        con.execute(f"CREATE OR REPLACE TEMP VIEW {_quoted(name)} AS {sql}")


@dataclass(frozen=True)
class FragmentRows:
    """Rows ``[start, stop)`` of one data file (a pyarrow fragment: a Delta table's file, or a
    parquet file on an object store), or (``start`` None) some fragments whole, as the session's
    pyarrow dataset gives them to DuckDB. ``stamps``: (size, mtime) of each file when planned, so
    that a file replaced under the same name is a new plan (a warm worker's cache misses) and one
    replaced while the cell reads it is an error. An object store's mtime is its Last-Modified,
    to the second: pyarrow's file infos carry no ETag."""

    fragments: tuple
    stamps: tuple[tuple[int, int], ...]
    schema: pa.Schema
    format: Any
    filesystem: Any
    start: int | None = None
    stop: int | None = None

    def __hash__(self) -> int:
        return hash((tuple(f.path for f in self.fragments), self.stamps, self.start, self.stop))

    def __eq__(self, other) -> bool:
        return isinstance(other, FragmentRows) and hash(self) == hash(other) and self.schema.equals(other.schema)

    def define(self, con, name: str) -> None:
        import pyarrow.dataset as ds  # heavy: pyarrow.dataset imports pandas

        paths = [f.path for f in self.fragments]
        _check_unchanged(paths, self.stamps, _stamps(self.filesystem, paths))
        dataset = ds.FileSystemDataset(list(self.fragments), self.schema, self.format, self.filesystem)
        if self.start is not None:
            dataset = _rows_between(dataset.to_batches(), self.schema, self.start, self.stop)
        con.register(name, dataset)


def _stamps(filesystem, paths: list[str]) -> list[tuple[int, int] | None]:
    """(size, mtime in ns) of each file, None for one that is gone: one listing call for all."""
    return [(info.size, info.mtime_ns) if info.type == fs.FileType.File else None
            for info in filesystem.get_file_info(paths)]


def _local_stamps(paths) -> list[tuple[int, int] | None]:
    """``_stamps`` of local files, without a pyarrow filesystem (one ``stat`` each)."""
    stamps = []
    for path in paths:
        try:
            info = os.stat(path)
        except FileNotFoundError:
            stamps.append(None)
        else:
            stamps.append((info.st_size, info.st_mtime_ns))
    return stamps


def _check_unchanged(paths, planned, now) -> None:
    """A partition's files as they were when it was planned, or the user's error: one rewritten,
    replaced or removed since would give other rows than the plan counted."""
    for path, stamp, current in zip(paths, planned, now):
        if current != stamp:
            raise MLSQLError(f"the input file {path} changed while the cell read it")


def _rows_between(batches, schema: pa.Schema, start: int, stop: int) -> pa.Table:
    kept, seen = [], 0
    for batch in batches:
        if seen >= stop:
            break
        first, last = max(start - seen, 0), min(stop - seen, batch.num_rows)
        if last > first:
            kept.append(batch.slice(first, last - first))
        seen += batch.num_rows
    return pa.Table.from_batches(kept, schema)


@dataclass(frozen=True)
class FileRows:
    """A partition read from files: each piece defines the table ``base`` (a range of its rows),
    ``views`` (name, DuckDB query) are defined over it in order, and the last one is the partition.
    ``setup``: the statements that give a fresh connection the session's SQL functions."""

    base: str
    pieces: tuple
    views: tuple[tuple[str, str], ...] = ()
    setup: tuple[str, ...] = ()

    def key(self) -> "FileRows":
        """The plan itself: the files, their (size, mtime) stamps and the queries over them."""
        return self

    def read(self) -> pa.Table:
        cached = _read_cache.get(self)
        if cached is not None:
            _read_cache.move_to_end(self)
            return cached
        table = self._run("SELECT * FROM {}")
        _remember(self, table)
        return table

    def count(self) -> int:
        return self._run("SELECT count(*) AS n FROM {}").column("n").to_numpy().sum().item()

    def _run(self, query: str) -> pa.Table:
        last = self.views[-1][0] if self.views else self.base
        con = _connection(self.setup)
        try:
            tables = []
            for piece in self.pieces:
                piece.define(con, self.base)
                for name, sql in self.views:
                    con.execute(f"CREATE OR REPLACE TEMP VIEW {_quoted(name)} AS {sql}")
                tables.append(con.sql(query.format(_quoted(last))).to_arrow_table())
        finally:
            con.close()
        return pa.concat_tables(tables) if len(tables) > 1 else tables[0]


def _connection(setup: tuple[str, ...]):
    import duckdb  # heavy: DuckDB, which a cell's Ray worker goes without

    con = duckdb.connect()
    for statement in setup:
        con.execute(statement)
    return con


def _remember(plan, table: pa.Table) -> None:
    size = table.get_total_buffer_size()
    if size > READ_CACHE_BYTES:
        return
    _read_cache[plan] = table
    while sum(t.get_total_buffer_size() for t in _read_cache.values()) > READ_CACHE_BYTES:
        _read_cache.popitem(last=False)


@dataclass(frozen=True)
class StoredRows:
    """A partition computed in the driver: (object ref of an Arrow table, offset, length) spans."""

    spans: tuple[tuple[Any, int, int], ...]

    def key(self) -> tuple:
        """The objects and spans (an object never changes)."""
        return tuple((ref.hex(), offset, length) for ref, offset, length in self.spans)

    def read(self) -> pa.Table:
        import ray  # heavy: Ray

        tables = ray.get([ref for ref, _, _ in self.spans])
        pieces = [t.slice(offset, length) for t, (_, offset, length) in zip(tables, self.spans)]
        if not pieces:
            return tables[0] if tables else pa.table({})
        return pa.concat_tables(pieces) if len(pieces) > 1 else pieces[0]

    @property
    def refs(self) -> list:
        return [ref for ref, _, _ in self.spans]


# -- planning (in the driver) -------------------------------------------------------------------

def row_bounds(total: int, parts: tuple[int, ...], num_partitions: int | None, cpus: int) -> list[int]:
    """Where each partition starts (and the last ends): the parts the source read, or equal
    shares of ``num_partitions`` (default the cluster's CPUs), at most one per row."""
    if parts and not num_partitions:
        return [sum(parts[:i]) for i in range(len(parts) + 1)]
    count = max(1, min(num_partitions or cpus, total))
    return [round(i * total / count) for i in range(count + 1)]


def plan(session, name: str, num_partitions: int | None) -> list:
    """The partitions of table ``name``, with their row counts: [(FileRows or StoredRows, rows)]."""
    parts = session.catalog.partitions(name)
    from_files = _file_plan(session, name, parts, num_partitions)
    if from_files is not None:
        return from_files
    return _stored_plan(session, name, parts, num_partitions)


def _stored_plan(session, name: str, parts, num_partitions) -> list:
    """The table's batches in the object store, split into partitions of spans."""
    batches = _stored_batches(session, name)
    bounds = row_bounds(sum(n for _, n in batches), parts, num_partitions, session.ray_link.cpus())
    plans = []
    for begin, end in zip(bounds, bounds[1:]):
        spans, at = [], 0
        for ref, rows in batches:
            first, last = max(begin - at, 0), min(end - at, rows)
            if last > first:
                spans.append((ref, first, last - first))
            at += rows
        plans.append((StoredRows(tuple(spans) or ((batches[0][0], 0, 0),)), end - begin))
    return plans


def _stored_batches(session, name: str) -> list[tuple[Any, int]]:
    """[(object ref of an Arrow table, rows)]: another engine's partitions where its workers put
    them (a Daft table, ``catalog.blocks``), or the table streamed from DuckDB (or the in-memory
    table) into the object store, a batch at a time."""
    import ray  # heavy: Ray

    blocks = session.catalog.blocks(name)
    if blocks is not None:
        return [(ref, rows) for ref, rows in blocks if rows] or blocks[:1]
    reader = session.catalog.batches(name)
    batches: list[tuple[Any, int]] = []
    try:
        schema = reader.schema
        for batch in reader:
            if batch.num_rows:
                batches.append((ray.put(compact(pa.Table.from_batches([batch]))), batch.num_rows))
    finally:
        reader.close()
    return batches or [(ray.put(schema.empty_table()), 0)]


def stored_query(blocks: list[tuple[Any, int]], name: str, sql: str, combine: str) -> pa.Table:
    """``sql`` (DuckDB, reading the table ``name``) run by a Ray task over each stored block where
    it is, then ``combine`` here over their answers together (as the table ``name``): a query
    answered in two phases, only the answers coming to this process."""
    import ray  # heavy: Ray

    task = ray.remote(_query_rows).options(max_retries=0)
    answers = ray.get([task.remote(ref, name, sql) for ref, _ in blocks])
    return _query_rows(pa.concat_tables(answers), name, combine)


def _query_rows(table: pa.Table, name: str, sql: str) -> pa.Table:
    con = _connection(())
    try:
        con.register(name, table)
        return con.sql(sql).to_arrow_table()
    finally:
        con.close()


def compact(table: pa.Table) -> pa.Table:
    """The table's rows in buffers of their own, one chunk per column.

    A slice shares its parent's buffers, and pickling it writes the parent's whole buffers
    (ARROW-10739): each of N partitions of an image table would hold the entire table. Ray works
    around that with its own Arrow serializer, unless RAY_DISABLE_CUSTOM_ARROW_DATA_SERIALIZATION
    is set; one copy here makes the partitions right either way. (``Table.combine_chunks`` keeps
    a single chunk as it is; ``ChunkedArray.combine_chunks`` copies just the slice.)
    """
    return pa.Table.from_arrays([column.combine_chunks() for column in table.columns], schema=table.schema)


def _file_plan(session, name: str, parts, num_partitions) -> list | None:
    """FileRows partitions when the table's rows can be read from files by a worker, else None."""
    setup = tuple(session.connection_setup)
    chain = _row_wise_chain(session, name, setup)
    if chain is None:
        return None
    base, views = chain
    sources = _file_sources(session, base)
    if sources is None:
        return None
    total = sum(rows for _, rows in sources)
    bounds = row_bounds(total, (), num_partitions, session.ray_link.cpus())
    plans = [FileRows(base.name, _pieces(sources, begin, end), views, setup if views else ())
             for begin, end in zip(bounds, bounds[1:])]
    if not views or all(_keeps_every_row(sql) for _, sql in views):
        return [(p, end - begin) for p, begin, end in zip(plans, bounds, bounds[1:])]
    counts = [p.count() for p in plans]  # DuckDB reads only what the filters need, and keeps no row
    kept = [(p, n) for p, n in zip(plans, counts) if n]
    return kept or [(plans[0], 0)]


def _row_wise_chain(session, name: str, setup: tuple[str, ...]):
    """(the file-backed entry, [(view name, sql)] from it up to ``name``) when every step is a
    select that takes each row from one row of the step below; None otherwise."""
    catalog = session.catalog
    views: list[tuple[str, str]] = []
    entry = catalog.entry(name)
    while entry is not None and entry.sql is not None:
        source = row_wise_source(entry.sql, setup)
        if source is None:
            return None
        views.insert(0, (entry.name, entry.sql))
        entry = catalog.entry(source)
    if entry is None:
        return None
    return entry, tuple(views)


def _file_sources(session, entry) -> list[tuple[Any, int]] | None:
    """(source, rows) per file of a parquet load or a Delta table, in the order DuckDB reads them."""
    if entry.cached_from is not None or entry.kind == "cached":
        return None
    if entry.parquet_files:
        return _parquet_sources(session, entry)
    import pyarrow.dataset as ds  # heavy: pyarrow.dataset imports pandas

    if isinstance(entry.data, ds.FileSystemDataset) and isinstance(entry.data.format, ds.ParquetFileFormat):
        dataset = entry.data
        fragments = list(dataset.get_fragments())
        stamps = _stamps(dataset.filesystem, [f.path for f in fragments])
        return [(FragmentRows((f,), (stamp,), dataset.schema, dataset.format, dataset.filesystem), f.metadata.num_rows)
                for f, stamp in zip(fragments, stamps)]
    return None


def _parquet_sources(session, entry) -> list[tuple[Any, int]] | None:
    relation = session.catalog.relation(entry.name) if entry.name in session.catalog else None
    if relation is None or "file_row_number" in relation.columns:
        return None
    hive_types = None
    if entry.hive:
        keys = {part.split("=", 1)[0] for f in entry.parquet_files for part in Path(f).parts[:-1] if "=" in part}
        types = dict(zip(relation.columns, (str(t) for t in relation.types)))
        hive_types = tuple(sorted((k, types[k]) for k in keys if k in types))
    files = [os.path.abspath(f) for f in entry.parquet_files]  # workers run in other folders than the driver
    return [(ParquetRows((f,), (stamp,), hive_types), pq.read_metadata(f).num_rows)
            for f, stamp in zip(files, _local_stamps(files))]


def _pieces(sources: list[tuple[Any, int]], begin: int, end: int) -> tuple:
    """The pieces of rows ``[begin, end)``: whole files merged into one piece, partial ones alone."""
    pieces: list = []
    at = 0
    for source, rows in sources:
        first, last = max(begin - at, 0), min(end - at, rows)
        at += rows
        if last <= first:
            continue
        if first == 0 and last == rows:
            previous = pieces[-1] if pieces else None
            if previous is not None and previous.start is None:
                pieces[-1] = _merged(previous, source)
            else:
                pieces.append(source)
        else:
            pieces.append(_ranged(source, first, last))
    return tuple(pieces)


def _merged(piece, source):
    if isinstance(piece, ParquetRows):
        return replace(piece, files=piece.files + source.files, stamps=piece.stamps + source.stamps)
    return replace(piece, fragments=piece.fragments + source.fragments, stamps=piece.stamps + source.stamps)


def _ranged(source, start: int, stop: int):
    return replace(source, start=start, stop=stop)


# -- which selects a worker can run over its range ------------------------------------------------

_NOT_ROW_WISE = ("joins", "group", "having", "qualify", "distinct", "order", "limit", "offset", "with", "laterals",
                 "windows", "sample", "prewhere", "connect", "match", "into", "locks", "kind")


def row_wise_source(sql: str, setup: tuple[str, ...] = ()) -> str | None:
    """The one table ``sql`` reads when it takes each output row from one input row in order
    (projections, filters and scalar functions over a plain FROM), else None."""
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except sqlglot.errors.SqlglotError:
        return None
    if not isinstance(tree, exp.Select) or any(tree.args.get(key) for key in _NOT_ROW_WISE):
        return None
    if any(True for _ in tree.find_all(exp.AggFunc, exp.Window, exp.Subquery, exp.SetOperation)):
        return None
    if len(list(tree.find_all(exp.Select))) != 1:
        return None
    source = tree.args.get("from_", tree.args.get("from"))  # the key's name changed in sqlglot 28
    table = source.this if source is not None else None
    if not isinstance(table, exp.Table) or table.args.get("db") or len(list(tree.find_all(exp.Table))) != 1:
        return None
    if not _only_scalar_functions(sql, setup):
        return None
    return table.name


def _only_scalar_functions(sql: str, setup: tuple[str, ...]) -> bool:
    """Whether every function ``sql`` calls, as DuckDB's own parser reads it, is a scalar
    function or macro of a fresh connection with ``setup``: not an aggregate (``list(x)`` is one,
    and sqlglot does not say so), not a window, not a function only the session's connection has
    (a Python UDF)."""
    con = _connection(setup)
    try:
        rows = con.sql("SELECT function_name, function_type FROM duckdb_functions()").fetchall()
        others = {n.lower() for n, kind in rows if kind not in ("scalar", "macro")}
        scalar = {n.lower() for n, kind in rows if kind in ("scalar", "macro")} - others
        tree = json.loads(con.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()[0])
    finally:
        con.close()
    if tree.get("error"):
        return False
    calls = list(_calls(tree))
    return all(kind == "FUNCTION" and name.lower() in scalar for kind, name in calls)


def _calls(node):
    """(class, function name) of every call in a ``json_serialize_sql`` tree."""
    if isinstance(node, dict):
        if "function_name" in node:
            yield node.get("class"), node["function_name"]
        for value in node.values():
            yield from _calls(value)
    elif isinstance(node, list):
        for value in node:
            yield from _calls(value)


def _keeps_every_row(sql: str) -> bool:
    """A row-wise select without WHERE: one output row per input row, so no rows to count."""
    return sqlglot.parse_one(sql, read="duckdb").args.get("where") is None
