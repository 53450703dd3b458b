"""The worker actors of one training run, supervised; shared by synchronous ``fit`` and ``async_ps``.

Every call to the workers goes through a ``Crew``. A worker that dies (its process killed, out of
memory, its node gone) is replaced by a fresh actor for the same partition and the step that
lost it runs again; each death counts against ``max_failures``, and one too many ends training
with a ``TrainingError`` naming the worker, when it died and why. A worker whose own code raises
is a bug, not bad luck: that ends training at once, with its error. When the ``with`` block is
left every actor the run used is dead, except, after a run that ended well, the live workers a
``keep`` callback takes (a warm pool, see ``mlsql_ray.cluster.warm``).
"""

from __future__ import annotations

from typing import Callable, TypeVar

from ..cluster import ray_internals
from ..cluster.link import kill_actor, remote_error_line, stop_actors
from ..errors import MLSQLError, first_line

T = TypeVar("T")


class TrainingError(MLSQLError):
    """Training could not finish; the message names the worker and the cause."""


class WorkersDied(Exception):
    """Workers died during a step (index → cause); ``Crew.retrying`` replaces them and retries."""

    def __init__(self, causes: dict[int, str]):
        super().__init__(causes)
        self.causes = causes


class Crew:
    """One actor per partition: worker ``index`` is the next of ``reused`` (warm actors taken from a
    pool, in the last run's worker order, so each keeps the partition it read) while any are left,
    else ``new()``, and is sent ``setup(*setup_args(index))`` at once (``ready`` waits for those
    calls; a replacement renews its own). Replacements included, every actor ever started is
    stopped on leaving the ``with`` block, but for those ``keep(workers)`` takes when the block
    ends without an exception."""

    def __init__(self, ray, new: Callable[[], object], setup_args: Callable[[int], tuple], size: int,
                 max_failures: int, reused: list = (), keep: Callable[[list], None] | None = None):
        self.ray = ray
        self._new, self._setup_args, self._reused = new, setup_args, list(reused)
        self._keep = keep
        self.max_failures = max_failures
        self.failures = 0
        self.when = "while starting"  # the step running now, for messages
        self.setups: dict[int, object] = {}  # index → its worker's setup call
        self.workers = [self._start(index) for index in range(size)]
        self.started = list(self.workers)

    def _start(self, index: int):
        actor = self._reused.pop(0) if self._reused else self._new()
        self.setups[index] = actor.setup.remote(*self._setup_args(index))
        return actor

    def ready(self) -> list:
        """Every worker's answer to its setup call (a step to run inside ``retrying``)."""
        return self.gather(dict(self.setups))

    def __enter__(self) -> Crew:
        return self

    def __exit__(self, exc_type, *exc_info) -> None:
        kept = list(self.workers) if exc_type is None and self._keep is not None else []
        kept_ids = {ray_internals.actor_id(a) for a in kept}
        stop_actors(self.ray, [a for a in self.started if ray_internals.actor_id(a) not in kept_ids])
        if kept:
            self._keep(kept)

    def retrying(self, when: str, step: Callable[[], T]) -> tuple[T, int]:
        """``step()``'s result and how many times it was retried: after a death the dead are
        replaced and the whole step runs again (a death during the retry counts too)."""
        retries = 0
        while True:
            self.when = when
            try:
                return step(), retries
            except WorkersDied as died:
                self.replace(died.causes)
                retries += 1

    def call(self, method: str, *args) -> list:
        """``method(*args)`` on every worker, their results in worker order."""
        return self.gather({index: getattr(worker, method).remote(*args) for index, worker in enumerate(self.workers)})

    def call_worker(self, index: int, method: str, *args):
        return self.gather({index: getattr(self.workers[index], method).remote(*args)})[0]

    def gather(self, refs: dict[int, object]) -> list:
        """The results of calls on workers (index → object ref). Raises ``WorkersDied`` naming all
        the workers found dead, or ``TrainingError`` when a worker's code failed."""
        results, died = [], {}
        for index, ref in refs.items():
            try:
                results.append(self.ray.get(ref))
            except self.ray.exceptions.RayError as exc:
                died[index] = self.classify(index, exc)
        if died:
            raise WorkersDied(died)
        return results

    def classify(self, index: int, exc: Exception) -> str:
        """The cause of a worker's death, or ``TrainingError`` if ``exc`` is its own code failing."""
        errors = self.ray.exceptions
        if isinstance(exc, errors.RayTaskError):
            raise TrainingError(f"training worker {index} failed {self.when}: {first_line(exc.cause or exc, named=True)}") from None
        if isinstance(exc, errors.RayActorError) and exc.actor_init_failed:  # its __init__ raised
            raise TrainingError(f"training worker {index} failed {self.when}: {remote_error_line(exc)}") from None
        return death_cause(exc)  # killed, out of memory, its node or its result lost

    def replace(self, causes: dict[int, str]) -> None:
        """Count the deaths against ``max_failures``; within it, start a fresh actor for each."""
        self.failures += len(causes)
        if self.failures > self.max_failures:
            index, cause = next(iter(causes.items()))
            raise TrainingError(f"training worker {index} died {self.when} ({cause}); {self.failures} failures "
                                f"is more than max_failures={self.max_failures}") from None
        for index in causes:
            kill_actor(self.ray, self.workers[index])  # one whose result was lost may live on, holding its CPU
            self.workers[index] = self._start(index)
            self.started.append(self.workers[index])


def death_cause(exc: BaseException) -> str:
    """``ActorDiedError: The actor is dead because it was killed by `ray.kill`.`` rather than
    Ray's generic first line."""
    reason = next((line for line in str(exc).splitlines() if line.startswith("The actor is dead because")), None)
    if reason is None:
        return first_line(exc, named=True)
    return f"{type(exc).__name__}: {reason.split('. ')[0].rstrip('.')}."
