"""The SQL functions ``register`` defines, of every kind (``ml.kinds``): one base class, and the
session's one registry of them, each a DuckDB function of the same name."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import MLSQLError

if TYPE_CHECKING:
    from collections.abc import Callable

    import pyarrow as pa


class SQLFunction:
    """A registered function: ``name``, the model table (or TARGET) it serves from and that
    table's version ("" and 0 for none), the Ray ``actors`` it runs on (none: it runs here), the
    ``output`` it answers, of ``duckdb_type``, and ``argument``, how the current query calls it
    (for its error messages). DuckDB calls it with whole Arrow vectors (``type="arrow"``). The
    subclasses are dataclasses: the attributes without a value here are their fields."""

    name: str
    table: str
    version: int
    actors: list
    duckdb_type: str
    output = ""
    argument: str | None = None
    #: "special": the function sees null inputs and may answer null (LDA's, for a term it lacks)
    null_handling = "default"

    def create(self, con) -> None:
        """Define it in DuckDB."""
        con.create_function(self.name, self, None, self.duckdb_type, type="arrow", null_handling=self.null_handling)

    def drop(self, con) -> None:
        con.remove_function(self.name)

    def nearby(self) -> Callable[[pa.Array], pa.Array]:
        """It as this process calls it fastest (``ModelFunction``: the model loaded here)."""
        return self

    def for_workers(self) -> "SQLFunction":
        """It as another process calls it (a Daft worker's DuckDB, ``engine/daft/rows.py``): sent
        there by pickling, never closed there."""
        return self

    def close(self) -> None:
        """Let go of what it holds (its actors)."""


class FunctionRegistry:
    """The session's registered functions, by lower-case name."""

    def __init__(self, con):
        self.con = con
        self.functions: dict[str, SQLFunction] = {}

    def add(self, function: SQLFunction) -> None:
        """Define ``function``, replacing one of its name."""
        self.remove(function.name)
        try:
            function.create(self.con)
        except Exception as exc:  # noqa: BLE001 - e.g. a name DuckDB already uses for a built-in
            function.close()
            raise MLSQLError(f"cannot register {function.name}: {exc}") from exc
        self.functions[function.name.lower()] = function

    def remove(self, name: str) -> bool:
        function = self.functions.pop(name.lower(), None)
        if function is None:
            return False
        function.drop(self.con)
        function.close()
        return True

    def remove_for_table(self, table: str) -> list[str]:
        """Remove the functions registered from a model table; returns their names."""
        names = [f.name for f in self.functions.values() if f.table and f.table == table]
        for name in names:
            self.remove(name)
        return names

    def note_calls(self, calls: tuple[tuple[str, str], ...]) -> None:
        """Remember how each function is called in the coming query, to name the column in errors."""
        for name, argument in calls:
            function = self.functions.get(name.lower())
            if function is not None:
                function.argument = argument

    def close(self) -> None:
        for name in list(self.functions):
            self.remove(name)
