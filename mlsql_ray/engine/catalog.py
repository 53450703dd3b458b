"""The session's named tables. Each name is a DuckDB view (lazy: a file scan or a query) or a
registered Arrow table, so SQL sees every table directly and nothing is copied to name it."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import pyarrow as pa
from sqlglot import exp

from ..errors import MLSQLError


def quoted(name: str) -> str:
    return exp.to_identifier(name, quoted=True).sql("duckdb")


@dataclass
class Entry:
    name: str
    kind: str  # "lazy" (scanned when used) or "arrow" (in memory)
    source: str  # where it came from, for !show tables
    data: object = None  # the Arrow table or dataset (until DuckDB is told about it), or the DuckDB relation
    registered: bool = False
    cached_from: "Entry | None" = None  # !cache: the lazy entry this in-memory copy stands in for
    cache_lifecycle: str = ""  # !cache's "script" (dropped when the run ends) or "session"


class Catalog:
    def __init__(self, con: duckdb.DuckDBPyConnection):
        self.con = con
        self._entries: dict[str, Entry] = {}

    def add_relation(self, name: str, relation: duckdb.DuckDBPyRelation, source: str) -> None:
        self._forget(name)
        relation.to_view(name, replace=True)
        self._entries.pop(name.lower(), None)  # the order of entries is the order of definition
        self._entries[name.lower()] = Entry(name, "lazy", source, data=relation, registered=True)

    def add_arrow(self, name: str, table, source: str, kind: str = "arrow") -> None:
        """Name Arrow data (a table, or a dataset scanned when used). DuckDB only learns of it when a query uses it (see ``ensure``):
        registering costs about as much as a small query, and most results are never re-queried."""
        self._forget(name)
        self._entries.pop(name.lower(), None)
        self._entries[name.lower()] = Entry(name, kind, source, data=table)

    def last_defined(self) -> str | None:
        """The name defined most recently (``!lastTableName``)."""
        return next(reversed(self._entries.values())).name if self._entries else None

    def cache(self, name: str, lifecycle: str) -> bool:
        """Scan a lazy table (files, Delta) into memory once, so later queries stop re-reading it;
        ``uncache`` brings the lazy table back. False if the table is in memory already."""
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
        if isinstance(original.data, duckdb.DuckDBPyRelation):
            original.data.to_view(original.name, replace=True)
            original.registered = True
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
                self.con.register(entry.name, entry.data)
                entry.registered = True

    def remove(self, name: str) -> None:
        self._forget(name)
        self._entries.pop(name.lower(), None)

    def _forget(self, name: str) -> None:
        """Drop DuckDB's view of a name about to be redefined, so no query sees stale data."""
        entry = self._entries.get(name.lower())
        if entry is not None and entry.registered:
            self.con.execute(f"DROP VIEW IF EXISTS {quoted(entry.name)}")
            entry.registered = False

    def __contains__(self, name: str) -> bool:
        return name.lower() in self._entries

    def names(self) -> list[str]:
        return [e.name for e in self._entries.values()]

    def relation(self, name: str) -> duckdb.DuckDBPyRelation:
        if name not in self:
            known = ", ".join(sorted(self.names())) or "none yet"
            raise MLSQLError(f"table {name} is not defined (defined: {known})")
        self.ensure([name])
        return self.con.sql(f"SELECT * FROM {quoted(self._entries[name.lower()].name)}")

    def arrow(self, name: str) -> pa.Table:
        entry = self._entries.get(name.lower())
        if entry is not None and isinstance(entry.data, pa.Table):
            return entry.data
        return self.relation(name).to_arrow_table()

    def reader(self, name: str) -> pa.RecordBatchReader:
        """Stream the table's rows without holding them all in memory."""
        return self.relation(name).to_arrow_reader()

    def metadata(self, name: str) -> dict[str, str]:
        """Schema metadata of an in-memory table (e.g. training metrics of a model table)."""
        entry = self._entries.get(name.lower())
        if entry is None or not isinstance(entry.data, pa.Table) or not entry.data.schema.metadata:
            return {}
        return {k.decode(): v.decode() for k, v in entry.data.schema.metadata.items() if not k.startswith(b"pandas")}

    def schema(self, name: str) -> pa.Schema:
        return self.relation(name).limit(0).to_arrow_table().schema

    def listing(self) -> pa.Table:
        entries = sorted(self._entries.values(), key=lambda e: e.name.lower())
        return pa.table({
            "name": [e.name for e in entries],
            "kind": [e.kind for e in entries],
            "source": [e.source for e in entries],
        })
