"""What a ``--%python`` cell sees: pyjava's ``RayContext`` API over Arrow partitions in Ray.

A ``DataServer`` is the small, picklable handle to one partition of the cell's input table:
what to read from files (a table read from parquet or Delta), or where its batches are in Ray's
object store (a table computed in the driver); see ``partitions``. Whoever holds a handle, the
driver or an actor on any node, reads its partition itself, as often as it likes, without the
driver in between and without per-row Python objects (``to_arrow``).
``collect_from`` keeps the seed's row-dict path for code written against pyjava.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

import pyarrow as pa

from ..arrays import column_to_numpy
from ..errors import MLSQLError
from ..storage import streaming_tar
from ..storage.rows import FILE_SCHEMA


@dataclass(frozen=True)
class DataServer:
    """One partition of the input table: how to read it and how many rows it holds."""

    ref: Any  # ray.ObjectRef of a pyarrow.Table (a handle made by hand), or None
    index: int
    num_rows: int
    plan: Any = None  # partitions.FileRows or partitions.StoredRows: read by whoever holds the handle

    def read(self) -> pa.Table:
        if self.plan is not None:
            return self.plan.read()
        import ray  # heavy: Ray

        return ray.get(self.ref)

    def key(self):
        """What identifies this partition's rows across runs without reading them (a warm worker
        keeps rows it read under this key): the object it is in, or its plan's key."""
        return self.ref.hex() if self.plan is None else self.plan.key()


@dataclass
class CellContext:
    """The ``context`` global of a cell: its settings, its input and where its result goes.

    Picklable, so a cell can run as a Ray task (``runIn=executor``); the driver-side hooks
    (``make_servers``, ``ensure_ray``) are dropped when it travels.
    """

    conf: dict[str, str]
    env: dict[str, str] = field(default_factory=dict)  # ``!python env``: see runner.cell_environment
    input_name: str | None = None
    warehouse: str | None = None
    servers: list[DataServer] | None = None
    result: pa.Table | None = None
    make_servers: Callable[[], list[DataServer]] | None = field(default=None, repr=False)
    ensure_ray: Callable[[str | None], None] | None = field(default=None, repr=False)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["make_servers"] = state["ensure_ray"] = None
        return state

    def build_result(self, items) -> None:
        """pyjava's ``context.build_result(rows)``, as Byzer's docs call it on the cell's global
        ``context``: the same as ``RayContext.build_result``."""
        self.result = to_table(items)

    def data_servers(self) -> list[DataServer]:
        if self.servers is None:
            if self.input_name is None:
                raise MLSQLError("this cell has no input table: add --%input=TABLE to give it one")
            self.servers = self.make_servers()
        return self.servers


def env_options(env: dict[str, str]) -> dict:
    """Ray task options that give a task (and what it starts) ``env``; none when it is empty,
    since a task with a runtime_env needs a Ray worker process of its own."""
    return {"runtime_env": {"env_vars": dict(env)}} if env else {}


def to_table(items) -> pa.Table:
    """Rows (dicts), a pandas DataFrame or Arrow data as one Arrow table."""
    if isinstance(items, pa.Table):
        return items
    if isinstance(items, pa.RecordBatch):
        return pa.Table.from_batches([items])
    if type(items).__module__.startswith("pandas") and hasattr(items, "columns"):
        return pa.Table.from_pandas(items, preserve_index=False)
    if isinstance(items, dict):
        raise MLSQLError("build_result takes rows (a list of dicts), a pandas DataFrame or an Arrow table, not one dict")
    rows = list(items)
    if rows and not all(isinstance(r, dict) for r in rows):
        raise MLSQLError(f"build_result rows must be dicts, got {type(next(r for r in rows if not isinstance(r, dict))).__name__}")
    return rows_to_table(rows)


def rows_to_table(rows: list[dict]) -> pa.Table:
    """Row dicts as a table with a column for every key any row has (first seen first), None
    where a row lacks it, as pandas makes a DataFrame of them. (``pa.Table.from_pylist`` takes
    its columns from the first row alone and drops the other keys without a word.)"""
    if not rows:
        return pa.table({})
    try:
        array = pa.array(rows)  # a struct over the union of the keys, each with a type all its values take
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise MLSQLError(f"the rows do not make a table: {_mixed_column(rows) or exc}") from None
    if not array.type.num_fields:
        return pa.table({})
    return pa.Table.from_struct_array(array)


def _mixed_column(rows: list[dict]) -> str | None:
    """Which key has values no one column type holds, and two of them (for the error)."""
    for key in dict.fromkeys(k for row in rows for k in row):
        values = [row[key] for row in rows if key in row]
        try:
            pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            kinds = {type(v).__name__: v for v in values if v is not None}
            shown = ", ".join(f"{value!r} ({kind})" for kind, value in list(kinds.items())[:2])
            return f"column {key!r} has values of different types: {shown}"
    return None


class RayContext:
    """pyjava's RayContext: ``ray_context = RayContext.connect(globals(), address)``."""

    def __init__(self, context: CellContext):
        self.context = context

    @classmethod
    def connect(cls, cell_globals: dict, address: str | None = None, **_ignored) -> "RayContext":
        """Bind to the cell's context and make sure Ray is reachable (None: the session's Ray;
        "auto", "host:port" or "ray://host:port": that cluster)."""
        context = cell_globals.get("context")
        if not isinstance(context, CellContext):
            raise MLSQLError("RayContext.connect(globals(), ...) only works inside a --%python cell")
        if context.ensure_ray is not None:
            context.ensure_ray(address)
        return cls(context)

    # -- reading the input -------------------------------------------------------------------

    @property
    def conf(self) -> dict[str, str]:
        return self.context.conf

    @property
    def warehouse(self) -> str | None:
        """The session's warehouse folder (for ``mlsql_ray.models.load_model``)."""
        return self.context.warehouse

    def data_servers(self) -> list[DataServer]:
        """One handle per partition of ``--%input``."""
        return self.context.data_servers()

    @staticmethod
    def to_arrow(servers: Iterable[DataServer]) -> pa.Table:
        """The servers' partitions as one Arrow table, read from the object store."""
        tables = [s.read() for s in servers]
        if not tables:
            raise MLSQLError("to_arrow needs at least one data server")
        return pa.concat_tables(tables) if len(tables) > 1 else tables[0]

    @staticmethod
    def to_numpy(servers: Iterable[DataServer], column: str, dtype=None):
        """One column of the servers' partitions as numpy: a list column whose rows all have
        the same length becomes a 2-D array (rows × length), any other a 1-D array.

        The fast way to training data: ``RayContext.to_numpy([server], "image", "float32")``.
        See ``column_to_numpy``."""
        return column_to_numpy(RayContext.to_arrow(servers).column(column), dtype)

    @staticmethod
    def collect_from(servers: Iterable[DataServer]) -> Iterator[dict]:
        """Rows as dicts, partition by partition (pyjava's path; ``to_arrow`` is much faster)."""
        for server in servers:
            yield from server.read().to_pylist()

    def to_pandas(self):
        return self.to_arrow(self.data_servers()).to_pandas()

    def collect(self) -> list[dict]:
        return list(self.collect_from(self.data_servers()))

    # -- producing the result ----------------------------------------------------------------

    def build_result(self, items) -> None:
        """Rows (dicts), a pandas DataFrame or an Arrow table become the cell's output table."""
        self.context.build_result(items)

    def build_result_from_dir(self, path: str) -> None:
        """A file or directory becomes ``schema=file`` rows (see ``streaming_tar``)."""
        self.context.result = pa.Table.from_pylist(list(streaming_tar.build_rows_from_file(path)), schema=FILE_SCHEMA)

    # -- dataMode=data: functions run next to each partition ---------------------------------

    def foreach(self, fn_row: Callable[[dict], dict | None]) -> None:
        """Apply ``fn_row`` to every input row in Ray tasks, one per partition; the rows it
        returns (None drops a row) become the output table."""
        self._map_partitions(fn_row, per_row=True)

    def map_iter(self, fn_rows: Callable[[Iterator[dict]], Iterable[dict]]) -> None:
        """Apply ``fn_rows`` to each partition's row iterator in a Ray task; its rows become the output."""
        self._map_partitions(fn_rows, per_row=False)

    def _map_partitions(self, fn, per_row: bool) -> None:
        import ray  # heavy: Ray

        # user code with side effects, as the cell: run once, never again after a worker died
        task = ray.remote(_map_partition).options(max_retries=0, **env_options(self.context.env))
        tables = _get_all([task.remote(server, fn, per_row) for server in self.data_servers()])
        tables = [t for t in tables if t.num_columns]
        self.context.result = pa.concat_tables(tables, promote_options="permissive") if tables else pa.table({})


def _get_all(refs: list) -> list:
    """``ray.get`` of every ref; on the first failure the others' errors are collected, so that
    Ray does not print each of them again as "unhandled". They are waited for, not cancelled:
    Ray 2.60's ``ray.cancel`` of a task whose reply is arriving aborts this process ("Tried to
    complete task that was not pending", ray-project/ray#54846; seen in this suite)."""
    import ray  # heavy: Ray

    try:
        return ray.get(refs)
    except Exception:
        for ref in refs:
            try:
                ray.get(ref)
            except Exception:  # noqa: BLE001 - the first error is the one raised
                pass
        raise


def _map_partition(server: DataServer, fn, per_row: bool) -> pa.Table:
    rows = server.read().to_pylist()
    if per_row:
        out = [r for r in (fn(row) for row in rows) if r is not None]
    else:
        out = list(fn(iter(rows)))
    return rows_to_table(out)
