"""What an ET is (Byzer's estimators/transformers, ``run T as NAME.`path` where ...``): its
name, options and run function, the call it gets, and its input table. Defined here, under the
engine, because the ETs that learn live in this package; the engine's data ETs use the same."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from ...errors import MLSQLError
from ... import options as reader
from ...options import Param


@dataclass(frozen=True)
class ET:
    name: str
    description: str
    #: (session, Call) -> pa.Table | Partitioned | None: the output table of ``run T as NAME.`` ...``
    #: (None: nothing to name)
    run: Callable
    params: tuple[Param, ...] = ()
    kind: str = "data process"  # !show et's algType: algorithm, feature engineer, data process, ...
    #: an ET that learns (a fitted.Learner): ``run`` is its ``train``, and ``register`` and
    #: ``predict`` apply the state it saved
    learner: object | None = None
    #: a whole script using it, as ``load modelExample.`NAME` as T;`` shows it ("" when there is none, as in Byzer)
    example: str = ""


@dataclass(frozen=True)
class Partitioned:
    """An ET's output whose rows are in parts, in order (``sizes``: rows per part): Python cells'
    data servers and ``spark_partition_id()`` follow them (``Catalog.add_arrow``'s ``partitions``)."""

    table: pa.Table
    sizes: tuple[int, ...]


@dataclass(frozen=True)
class Call:
    """One ``run|train T as NAME.`PATH` where ... [as OUT]``, as an ET sees it: PATH (where Byzer's
    estimators save a model) names nothing the ETs here keep, and OUT is named by the registry."""

    table: str  # T ("command" when the ET reads no table)
    options: dict[str, str]
    path: str = ""  # PATH: where the feature ETs that learn something save it (fitted.py)
    resolve: Callable[[str], Path] = Path  # a file option's path as the script means it (relative to it)

    def option(self, key: str, default: str | None = None) -> str | None:
        return self.options.get(key, default)

    def required(self, key: str, et: str) -> str:
        value = self.options.get(key, "").strip()
        if not value:
            raise MLSQLError(f"{et} needs {key}=\"...\"")
        return value

    def flag(self, key: str, default: bool) -> bool:
        return reader.flag(self.options, key, default)

    def integer(self, key: str, default: int, minimum: int | None = None) -> int:
        return reader.integer(self.options, key, default, minimum)

    def lines(self, key: str, et: str) -> list[str]:
        """The non-blank lines of the file an option names (a dictionary, one word a line); none
        when the option is not given."""
        name = self.options.get(key, "").strip()
        if not name:
            return []
        try:
            text = self.resolve(name).read_text(encoding="utf-8")
        except OSError as exc:
            raise MLSQLError(f"{et}: cannot read {key} {name!r}: {exc.strerror or exc}") from None
        return [line.strip() for line in text.splitlines() if line.strip()]

    def column(self, key: str, table_columns: list[str], et: str) -> str:
        """One column name, checked against the table's."""
        names = self.columns(key, table_columns, et)
        if len(names) != 1:
            raise MLSQLError(f"{et}: {key} names one column, not {len(names)} ({', '.join(names)})")
        return names[0]

    def columns(self, key: str, table_columns: list[str], et: str, required: bool = True) -> list[str]:
        """A comma-separated list of column names, each checked against the table's."""
        text = self.required(key, et) if required else self.options.get(key, "")
        names = [c.strip() for c in text.split(",") if c.strip()]
        for name in names:
            if name not in table_columns:
                raise MLSQLError(f"{et}: {key} names {name!r}, which {self.table} does not have "
                                 f"(columns: {', '.join(table_columns)})")
        return names


def input_table(session, call: Call) -> pa.Table:
    """The ET's input table T as Arrow."""
    return session.catalog.arrow(call.table)
