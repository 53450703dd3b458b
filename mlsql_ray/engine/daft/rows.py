"""The expressions of a Daft select that DuckDB computes, batch by batch, where Daft computes the batch.

``daft/translate.py`` cuts out of a select each expression Daft has no exact equivalent for that
needs only its row, and calls it in Daft's SQL as ``__mlsql_row_N(columns)``. Here each becomes a
Daft batch function (``daft.func.batch``): Daft calls it with the columns of each batch on the worker
that computes that batch (Ray's, or its in-process runner), and it answers with the project's DuckDB
translation of the same Spark expression (``spark.translate``) run over that batch, in a DuckDB of the
worker's own with the session's macros, Python functions and ``register``ed functions: the DuckDB
session's answer for those rows, of its types. A model function called there sends the batch to the
actors that hold its model, as it does from the session's DuckDB.

Why a Daft batch function, not Ray Data's ``map_batches`` over ``to_ray_dataset``: it is one
expression inside Daft's own plan, so a filter, a join key or an aggregate's argument may be such an
expression and Daft keeps planning around it (a ``map_batches`` would end the plan at a Ray Dataset);
and it runs in the same task as the batch, where the partition already is.
"""

from __future__ import annotations

import collections
import contextlib
import threading
from dataclasses import dataclass

import duckdb
import pyarrow as pa

from ...errors import MLSQLError, first_line
from ...ml.functions import SQLFunction
from ...spark import families
from ...spark.translate import translate_tree
from .translate import BATCH, RowExpression, refusal


@dataclass(frozen=True)
class BatchQuery:
    """What a worker runs over one batch: DuckDB's ``sql`` over a table of the arguments (``schema``)
    in a connection set up as the session's (``setup``, ``functions``), answering ``result``."""

    sql: str
    schema: pa.Schema
    result: pa.DataType
    setup: tuple[str, ...]
    functions: tuple[SQLFunction, ...]
    shown: str

    def __call__(self, *columns) -> pa.Array:
        batch = pa.Table.from_arrays([c.to_arrow().cast(f.type) for c, f in zip(columns, self.schema)],
                                     schema=self.schema)
        answer = self.run(batch)
        if answer.num_rows != batch.num_rows:  # checked when planned (a 0-row batch gives 0 rows): our bug
            raise AssertionError(f"{self.shown} gave {answer.num_rows} rows for {batch.num_rows}")
        return answer.column(0).combine_chunks().cast(self.result)

    def run(self, batch: pa.Table) -> pa.Table:
        with connection(self.setup, self.functions) as con:
            con.register(BATCH, batch)
            return con.sql(self.sql).to_arrow_table()


#: idle DuckDB connections of this process by their setup, the least recently used first; taken
#: out for one use at a time (not thread-local: Daft calls batch functions on its Rust threads,
#: whose Python thread state, and so a threading.local, lasts only while it holds the GIL)
_idle: collections.OrderedDict[tuple[str, ...], list] = collections.OrderedDict()
_idle_lock = threading.Lock()
IDLE_KEPT = 8


@contextlib.contextmanager
def connection(setup: tuple[str, ...], functions: tuple[SQLFunction, ...]):
    """A DuckDB connection with what the session's has for these queries: its Python functions, its
    settings and macros (``setup``), its ``register``ed ``functions``. Connections are kept idle
    between uses (a new one takes ~30 ms, more than most batches' work); the functions and the batch
    are taken off again after each use, and a use that fails closes its connection."""
    with _idle_lock:
        kept = _idle.get(setup)
        con = kept.pop() if kept else None
        if kept == []:
            del _idle[setup]  # no empty lists: the trimming below takes from the oldest
    if con is None:
        con = duckdb.connect()
        families.define_python_functions(con)
        for statement in setup:
            con.execute(statement)
    try:
        for function in functions:
            function.create(con)
        yield con
        for function in functions:
            function.drop(con)
        con.unregister(BATCH)
    except BaseException:
        con.close()
        raise
    with _idle_lock:
        _idle.setdefault(setup, []).append(con)
        _idle.move_to_end(setup)
        while sum(map(len, _idle.values())) > IDLE_KEPT:
            oldest = next(iter(_idle))
            _idle[oldest].pop(0).close()
            if not _idle[oldest]:
                del _idle[oldest]


def functions_session(session, daft, rows: tuple[RowExpression, ...]):
    """A Daft session (``with`` it while Daft plans the SQL) in which each of ``rows`` is a batch
    function of its name; what DuckDB cannot compute per row is refused."""
    functions = daft.Session()
    for row in rows:
        query = _query(session, row)
        try:
            dtype = daft.DataType.from_arrow_type(query.result)
        except BaseException as exc:  # noqa: BLE001 - an Arrow type Daft does not hold (its Rust error)
            raise refusal(f"{row.shown} (its type {query.result} in Daft: {first_line(exc)})") from exc
        functions.attach_function(batch_function(daft, query, dtype), row.name)
    return functions


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def batch_function(daft, query: BatchQuery, dtype):
    """``query`` as a Daft batch function answering Daft's type ``dtype``."""
    def batch(*columns):
        return query(*columns)

    return daft.func.batch(return_dtype=dtype)(batch)


def _query(session, row: RowExpression) -> BatchQuery:
    """``row`` as DuckDB's SQL with the session's setup, checked on an empty batch: it binds, and it
    gives a row per row (not an aggregate, which gives one row for none)."""
    translation = translate_tree(row.query, ((BATCH, row.arguments),), row.text)
    if translation.bound_types:
        raise refusal(f"{row.shown} (its type is known only when DuckDB binds it)")
    session.define_macros_of(translation.sql)
    registry = session.model_functions
    called = {name.lower() for name, _ in translation.calls}
    functions = tuple(f.for_workers() for name, f in (registry.functions.items() if registry else ())
                      if name in called)
    setup = tuple(session.connection_setup)
    try:
        with connection(setup, functions) as con:
            schema = con.sql("SELECT " + ", ".join(f"CAST(NULL AS {t}) AS {_quoted(c)}" for c, t in row.arguments)
                             ).to_arrow_table().schema
            con.register(BATCH, schema.empty_table())
            answer = con.sql(translation.sql).to_arrow_table()
    except duckdb.Error as exc:
        raise refusal(f"{row.shown} (DuckDB: {first_line(exc)})") from exc
    if answer.num_rows:
        raise refusal(f"{row.shown} (it needs more than one row)")
    if answer.num_columns != 1:
        raise MLSQLError(f"{row.shown} gave {answer.num_columns} columns")
    return BatchQuery(translation.sql, schema, answer.schema.field(0).type, setup, functions, row.shown)
