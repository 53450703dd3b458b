"""Start-up overlapped with the work before it (issue 27): a request that will train starts Ray,
and the warm workers its training takes, in the background as soon as it is parsed, while the
statements before the training (loads, selects) run.

What counts as training is decided from the parsed statements, at the top level of the request
(not inside includes or ``!if`` branches, whose statements are known only when they run):

* a ``--%python`` cell (or ``run ... as Ray.`` with ``code``) whose text calls ``train.fit(`` or
  ``search(`` (a plain text match, ``TRAINING_CALL``: a call spelled otherwise is not seen and
  simply starts its workers itself, as before): Ray, and one TensorFlow training worker per
  partition (``num_partitions``, else the cluster's CPUs; never more than its free CPUs) for a cell
  on the driver (``runIn=executor`` cells train without the session's pool: Ray only);
* ``train T as ALG.`...``` of a built-in algorithm with several parameter groups: Ray, and the
  ``GroupHost`` actors its groups will run on, with the algorithm's library imported (a single group
  runs in this process and needs nothing; an algorithm that trains on Ray itself gets Ray only).
  On a cluster that is this machine alone the groups are fitted in this process while no warm
  hosts are ready (``ml.runner.fitted_here``): the start imports the algorithm's library and its
  serialiser here instead, first (before Ray), and starts no host, whose start would take the CPUs
  the statements before the training and its fits use; the train statement reads and checks its
  rows meanwhile and waits for the imports at its first fit (``ml.runner.load_ahead``);
* ``register`` of a model (tf, keras or a built-in algorithm's): Ray.

What a ``train`` or ``register`` needs is its model kind's answer (``ml.kinds``, ``Kind.ahead``).

The workers go to the session's warm pool, announced first (``WarmPool.expect``): the run that
needs them waits for them there instead of starting its own, and a Ray start in progress is joined
by the ``RayLink.ensure`` that needs it. An error in the background start is raised by that
``ensure``, at the statement that needs Ray, as if that statement had met it. A request that fails
before its training statement runs releases what was started for it: the actors nobody took, and
the Ray the start began (this process's own, by its handle).
"""

from __future__ import annotations

import datetime as dt
import re
import threading
import time
from dataclasses import dataclass, field

from ..cluster import warm
from ..cluster.link import local_cpus, stop_actors
from .. import options
from ..lang import ast
from ..ml import runner
from ..ml.runner import HOST_KIND, GroupHost, host_layout, load_ahead
from ..train.strategy import worker_shape
from ..train.worker import Worker
from .kinds import KINDS

#: the calls that make a Python cell a training one (see the module's docstring)
TRAINING_CALL = re.compile(r"\btrain\s*\.\s*(?:fit|search)\s*\(|\bsearch\s*\(")
#: seconds the background start waits for its actors to answer before giving up on them
ACTOR_START_TIMEOUT_S = 300
#: how often that wait looks whether the request was cancelled
CANCEL_POLL_S = 0.2


@dataclass(frozen=True)
class Needs:
    """What a request's training will need: Ray, and the actors to start ahead."""

    tensorflow_workers: int | None = None  # None: none; 0: one per CPU of the cluster
    group_hosts: tuple[int, tuple[str, ...]] | None = None  # (groups, algorithms) of a train statement


def needs(statement: ast.Statement) -> Needs | None:
    """What ``statement`` will need started, or None if it trains nothing: a Python cell's from its
    code, a ``train``'s or ``register``'s from the kind of model its format names (``engine.kinds``)."""
    if isinstance(statement, ast.PythonCell):
        return _cell_needs(statement.code, statement.annotations)
    if isinstance(statement, ast.Train) and statement.verb == "run":
        if statement.format.lower() != "ray":
            return None
        cell_options = dict(statement.options)
        return _cell_needs(cell_options.get("code", ""), cell_options)
    if isinstance(statement, (ast.Register, ast.Train)):
        kind = KINDS.find(statement.format, "ahead")
        with options.noting(options.Notes()):  # the statement warns of unknown options when it runs
            ahead = kind.ahead(statement) if kind is not None else None
        return None if ahead is None else Needs(group_hosts=ahead.group_hosts)
    return None


def _cell_needs(code: str, annotations) -> Needs | None:
    if not TRAINING_CALL.search(code):
        return None
    if annotations.get("runIn") == "executor":
        return Needs()
    partitions = annotations.get("num_partitions", "")
    return Needs(tensorflow_workers=int(partitions) if partitions.isdigit() else 0)


@dataclass
class Prestart:
    """One request's background start: ``started`` / ``ray_ready`` / ``workers_ready`` say when
    (the clock of ``Job.started``), for ``!show jobs``-like accounting and the tests."""

    session: object
    needs: Needs
    triggers: set[tuple]  # the statements that need it, by kind and position
    started: dt.datetime = field(default_factory=lambda: dt.datetime.now().astimezone())
    ray_ready: dt.datetime | None = None
    workers_ready: dt.datetime | None = None
    started_ray: bool = False
    fits_here: bool = False  # the train's groups will be fitted here: their libraries imported, no host started
    imported: dt.datetime | None = None  # when those libraries were imported here
    actors: list = field(default_factory=list)  # the actors started ahead (some may be taken by now)
    reached: bool = False  # a statement that needs the start began running
    _arrivals: dict = field(default_factory=dict)  # shape -> the event its pool's take waits for
    _thread: threading.Thread | None = None
    _cancelled: threading.Event = field(default_factory=threading.Event)
    _load: object = None  # the imports to make here first (``ml.runner.load_ahead``), when fits_here

    @classmethod
    def begin(cls, session, statements: list[ast.Statement]) -> Prestart | None:
        """Start what ``statements`` will need, in the background; None if they train nothing."""
        wanted = [(s, n) for s in statements if (n := needs(s)) is not None]
        if not wanted:
            return None
        merged = Needs(next((n.tensorflow_workers for _, n in wanted if n.tensorflow_workers is not None), None),
                       next((n.group_hosts for _, n in wanted if n.group_hosts is not None), None))
        prestart = cls(session, merged, {_where(s) for s, _ in wanted})
        prestart.fits_here = prestart._groups_here()
        if prestart.fits_here:
            prestart._load = load_ahead(merged.group_hosts[1])
        prestart._arrivals = {shape: session.workers.expect(shape) for shape in prestart._shapes_ahead()}
        prestart._thread = threading.Thread(target=prestart._run, name="mlsql-prestart", daemon=True)
        prestart._thread.start()
        return prestart

    def reach(self, statement: ast.Statement) -> None:
        """Note that ``statement`` is running (a training one: what was started is in use now)."""
        if _where(statement) in self.triggers:
            self.reached = True

    def running(self) -> bool:
        """Whether the background start is still at work."""
        return self._thread.is_alive()

    def stop(self) -> None:
        """Stop waiting for actors still starting (they are stopped), and wait for the start to end."""
        self._cancelled.set()
        self._thread.join()

    def cancel(self) -> None:
        """The request failed: if no training statement ran, stop what was started for it (once
        the background start has stopped: it gives up waiting for its actors when told to, a Ray
        start in progress is waited for)."""
        if self.reached:
            return
        self.stop()
        self.session.workers.release(self.actors)
        if self.started_ray:
            self.session.ray_link.shutdown()

    # -- the background thread -------------------------------------------------------------------------

    def _shapes_ahead(self) -> list[warm.Shape]:
        shapes = []
        if self.needs.tensorflow_workers is not None:
            shapes.append(_worker_shape())
        if self.needs.group_hosts is not None and not self.fits_here:
            shapes.append(_host_shape(self._host_layout(None)[0]))
        return shapes

    def _host_layout(self, cpus: int | None) -> tuple[int, int]:
        """(threads per host, hosts) as ``ml.runner.run_groups`` will ask for them."""
        return host_layout(self.needs.group_hosts[0], cpus or local_cpus())

    def _groups_here(self) -> bool:
        """Whether the train's groups will be fitted in this process: a cluster of this machine alone
        (a cluster at an address not yet reached counts as another: its hosts are started)."""
        return self.needs.group_hosts is not None and runner.one_machine(self.session.ray_link)

    def _run(self) -> None:
        link = self.session.ray_link
        try:
            if self._load is not None:
                self._load()
                self.imported = dt.datetime.now().astimezone()
            import ray  # heavy: Ray

            connected = link.ensure_ahead()
            if connected is None:
                return  # the statement that needs Ray raises the error
            self.started_ray = connected == "started"
            self.ray_ready = dt.datetime.now().astimezone()
            if self._cancelled.is_set():
                return
            self._start_actors(ray, link.cpus())
            self.workers_ready = dt.datetime.now().astimezone()
        except Exception:  # noqa: BLE001 - a start ahead is a bonus: the run starts its own actors instead
            pass
        finally:
            for arrival in self._arrivals.values():
                arrival.set()

    def _start_actors(self, ray, cpus: int) -> None:
        pool = self.session.workers
        free = int(ray.available_resources().get("CPU", 0))
        starts = []  # (shape, actors, calls that answer once each is ready)
        if self.needs.tensorflow_workers is not None:
            count = min(self.needs.tensorflow_workers or cpus, free)
            actor = ray.remote(Worker).options(num_cpus=1, num_gpus=0, max_restarts=0)
            actors = [actor.remote(1) for _ in range(count)]
            starts.append((_worker_shape(), actors, [a.pid.remote() for a in actors]))
            free -= count
        if self.needs.group_hosts is not None and not self.fits_here:
            threads, count = self._host_layout(cpus)
            count = min(count, free // threads)
            actor = ray.remote(GroupHost).options(num_cpus=threads, max_restarts=0)
            actors = [actor.remote() for _ in range(count)]
            algorithms = self.needs.group_hosts[1]
            starts.append((_host_shape(threads), actors, [a.load.remote(algorithms) for a in actors]))
        for shape, actors, calls in starts:
            self.actors += actors
            ready = self._wait(ray, calls)
            answers = [call in ready and warm.answered(ray, call) for call in calls]
            stop_actors(ray, [a for a, live in zip(actors, answers) if not live])
            pool.give(shape, [a for a, live in zip(actors, answers) if live])
            if shape in self._arrivals:
                self._arrivals[shape].set()  # that shape's taker need not wait for the others


    def _wait(self, ray, calls: list) -> list:
        """The calls that answered, within ``ACTOR_START_TIMEOUT_S`` or until the request is cancelled."""
        deadline = time.monotonic() + ACTOR_START_TIMEOUT_S
        ready: list = []
        while len(ready) < len(calls) and time.monotonic() < deadline and not self._cancelled.is_set():
            ready, _ = ray.wait(calls, num_returns=len(calls), timeout=CANCEL_POLL_S)
        return ready


def _where(statement: ast.Statement) -> tuple:
    """A top-level statement of a request, told apart from the others (compile-time ``set``s may
    hand the session copies of the parsed statements)."""
    return type(statement), statement.line, statement.col


def _worker_shape() -> warm.Shape:
    """The shape of ``train.fit``'s default workers (one CPU each), as ``train.strategy`` takes them."""
    return worker_shape(Worker, 1, 0)


def _host_shape(threads: int) -> warm.Shape:
    return warm.Shape(HOST_KIND, threads)
