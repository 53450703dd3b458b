"""``/model/predict``'s fast path: the registered functions called directly on the request's rows.

Byzer's API service answers a select of registered functions over the posted rows
(``select rf(vec_dense(feature)) as p``, or a ``pipeline``). Run as a script, each request would
wait for its owner's session (one request at a time) and go through parsing, translation, the
catalog and a DuckDB query: about 25 ms apiece, so 32 clients queued for a second. Here a select
whose every column is a chain of registered functions (and ``vec_dense``, a cast) over one input
column is planned once per text (``plan``), what it needs of a session looked up once
(``_Prepared``), and each request calls the warm session's function objects on Arrow columns,
beside the session's running request, its lock not taken. A
scikit-learn, XGBoost or ALS model is loaded into this process once (``SQLFunction.nearby``) and
called on the server's event loop: no round trip to its actors, no thread hop, no threads taking
turns at the GIL; a Keras model is called on its actors from a worker thread. Concurrent requests
to one function are gathered into one call (``LoopBatches`` on the loop, ``Batches`` across
threads): the model sees one batch of rows, not one call per row.

Anything else goes the script's way (``None`` from ``predict``): another select, a function not
registered (yet), nulls in the input (DuckDB's null handling decides those), and any error, so
that an error reads exactly as the script's path words it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass

import anyio
import pyarrow as pa
import sqlglot
from sqlglot import exp

from ..engine import Session, vectors
from ..ml.functions import SQLFunction
from ..spark import vectors as spark_vectors

log = logging.getLogger(__name__)

#: the built-in functions a chain may hold besides registered ones: each as DuckDB computes it
COLUMN_FUNCTIONS = {"vec_dense": spark_vectors.dense_column}


@dataclass(frozen=True)
class Projection:
    """One column of the answer: ``functions`` (innermost first) applied to the input's ``column``."""

    name: str
    column: str
    functions: tuple[str, ...]


@functools.lru_cache(maxsize=256)
def plan(select: str) -> tuple[Projection, ...] | None:
    """The projections of ``select`` (a select without ``from``) if each is a chain of one-argument
    calls over a column, aliased; else None."""
    try:
        tree = sqlglot.parse_one(select, read="spark")
    except sqlglot.errors.ParseError:
        return None
    if not isinstance(tree, exp.Select) or any(value for key, value in tree.args.items() if key != "expressions"):
        return None
    projections = []
    for projection in tree.expressions:
        if not isinstance(projection, exp.Alias):
            return None
        node, functions = projection.this, []
        while isinstance(node, exp.Anonymous) and len(node.expressions) == 1:
            functions.append(node.name.lower())
            node = node.expressions[0]
        if not functions or not isinstance(node, exp.Column) or node.table:
            return None
        projections.append(Projection(projection.alias, node.name, tuple(reversed(functions))))
    return tuple(projections) or None


class _Call:
    """One caller's column, waiting for its answer or for its turn to make the call."""

    def __init__(self, column: pa.Array):
        self.column = column
        self.answer: pa.Array | None = None
        self.error: BaseException | None = None
        self.leads = False
        self.woken = threading.Event()

    def done(self, answer: pa.Array | None = None, error: BaseException | None = None) -> None:
        self.answer, self.error = answer, error
        self.woken.set()


class Batches:
    """Calls of one function from concurrent requests, gathered: the caller that finds no call
    running makes one with every column waiting (its own among them), hands each caller its slice,
    then wakes the first caller that came meanwhile to make the next call. A failed batch is called
    again one column at a time, so that only the column at fault fails."""

    def __init__(self, function: Callable[[pa.Array], pa.Array]):
        self.function = function
        self._lock = threading.Lock()
        self._waiting: list[_Call] = []
        self._calling = False

    def __call__(self, column: pa.Array) -> pa.Array:
        me = _Call(column)
        with self._lock:
            self._waiting.append(me)
            me.leads = not self._calling
            self._calling = True
        if not me.leads:
            me.woken.wait()
        if me.leads:  # no call running (or the last one handed over): make it
            with self._lock:
                batch, self._waiting = self._waiting, []
            self._call(batch)
            with self._lock:
                if self._waiting:
                    self._waiting[0].leads = True
                    self._waiting[0].woken.set()
                else:
                    self._calling = False
        if me.error is not None:
            raise me.error
        return me.answer

    def _call(self, batch: list[_Call]) -> None:
        try:
            answer = self.function(pa.concat_arrays([call.column for call in batch]))
        except Exception:  # noqa: BLE001 - one column's fault: each alone, below
            answer = None
        start = 0
        for call in batch:
            if answer is not None:
                call.done(answer.slice(start, len(call.column)))
                start += len(call.column)
                continue
            try:
                call.done(self.function(call.column))
            except Exception as exc:  # noqa: BLE001 - handed to its caller
                call.done(error=exc)


class LoopBatches:
    """Calls of one in-process function from requests on the event loop, gathered: the first
    caller schedules the call for when the loop has run what is ready (the other requests already
    read), and every caller until then joins it. The call runs on the loop: it is a model's
    prediction in this process, milliseconds. A failed batch is called again column by column."""

    def __init__(self, function: Callable[[pa.Array], pa.Array]):
        self.function = function
        self._waiting: list[tuple[pa.Array, asyncio.Future]] = []

    async def __call__(self, column: pa.Array) -> pa.Array:
        loop = asyncio.get_running_loop()
        answer = loop.create_future()
        self._waiting.append((column, answer))
        if len(self._waiting) == 1:
            loop.call_soon(self._call)
        return await answer

    def _call(self) -> None:
        batch, self._waiting = self._waiting, []
        try:
            whole = self.function(pa.concat_arrays([column for column, _ in batch]))
        except Exception:  # noqa: BLE001 - one column's fault: each alone, below
            whole = None
        start = 0
        for column, answer in batch:
            if answer.cancelled():  # its request went away
                start += len(column)
                continue
            if whole is not None:
                answer.set_result(whole.slice(start, len(column)))
                start += len(column)
                continue
            try:
                answer.set_result(self.function(column))
            except Exception as exc:  # noqa: BLE001 - handed to its caller
                answer.set_exception(exc)


@dataclass(frozen=True)
class _Prepared:
    """What one select needs of one session, looked up at its first request: the registered
    functions its chains call (by weak reference: an unregistered function's model goes with it)
    and which of its answer's columns are vectors. Good while each name holds the same function."""

    functions: dict[str, weakref.ref]
    marks: dict[str, str]

    def current(self, registered: dict[str, SQLFunction]) -> dict[str, SQLFunction] | None:
        """The functions, if the session's registry holds each still (one dict read apiece: atomic,
        no lock, beside a register running in a worker thread); else None."""
        functions = {name: ref() for name, ref in self.functions.items()}
        return functions if all(registered.get(name) is f is not None for name, f in functions.items()) else None


class FastPath:
    """The fast path of one server: a ``Batches`` for each registered function it has called, over
    the function as this process calls it fastest (``nearby``), kept while the function lives; and
    each select's ``_Prepared`` in each session."""

    MAX_PREPARED = 256  # selects x sessions remembered: past it, they are looked up again

    def __init__(self):
        self._lock = threading.Lock()
        # by the function object's id (a dataclass: not hashable), with a weak reference to it: an
        # unregistered function's model, loaded here, goes with it, and a reused id is told apart
        self._batches: dict[int, tuple[weakref.ref, Batches | LoopBatches]] = {}
        self._prepared: dict[tuple[int, str], tuple[weakref.ref, _Prepared]] = {}

    async def answer(self, session: Session, select: str, table: pa.Table,
                     named: str) -> tuple[pa.Table, dict[str, str]] | None:
        """The rows and vector columns ``select`` answers over ``table`` in ``session``, or None:
        the script's way must answer (see the module's doc). ``named``: the select with its ``from``,
        as the script's way runs it (which of its columns are vectors). On the event loop."""
        projections = plan(select)
        if projections is None or session.model_functions is None:
            return None
        found = self._functions(session, select, projections, named)
        given = {name.lower(): name for name in table.column_names}
        if found is None or any(p.column.lower() not in given for p in projections):
            return None
        functions, marks = found
        columns = []
        try:
            for projection in projections:
                column = table.column(given[projection.column.lower()]).combine_chunks()
                for name in projection.functions:
                    if column.null_count:  # DuckDB answers null without calling the function: its way
                        return None
                    if name in COLUMN_FUNCTIONS:
                        column = COLUMN_FUNCTIONS[name](column)
                        continue
                    function = functions[name]
                    known = self._known(function)
                    if known is None:  # its first call here: the model loads off the loop
                        known = await anyio.to_thread.run_sync(self._batched, function)
                    gathered = known[1]
                    if isinstance(gathered, LoopBatches):
                        column = await gathered(column)
                    else:  # on its actors: a blocking call, in a worker thread
                        column = await anyio.to_thread.run_sync(gathered, column)
                columns.append(column)
        except Exception:  # noqa: BLE001 - the script's way says what went wrong, as it always does
            return None
        return pa.Table.from_arrays(columns, names=[p.name for p in projections]), marks

    def _functions(self, session: Session, select: str, projections: tuple[Projection, ...],
                   named: str) -> tuple[dict[str, SQLFunction], dict[str, str]] | None:
        """The registered functions ``projections`` call in ``session`` by name, and the answer's
        vector marks; None if one is not registered there (or the marks cannot be told)."""
        registered = session.model_functions.functions
        key = (id(session), select)
        held = self._prepared.get(key)
        if held is not None and held[0]() is session:
            functions = held[1].current(registered)
            if functions is not None:
                return functions, held[1].marks
        names = {name for p in projections for name in p.functions if name not in COLUMN_FUNCTIONS}
        functions = {name: registered.get(name) for name in names}
        if any(f is None for f in functions.values()):
            return None
        try:
            marks = vectors.of_select(session, named, ())
        except Exception:  # noqa: BLE001 - the script's way says what went wrong, as it always does
            return None
        if len(self._prepared) >= self.MAX_PREPARED:
            self._prepared.clear()
        self._prepared[key] = (weakref.ref(session),
                               _Prepared({name: weakref.ref(f) for name, f in functions.items()}, marks))
        return functions, marks

    def _known(self, function: SQLFunction) -> tuple[weakref.ref, Batches | LoopBatches] | None:
        known = self._batches.get(id(function))  # one dict read: atomic, no lock on the event loop
        return known if known is not None and known[0]() is function else None

    def _batched(self, function: SQLFunction) -> tuple[weakref.ref, Batches | LoopBatches]:
        """``function``'s entry, made on its first call (in a worker thread: loading its model takes
        time): a ``LoopBatches`` when it runs in this process (``nearby``), else its ``Batches``."""
        with self._lock:
            known = self._known(function)
            if known is None:
                for key in [key for key, (ref, *_) in self._batches.items() if ref() is None]:
                    del self._batches[key]
                try:
                    call = function.nearby()
                except Exception as exc:  # noqa: BLE001 - its actors still answer
                    log.warning("%s: the model could not be loaded in the server, its actors answer: %s", function.name, exc)
                    call = function
                gathered = LoopBatches(call) if call is not function else Batches(call)
                known = self._batches[id(function)] = (weakref.ref(function), gathered)
            return known
