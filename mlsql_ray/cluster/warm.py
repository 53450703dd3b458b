"""Warm workers: a session keeps the Ray actors of its last runs for the next one.

Starting a training or prediction actor costs a Ray worker process, ``import ray`` and TensorFlow
or scikit-learn: seconds per worker per run, more than a small training itself. A ``WarmPool``
keeps the actors a run is done with, idle, and hands them to the next run asking for the same
kind of actor with the same resources (CPUs and GPUs per actor); the run gives each its own
work (a training worker builds a fresh model from the run's ``model_fn``, so no weights carry
over; it keeps the rows it read when the next run feeds it the same data server). A model
function's actor asks for no CPU, so it runs where it is pinned: it is handed out only for the
node it runs on (``take_on``).

An idle actor still holds its CPUs, so the pool lets them go:
- after ``idle_seconds`` unused, and beyond ``cap`` idle actors (the oldest first);
- when the session closes, and when a run is interrupted (``KeyboardInterrupt``);
- before a run of ours asks Ray for CPUs they hold (``make_room``), and whenever Ray reports
  work waiting for resources (a watcher thread polls the cluster's pending demand while the pool
  holds anything): another job, or a task of the user's, never waits on our idle actors.
An idle actor found dead when taken (killed, out of memory) is dropped and a fresh one started.
Actors may also be started for the pool ahead of need (``start_ahead``): they join it once each
has answered, and ``release`` stops those still starting too.

Runs find the pool through ``current()``: a ``Session`` activates its own around the statements
that train or register; from plain Python, ``with WarmPool() as pool, pool.active(): ...``.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Callable, Iterator

from . import ray_internals
from .link import stop_actors

#: seconds an idle actor is kept (``$MLSQL_WARM_IDLE_S``; 0 turns pooling off)
DEFAULT_IDLE_SECONDS = float(os.environ.get("MLSQL_WARM_IDLE_S", "600"))
#: idle actors kept at most (``$MLSQL_WARM_CAP``)
DEFAULT_CAP = int(os.environ.get("MLSQL_WARM_CAP", "8"))
#: how often the watcher looks at idle times and the cluster's pending demand
POLL_SECONDS = 0.5
#: how long a taken actor may take to answer before it counts as dead
PING_TIMEOUT_S = 10
#: how long an actor started ahead (``WarmPool.start_ahead``) may take to answer before it is stopped
START_AHEAD_TIMEOUT_S = 300

_current: contextvars.ContextVar[WarmPool | None] = contextvars.ContextVar("warm_pool", default=None)
_pools: weakref.WeakSet[WarmPool] = weakref.WeakSet()  # every pool of this process (sessions', users')


def current() -> WarmPool | None:
    """The pool runs started now should use (None: every actor is started fresh and stopped)."""
    return _current.get()


@dataclass(frozen=True)
class Shape:
    """What makes an actor reusable by another run: its class and the resources it holds."""

    kind: str
    cpus: float = 0
    gpus: float = 0


class WarmActor:
    """Base of the actor classes a pool keeps: taking one asks its ``pid`` first, to see it answers."""

    def pid(self) -> int:
        return os.getpid()


@dataclass
class _Idle:
    actor: object
    shape: Shape
    since: float
    job: str  # the Ray job (driver connection) that started it: after a reconnect it is gone


class WarmPool:
    def __init__(self, idle_seconds: float = DEFAULT_IDLE_SECONDS, cap: int = DEFAULT_CAP):
        self.idle_seconds = idle_seconds
        self.cap = cap
        self._idle: list[_Idle] = []
        self._lock = threading.Lock()
        self._watcher: threading.Thread | None = None
        self._expected: dict[Shape, list[threading.Event]] = {}  # actors being started ahead (expect)
        self._starting: dict[int, object] = {}  # id -> actor started by start_ahead, not yet given
        self._arrivals: list[threading.Thread] = []  # start_ahead's threads
        self._releases = 0  # how many times everything was released (an arrival after one is stopped)
        _pools.add(self)

    # -- use by runs ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def active(self) -> Iterator[WarmPool]:
        """Make this the pool of the runs started inside (see ``current``)."""
        token = _current.set(self)
        try:
            yield self
        finally:
            _current.reset(token)

    def expect(self, shape: Shape) -> threading.Event:
        """Announce actors of ``shape`` being started ahead of need (``engine.prestart``): until the
        returned event is set (after they were ``give``n, or failed), ``take`` of that shape waits for
        them instead of starting its own."""
        arrival = threading.Event()
        with self._lock:
            self._expected.setdefault(shape, []).append(arrival)
        return arrival

    def take(self, shape: Shape, count: int) -> list:
        """Up to ``count`` live idle actors of ``shape``, now the caller's: the newest ``count``, in the
        order they were given, so a run's worker N gets the last run's worker N (and its partition)."""
        return [actor for actor in self.take_on(shape, [None] * count)[::-1] if actor is not None]

    def idle_count(self, shape: Shape) -> int:
        """How many idle actors of ``shape`` a run could take now (not asked whether they answer)."""
        import ray  # heavy: Ray

        job = _job_id(ray)
        with self._lock:
            return sum(i.shape == shape and i.job == job for i in self._idle)

    def take_on(self, shape: Shape, nodes: list[str | None]) -> list:
        """For each of ``nodes`` (node ids, repeats allowed; None: any node) a live idle actor of
        ``shape`` already running there (the newest first), now the caller's, or None. An actor that
        asks Ray for no resources goes only where it is told (model functions'), so one reused for a
        node must be on it already; idle actors elsewhere stay idle."""
        import ray  # heavy: Ray

        with self._lock:
            expected = self._expected.pop(shape, [])
        for arrival in expected:
            arrival.wait()
        job = _job_id(ray)
        with self._lock:
            candidates = [i for i in self._idle if i.shape == shape and i.job == job][::-1]
        pinned = any(node is not None for node in nodes)
        where = {id(i): ray_internals.actor_node(i.actor) for i in candidates} if pinned else {}  # GCS calls
        chosen: list[_Idle | None] = []
        with self._lock:
            candidates = [i for i in candidates if i in self._idle]  # the watcher may have let some go
            for node in nodes:
                match = next((i for i in candidates if node is None or where[id(i)] == node), None)
                if match is not None:
                    candidates.remove(match)
                chosen.append(match)
            self._idle = [i for i in self._idle if i not in chosen]
        taken = [i for i in chosen if i is not None]
        answering = dict(zip(map(id, taken), _answering(ray, [i.actor for i in taken])))
        return [i.actor if i is not None and answering[id(i)] else None for i in chosen]

    def give(self, shape: Shape, actors: list) -> None:
        """Keep ``actors`` (each already told to forget its run) for the next run of ``shape``."""
        if not actors:
            return
        import ray  # heavy: Ray

        if self.idle_seconds <= 0 or self.cap <= 0:
            stop_actors(ray, actors)
            return
        job, now = _job_id(ray), time.monotonic()
        with self._lock:
            self._idle += [_Idle(a, shape, now, job) for a in actors]
            extra = self._idle[: max(0, len(self._idle) - self.cap)]
            self._idle = self._idle[len(extra):]
            if self._watcher is None:
                self._watcher = threading.Thread(target=self._watch, name="mlsql-warm-pool", daemon=True)
                self._watcher.start()
        stop_actors(ray, [i.actor for i in extra])

    def start_ahead(self, shape: Shape, actors: list, ready_calls: list) -> None:
        """Keep ``actors``, still starting, for the next run of ``shape``: a thread gives each to the
        pool once its call in ``ready_calls`` has answered (one that fails or takes longer than
        ``START_AHEAD_TIMEOUT_S`` is stopped). Runs meanwhile do not wait for them; ``settle`` does."""
        with self._lock:
            self._starting.update((id(a), a) for a in actors)
            thread = threading.Thread(target=self._arrive, args=(shape, actors, ready_calls, self._releases),
                                      name="mlsql-warm-start", daemon=True)
            self._arrivals = [t for t in self._arrivals if t.is_alive()] + [thread]
        thread.start()

    def settle(self, timeout: float | None = None) -> None:
        """Wait until the actors ``start_ahead`` is starting have joined the pool (or were stopped)."""
        with self._lock:
            arrivals = list(self._arrivals)
        for thread in arrivals:
            thread.join(timeout)

    def _arrive(self, shape: Shape, actors: list, calls: list, releases: int) -> None:
        import ray  # heavy: Ray

        deadline, ready = time.monotonic() + START_AHEAD_TIMEOUT_S, []
        while len(ready) < len(calls) and time.monotonic() < deadline:
            with self._lock:
                if not any(id(a) in self._starting for a in actors):
                    return  # released meanwhile (session closed, run interrupted): stopped there
            try:
                ready, _ = ray.wait(calls, num_returns=len(calls), timeout=POLL_SECONDS)
            except Exception:  # noqa: BLE001 - Ray went away: the actors with it
                return
        live = [a for a, call in zip(actors, calls) if call in ready and answered(ray, call)]
        with self._lock:
            mine = [a for a in actors if self._starting.pop(id(a), None) is not None]
        stop_actors(ray, [a for a in mine if not any(a is b for b in live)])
        arrived = [a for a in mine if any(a is b for b in live)]
        self.give(shape, arrived)
        if self._releases != releases:  # released while they were being given
            self.release(arrived)

    def keep(self, shape: Shape, actors: list) -> None:
        """Tell each actor to forget its run (its ``forget`` method), then ``give`` them."""
        for actor in actors:
            actor.forget.remote()
        self.give(shape, actors)

    def release(self, actors: list | None = None) -> None:
        """Stop every idle actor (session closed, run interrupted), or those of ``actors`` still
        idle here, and wait until Ray says so."""
        if actors is None:
            with self._lock:
                starting, self._starting = list(self._starting.values()), {}
                self._releases += 1
            if starting:
                import ray  # heavy: Ray

                if ray.is_initialized():
                    stop_actors(ray, starting)
            self._release(lambda i: True)
        else:
            chosen = {id(a) for a in actors}
            self._release(lambda i: id(i.actor) in chosen)

    def idle_actors(self) -> list:
        """The idle actors' handles (for tests and diagnostics)."""
        with self._lock:
            return [i.actor for i in self._idle]

    def __enter__(self) -> WarmPool:
        return self

    def __exit__(self, *exc_info) -> None:
        self.release()

    # -- letting go ----------------------------------------------------------------------------

    def _release(self, which: Callable[[_Idle], bool]) -> None:
        with self._lock:
            gone = [i for i in self._idle if which(i)]
            self._idle = [i for i in self._idle if not which(i)]
        if gone:
            import ray  # heavy: Ray

            if ray.is_initialized():
                stop_actors(ray, [i.actor for i in gone])

    def _watch(self) -> None:
        """While anything is idle: drop what has been idle too long, and everything holding
        resources as soon as the cluster has work waiting for them."""
        import ray  # heavy: Ray

        while True:
            with self._lock:
                if not self._idle:
                    self._watcher = None
                    return
            try:
                if not ray.is_initialized():
                    with self._lock:
                        self._idle = []  # Ray went away, and the actors with it
                    continue
                limit = time.monotonic() - self.idle_seconds
                self._release(lambda i: i.since < limit)
                if ray_internals.pending_resource_demand(ray.get_runtime_context().gcs_address):
                    self._release(lambda i: i.shape.cpus > 0 or i.shape.gpus > 0)
            except Exception:  # noqa: BLE001 - a Ray shutting down under us: try again, or end above
                pass
            time.sleep(POLL_SECONDS)


def make_room(ray, cpus: float, gpus: float = 0) -> None:
    """Before asking Ray for ``cpus``/``gpus`` that are not free: every pool of this process lets
    go of its idle actors holding any (Ray does not say which node a new actor would land on).
    Pools of other processes see the request waiting and let go by themselves."""
    free = ray.available_resources()
    if free.get("CPU", 0) + 1e-9 >= cpus and free.get("GPU", 0) + 1e-9 >= gpus:
        return
    for pool in list(_pools):
        pool._release(lambda i: i.shape.cpus > 0 or i.shape.gpus > 0)


@contextlib.contextmanager
def released_on_interrupt(pool: WarmPool | None) -> Iterator[None]:
    """An interrupted run (Ctrl-C, the kernel's interrupt) takes the pool's idle actors with it:
    the user stopped us, and gets every CPU back."""
    try:
        yield
    except KeyboardInterrupt:
        if pool is not None:
            pool.release()
        raise


def _answering(ray, actors: list) -> list[bool]:
    """Whether each of ``actors`` answers (its pid) within ``PING_TIMEOUT_S``; those that do not
    (dead, hung: not reusable, whatever the cause) are killed."""
    refs = [actor.pid.remote() for actor in actors]
    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=PING_TIMEOUT_S) if refs else ([], [])
    answers = []
    for ref in refs:
        try:
            if ref not in ready:
                raise TimeoutError
            ray.get(ref)
            answers.append(True)
        except Exception:  # noqa: BLE001 - dead or hung: not reusable, whatever the cause
            answers.append(False)
    stop_actors(ray, [actor for actor, live in zip(actors, answers) if not live])
    return answers


def answered(ray, call) -> bool:
    """Whether ``call`` (made on an actor starting up) returned: the actor is up."""
    try:
        ray.get(call)
        return True
    except Exception:  # noqa: BLE001 - an actor that failed to start
        return False


def _job_id(ray) -> str:
    return ray.get_runtime_context().get_job_id()
