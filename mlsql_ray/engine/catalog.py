"""The session's named tables. Each name is a DuckDB view (lazy: a file scan or a select's query)
or a registered Arrow table, so SQL sees every table directly and nothing is copied to name it.
A select's view and an Arrow table are made known to DuckDB when a query first names them (``ensure``):
creating a view binds its query again, and reading a select's table runs the query it was bound as.

A select's result is a view over its query: its rows are computed when something reads them (a
preview, a save, a Python cell), never held whole in memory. DuckDB binds a view's table names
each time it runs, so a view alone would follow a name the user redefines later; the catalog keeps
today's snapshot meaning instead: before a name that a view reads is redefined or removed, the old
table stays in DuckDB under a unique retired name and the views that read it are rewritten (as
sqlglot trees) to read that name (a query no rewrite can tell apart, e.g. one with a CTE of that
name, has its rows computed then instead). Retired tables go once nothing reads them any more.
"""

from __future__ import annotations

import itertools
import weakref
from dataclasses import dataclass, field, replace
from typing import Callable

import duckdb
import pyarrow as pa
import sqlglot
import sqlglot.errors
from sqlglot import exp

from ..errors import MLSQLError
from ..spark import sql_build
from ..spark import vector_marks as ml_vectors
from .result import PREVIEW_ROWS

RETIRED_PREFIX = "__mlsql_retired_"
STREAM_BATCH_ROWS = 122_880  # DuckDB's row group: bigger batches only make DuckDB read further ahead
KEPT_ROWS = 10_000  # a select's result up to this many rows ...
KEPT_BYTES = 16 << 20  # ... and about this many bytes is kept once a preview has read it (see first_rows)


def quoted(name: str) -> str:
    return exp.to_identifier(name, quoted=True).sql("duckdb")


@dataclass
class Deferred:
    """Rows another engine computes (a Daft DataFrame, ``engine/daft/``): its schema known at once,
    its Arrow table computed only when something that is not that engine reads it (DuckDB, an ET,
    ``session.table``), once: the entry then holds the table. ``frame``: that engine's own lazy
    object, which its next queries read instead. ``partitions``: the rows as that engine's
    partitions in Ray's object store, [(object ref of an Arrow table, rows)] (at least one), computed
    on its workers: what a Python cell's or a ``train``'s Ray workers read, this process holding none.
    ``first(n)``: the first ``n`` rows, that engine computing no more (a preview)."""

    schema: pa.Schema
    compute: Callable[[], pa.Table]
    frame: object = None
    partitions: Callable[[], list[tuple[object, int]]] | None = None
    first: Callable[[int], pa.Table] | None = None
    _blocks: list[tuple[object, int]] | None = field(default=None, repr=False)

    def blocks(self) -> list[tuple[object, int]]:
        """``partitions()``, computed once."""
        if self._blocks is None:
            self._blocks = self.partitions()
        return self._blocks


@dataclass
class Entry:
    name: str
    kind: str  # "lazy" (scanned or computed when used) or "arrow" (in memory)
    source: str  # where it came from, for !show tables
    data: object = None  # the Arrow table or dataset (until DuckDB is told about it), or the DuckDB relation
    registered: bool = False
    cached_from: "Entry | None" = None  # !cache: the lazy entry this in-memory copy stands in for
    cache_lifecycle: str = ""  # !cache's "script" (dropped when the run ends) or "session"
    sql: str | None = None  # a select's DuckDB query: the entry is a view over it
    reads: frozenset[str] = field(default_factory=frozenset)  # lower-case names the query reads
    partitions: tuple[int, ...] = ()  # rows per part when the source read it in parts (a partitioned jdbc load)
    parquet_files: tuple[str, ...] = ()  # the files a parquet load scans (Ray workers read them themselves)
    hive: bool = False  # whether those files' folders are Hive partitions
    column_types: tuple[tuple[str, str], ...] | None = None  # (column, DuckDB type), once asked for (Catalog.schemas)
    vectors: dict[str, str] = field(default_factory=dict)  # a view's vector columns (engine/vectors.py)
    bound: duckdb.DuckDBPyRelation | None = None  # ``sql`` as the select bound it, while ``sql`` is unchanged
    origin: tuple[str | None, int, int] | None = None  # a view's select (file, line, col): where its run-time errors are reported


class Catalog:
    def __init__(self, con: duckdb.DuckDBPyConnection):
        self.con = con
        self._entries: dict[str, Entry] = {}
        self._retired: dict[str, Entry] = {}  # old tables that views still read, by lower-case retired name
        self._serial = itertools.count(1)
        # views that are no longer (or not only) named but must keep their meaning while something
        # still reads them (see ``hold``), weakly: a holder nobody keeps reads nothing
        self._holders: list[tuple[weakref.ref, Entry]] = []

    def add_relation(self, name: str, relation: duckdb.DuckDBPyRelation, source: str,
                     parquet_files: tuple[str, ...] = (), hive: bool = False) -> None:
        """Name a file scan; ``parquet_files``: the parquet files it reads (see ``cells.partitions``)."""
        self._define(Entry(name, "lazy", source, data=relation, parquet_files=tuple(parquet_files), hive=hive),
                     register=True)

    def add_view(self, name: str, sql: str, reads, source: str, relation: duckdb.DuckDBPyRelation | None = None,
                 origin: tuple[str | None, int, int] | None = None) -> Entry:
        """Name a select's query (DuckDB SQL over the catalog's names in ``reads``) without running it.
        A query that reads the name it defines reads the old table of that name. ``relation``: the
        query as DuckDB bound it, if at hand: its columns' types are then known, and reading the
        table runs it, without binding ``SELECT * FROM name`` again. ``origin``: the select's
        file, line and column."""
        known = {r.lower() for r in reads} & (self._entries.keys() | self._retired.keys())
        entry = Entry(name, "lazy", source, sql=sql, reads=frozenset(known), bound=relation,
                      column_types=_column_types(relation) if relation is not None else None, origin=origin)
        self._define(entry, register=False)  # DuckDB learns of it when a query reads it by name (``ensure``)
        return entry

    def add_arrow(self, name: str, table, source: str, kind: str = "arrow", partitions: tuple[int, ...] = ()) -> None:
        """Name Arrow data (a table, or a dataset scanned when used). DuckDB only learns of it when a query uses it (see ``ensure``):
        registering costs about as much as a small query, and most results are never re-queried.
        ``partitions``: the rows of each part the source read separately, in order (a Python cell's
        data servers then follow those parts)."""
        self._define(Entry(name, kind, source, data=table, partitions=tuple(partitions)), register=False)

    def add_deferred(self, name: str, deferred: Deferred, source: str) -> None:
        """Name rows another engine computes when read (see ``Deferred``)."""
        self._define(Entry(name, "lazy", source, data=deferred), register=False)

    @staticmethod
    def _computed(entry: Entry) -> None:
        """Compute a ``Deferred`` entry's rows now: something outside its engine reads them."""
        if isinstance(entry.data, Deferred):
            entry.data, entry.kind = entry.data.compute(), "arrow"

    def blocks(self, name: str) -> list[tuple[object, int]] | None:
        """A table another engine computes, as its partitions in Ray's object store (see
        ``Deferred.partitions``: computed on that engine's workers, once); None for any other table
        (and for one already computed here)."""
        entry = self._entries.get(name.lower())
        if entry is None or not isinstance(entry.data, Deferred) or entry.data.partitions is None:
            return None
        return entry.data.blocks()

    def partitions(self, name: str) -> tuple[int, ...]:
        """Rows per part of a table its source read in parts, or () when it was read whole."""
        entry = self._entries.get(name.lower())
        return entry.partitions if entry is not None else ()

    def entry(self, name: str) -> Entry | None:
        """The definition behind a name a view may read: a live table or a retired one."""
        return self._entries.get(name.lower()) or self._retired.get(name.lower())

    def vectors(self, name: str) -> dict[str, str]:
        """The table's columns that are vectors (lower-case name → dense or sparse): a view's as
        ``mark_vectors`` noted them, an Arrow table's from its field metadata."""
        entry = self.entry(name)
        if entry is None:
            return {}
        if isinstance(entry.data, pa.Table):
            return ml_vectors.vector_fields(entry.data.schema)
        return entry.vectors

    def hold(self, entry: Entry, holder) -> None:
        """Keep ``entry``'s meaning while ``holder`` lives and its ``pending()`` is true, though a
        later statement redefines a name it reads: a select's result whose rows are read later
        (``PreviewedResult``) reads what the select saw."""
        self._holders.append((weakref.ref(holder), entry))

    def _held(self) -> list[Entry]:
        self._holders = [(ref, entry) for ref, entry in self._holders if ref() is not None and ref().pending()]
        return [entry for _, entry in self._holders]

    def is_live(self, entry: Entry) -> bool:
        """Whether ``entry`` still defines its name (directly, or under a ``!cache`` copy)."""
        live = self._entries.get(entry.name.lower())
        return live is not None and (live is entry or live.cached_from is entry)

    def rows_of(self, entry: Entry) -> duckdb.DuckDBPyRelation:
        """What ``entry`` holds, whether it still defines its name or a later statement redefined
        or removed that name (a view in ``held`` then still reads what it read)."""
        if self.is_live(entry):
            return self._rows(entry.name)
        if entry.sql is not None:
            if entry.bound is not None:
                return entry.bound
            self.ensure(entry.reads)
            return self.con.sql(entry.sql)
        self._computed(entry)
        return self.con.from_arrow(entry.data)

    def keep(self, name: str, table: pa.Table) -> None:
        """Hold the rows of the select ``name`` (all of them, as ``first_rows`` read them): its
        view becomes this Arrow table, so later reads run nothing. Views reading ``name`` read
        the table now (same name); tables only this view read may go."""
        entry = self._entries[name.lower()]
        self._forget(entry.name)
        entry.data, entry.kind = ml_vectors.marked(table, entry.vectors), "arrow"
        entry.sql, entry.reads, entry.bound = None, frozenset(), None
        self._register(entry, entry.name)
        self._collect_retired()

    def mark_vectors(self, name: str, vectors: dict[str, str]) -> None:
        """Note which columns of the view ``name`` are vectors."""
        self._entries[name.lower()].vectors = dict(vectors)

    def _define(self, entry: Entry, register: bool) -> None:
        key = entry.name.lower()
        if key in self._entries:
            self._retire(key, also=entry)
            self._forget(entry.name)
            del self._entries[key]  # the order of entries is the order of definition
        self._entries[key] = entry
        if register:
            self._register(entry, entry.name)
        self._collect_retired()

    def last_defined(self) -> str | None:
        """The name defined most recently (``!lastTableName``)."""
        return next(reversed(self._entries.values())).name if self._entries else None

    def cache(self, name: str, lifecycle: str) -> bool:
        """Scan a lazy table (files, Delta, a select) into memory once, so later queries stop
        re-reading it; ``uncache`` brings the lazy table back. False if the table is in memory already."""
        self.relation(name)  # fails if the name is unknown
        entry = self._entries[name.lower()]
        if entry.kind == "arrow" or entry.cached_from is not None:
            return False
        table = self.relation(name).to_arrow_table()
        self._forget(name)
        self._entries[name.lower()] = Entry(entry.name, "cached", entry.source, data=table, cached_from=entry,
                                            cache_lifecycle=lifecycle)
        return True

    def uncache(self, name: str) -> bool:
        entry = self._entries.get(name.lower())
        if entry is None or entry.cached_from is None:
            return False
        original = entry.cached_from
        self._forget(name)
        if isinstance(original.data, duckdb.DuckDBPyRelation) or original.sql is not None:
            self._register(original, original.name)
        self._entries[name.lower()] = original
        return True

    def uncache_script(self) -> None:
        """Drop the copies ``!cache T script`` made: the script that asked for them has ended."""
        for entry in list(self._entries.values()):
            if entry.cache_lifecycle == "script":
                self.uncache(entry.name)

    def ensure(self, names) -> None:
        """Make the named tables visible to DuckDB before a query that reads them."""
        for name in names:
            entry = self._entries.get(name.lower())
            if entry is not None and not entry.registered:
                self._register(entry, entry.name)

    def remove(self, name: str) -> None:
        key = name.lower()
        if key in self._entries:
            self._retire(key)
        self._forget(name)
        self._entries.pop(key, None)
        self._collect_retired()

    def _register(self, entry: Entry, as_name: str) -> None:
        """Make ``entry`` visible to DuckDB as ``as_name`` (a view: the tables it reads first)."""
        if entry.sql is not None:
            self.ensure(entry.reads)
            # only the name is a tree here: the query is DuckDB SQL that translate() generated from one
            # already, and parsing it again to nest it would cost a parse per select defined
            self.con.execute(f"CREATE OR REPLACE TEMP VIEW {quoted(as_name)} AS {entry.sql}")
        elif isinstance(entry.data, duckdb.DuckDBPyRelation):
            entry.data.to_view(as_name, replace=True)
        else:
            self._computed(entry)
            self.con.execute(sql_build.drop_view(as_name))  # a view the entry was before
            self.con.register(as_name, entry.data)
        if as_name == entry.name:
            entry.registered = True

    def _forget(self, name: str) -> None:
        """Drop DuckDB's view of a name about to be redefined, so no query sees stale data."""
        entry = self._entries.get(name.lower()) or self._retired.get(name.lower())
        if entry is not None and entry.registered:
            self.con.execute(sql_build.drop_view(entry.name))
            entry.registered = False

    # -- snapshot meaning of views ----------------------------------------------------------------

    def _views(self, also: Entry | None = None) -> list[Entry]:
        """Every entry whose query may read another name: live ones, the lazy originals of cached
        ones, retired ones, and ``also`` (a definition about to be added)."""
        found = list(self._entries.values()) + list(self._retired.values()) + ([also] if also else [])
        found += [e.cached_from for e in found if e.cached_from is not None]
        found += [e for e in self._held() if not any(e is f for f in found)]
        return [e for e in found if e.sql is not None]

    def _retire(self, key: str, also: Entry | None = None) -> None:
        """Before the table named ``key`` is redefined or removed: if a view reads it, keep the
        table under a retired name and point those views there."""
        readers = [e for e in self._views(also) if key in e.reads]
        if not readers:
            return
        old = self._entries[key]
        retired_name = f"{RETIRED_PREFIX}{next(self._serial)}_{old.name}"
        retired = replace(old, name=retired_name, registered=False, cached_from=None, cache_lifecycle="")
        self._register(retired, retired_name)
        self._retired[retired_name.lower()] = retired
        for reader in readers:
            sql = _read_elsewhere(reader.sql, old.name, retired_name)
            if sql is None:  # a query no rewrite can tell apart: its rows are computed now instead
                self.ensure(reader.reads)
                reader.data, reader.kind = self.con.sql(reader.sql).to_arrow_table(), "arrow"
                reader.sql, reader.reads = None, frozenset()
            else:
                reader.sql = sql
                reader.reads = (reader.reads - {key}) | {retired_name.lower()}
            reader.bound = None  # it read the name now retired
            if reader.registered:
                self._register(reader, reader.name)

    def _collect_retired(self) -> None:
        """Drop retired tables that no view reads any more."""
        while True:
            read = set().union(*(e.reads for e in self._views()))
            unread = [k for k in self._retired if k not in read]
            if not unread:
                return
            for key in unread:
                self._forget(self._retired[key].name)
                del self._retired[key]

    # -- reading ----------------------------------------------------------------------------------

    def __contains__(self, name: str) -> bool:
        return name.lower() in self._entries

    def names(self) -> list[str]:
        return [e.name for e in self._entries.values()]

    def relation(self, name: str) -> duckdb.DuckDBPyRelation:
        if name not in self:
            known = ", ".join(sorted(self.names())) or "none yet"
            raise MLSQLError(f"table {name} is not defined (defined: {known})")
        self.ensure([name])
        entry = self._entries[name.lower()]
        return entry.bound if entry.bound is not None else self.con.sql(sql_build.select_all(entry.name).sql("duckdb"))

    def _rows(self, name: str) -> duckdb.DuckDBPyRelation:
        """The named table to read (not to name in SQL): a select's bound query as it is, without
        making DuckDB create its view."""
        entry = self._entries.get(name.lower())
        return entry.bound if entry is not None and entry.bound is not None else self.relation(name)

    def arrow(self, name: str) -> pa.Table:
        entry = self._entries.get(name.lower())
        if entry is not None:
            self._computed(entry)
        if entry is not None and isinstance(entry.data, pa.Table):
            return entry.data
        return self._rows(name).to_arrow_table()

    def head(self, name: str, rows: int) -> pa.Table:
        """The table's first ``rows`` rows, for a preview: another engine's computed by it, no more
        (``Deferred.first``), the others by DuckDB with a LIMIT."""
        entry = self._entries.get(name.lower())
        if entry is not None and isinstance(entry.data, Deferred) and entry.data.first is not None:
            return entry.data.first(rows)
        return self.relation(name).limit(rows).to_arrow_table()

    def reader(self, name: str) -> pa.RecordBatchReader:
        """Stream the table's rows without holding them all in memory."""
        return self._rows(name).to_arrow_reader(STREAM_BATCH_ROWS)

    def batches(self, name: str) -> pa.RecordBatchReader:
        """Stream the table's rows as it holds them: an in-memory table's own batches (no trip
        through DuckDB's types), anything else from DuckDB (``reader``)."""
        entry = self._entries.get(name.lower())
        if entry is not None:
            self._computed(entry)
        if entry is not None and isinstance(entry.data, pa.Table):
            return entry.data.to_reader(max_chunksize=STREAM_BATCH_ROWS)
        return self.reader(name)

    def in_memory(self, name: str) -> bool:
        """Whether reading the table touches no file: Arrow tables, and views over only those."""
        entry = self._entries.get(name.lower()) or self._retired.get(name.lower())
        if entry is None:
            return True  # not a table of ours: a table function such as range()
        if entry.sql is not None:
            return all(self.in_memory(r) for r in entry.reads)
        return isinstance(entry.data, pa.Table)

    def metadata(self, name: str) -> dict[str, str]:
        """Schema metadata of an in-memory table (e.g. training metrics of a model table)."""
        entry = self._entries.get(name.lower())
        if entry is None or not isinstance(entry.data, pa.Table) or not entry.data.schema.metadata:
            return {}
        return {k.decode(): v.decode() for k, v in entry.data.schema.metadata.items() if not k.startswith(b"pandas")}

    def schemas(self, names) -> tuple[tuple[str, tuple[tuple[str, str], ...]], ...]:
        """The columns and DuckDB types of those of ``names`` the catalog holds (``spark.sql_types.Schemas``:
        what ``translate`` needs to know Spark's types of a query's expressions). Each table's are
        found once: from its Arrow schema, its DuckDB relation, or by binding its query."""
        found = []
        for name in names:
            entry = self._entries.get(name.lower())
            if entry is None:
                continue
            if entry.column_types is None:
                entry.column_types = _column_types(self._bound(entry))
            found.append((entry.name, entry.column_types))
        return tuple(found)

    def _bound(self, entry: Entry) -> duckdb.DuckDBPyRelation:
        if isinstance(entry.data, duckdb.DuckDBPyRelation):
            return entry.data
        if isinstance(getattr(entry.data, "schema", None), pa.Schema):  # an Arrow table or dataset: no data read
            return self.con.from_arrow(entry.data.schema.empty_table())
        self.ensure([entry.name])
        return self.con.sql(sql_build.select_all(entry.name).sql("duckdb"))

    def schema(self, name: str) -> pa.Schema:
        return self.relation(name).limit(0).to_arrow_table().schema

    def listing(self) -> pa.Table:
        entries = sorted(self._entries.values(), key=lambda e: e.name.lower())
        return pa.table({
            "name": [e.name for e in entries],
            "kind": [e.kind for e in entries],
            "source": [e.source for e in entries],
        })


def first_rows(relation: duckdb.DuckDBPyRelation) -> tuple[pa.Table, bool]:
    """The first rows of a query, for a preview, and whether they are all of them. DuckDB stops
    after ``keep_rows(relation) + 1`` rows (a ``LIMIT``: a streamed read would compute far ahead).
    A result within that bound is whole and is kept (``Catalog.keep``), so showing it and reading
    it later share one execution; a bigger one stays a view that streams when read, at the cost of
    computing a few thousand rows instead of the 21 a preview needs."""
    kept = keep_rows(relation)
    table = relation.limit(kept + 1).to_arrow_table()
    return table, table.num_rows <= kept


def keep_rows(relation: duckdb.DuckDBPyRelation) -> int:
    """How many rows of this query's result are kept in memory once a preview has read them:
    ``KEPT_ROWS``, fewer when its rows are wide (``KEPT_BYTES`` of rows as its column types
    suggest: a text ~64 bytes, a list, a blob or a struct ~4 KB), never fewer than a preview shows."""
    width = sum(_TYPE_BYTES.get(str(t).split("(")[0], 4096) for t in relation.types)
    return max(PREVIEW_ROWS, min(KEPT_ROWS, KEPT_BYTES // max(width, 1)))


_TYPE_BYTES = {"BOOLEAN": 1, "TINYINT": 1, "SMALLINT": 2, "INTEGER": 4, "BIGINT": 8, "HUGEINT": 16,
               "UTINYINT": 1, "USMALLINT": 2, "UINTEGER": 4, "UBIGINT": 8, "FLOAT": 4, "DOUBLE": 8,
               "DECIMAL": 16, "DATE": 4, "TIME": 8, "TIMESTAMP": 8, "TIMESTAMP WITH TIME ZONE": 8,
               "INTERVAL": 16, "VARCHAR": 64}


def _column_types(relation: duckdb.DuckDBPyRelation) -> tuple[tuple[str, str], ...]:
    return tuple(zip(relation.columns, (str(t) for t in relation.types)))


def _read_elsewhere(sql: str, old: str, new: str) -> str | None:
    """``sql`` reading table ``new`` wherever it read table ``old`` (keeping ``old`` as the alias,
    so ``old.column`` still means the same); None when that cannot be told apart (a CTE also
    named ``old``, or SQL sqlglot does not read back)."""
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except sqlglot.errors.SqlglotError:
        return None
    if any(cte.alias_or_name.lower() == old.lower() for cte in tree.find_all(exp.CTE)):
        return None
    for table in list(tree.find_all(exp.Table)):
        if table.name.lower() == old.lower() and not table.args.get("db"):
            alias = table.args.get("alias") or exp.TableAlias(this=exp.to_identifier(table.name, quoted=True))
            table.replace(exp.Table(this=exp.to_identifier(new, quoted=True), alias=alias))
    return tree.sql(dialect="duckdb")
