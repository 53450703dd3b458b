"""Asynchronous training with sharded parameter servers (seed 004's pattern, for Keras).

    parameter servers: each holds a shard of the weights and adds the changes pushed to it
    workers, each on its own partition, loop without waiting for each other:
        pull every shard → ``steps_per_push`` steps of the model's own optimizer on its batches
        → push each shard its part of the change

A push computed from weights more than ``max_staleness`` updates old is dropped, so a slow
worker cannot drag the model back. Several local steps per push (compiled, like ``fit``) keep
Ray's round trips from costing more than the training. Training ends when the workers together
have taken as many steps as ``rounds`` epochs over all the data: a straggler simply contributes
fewer steps, which is why this mode beats synchronous averaging when workers run at different
speeds.

A worker that dies is replaced and the replacement joins in where the run is, pulling the
current weights (its lost pushes are made up by everyone, as a straggler's are); each death
counts against ``max_failures`` as in synchronous mode. A parameter shard that dies cannot be
replaced, since its part of the weights dies with it: that ends training with a
``TrainingError`` naming the shard.

With a warm pool active (``mlsql_ray.cluster.warm``), the workers and shards of a run that ended well wait
in it for the next asynchronous run of the same shape, TensorFlow imported; each run still starts
from its own model's initial weights.
"""

from __future__ import annotations

import time

import numpy as np

from .. import progress
from ..cluster import warm
from ..cluster.link import stop_actors
from ..errors import first_line
from .actors import Crew, TrainingError, WorkersDied, death_cause
from .result import TrainResult
from .strategy import Strategy
from .worker import Worker


class ParameterShard(warm.WarmActor):
    """A slice of the model's trainable weights. Every worker pushes to every shard, so a shard
    also knows how many pushes the run has made (its budget is counted in pushes); the metrics
    workers send along with their pushes to the first shard wait there for the driver."""

    def __init__(self):
        self.weights: list[np.ndarray] = []
        self.version = 0  # pushes applied
        self.dropped = 0  # pushes too stale to apply
        self.metrics: list[tuple[dict, int]] = []

    def load(self, weights: list[np.ndarray]) -> None:
        """The starting weights of a run (the shard is created, or taken from a warm pool, before
        they exist, so that its process starts while the workers import TensorFlow)."""
        self.weights = [np.array(w, dtype=np.float32) for w in weights]
        self.version, self.dropped, self.metrics = 0, 0, []

    def forget(self) -> None:
        """Drop the run's weights (the shard waits in a warm pool for the next run)."""
        self.weights, self.metrics = [], []

    def pull(self) -> tuple[int, int, list[np.ndarray]]:
        """(version, pushes received so far, weights)."""
        return self.version, self.version + self.dropped, self.weights

    def push(self, changes: list[np.ndarray], version: int, max_staleness: int, metrics=None) -> bool:
        """Add a worker's change, unless the weights it started from are too old."""
        if metrics is not None:
            self.metrics.append(metrics)
        if self.version - version > max_staleness:
            self.dropped += 1
            return False
        for weight, change in zip(self.weights, changes):
            weight += change
        self.version += 1
        return True

    def take(self) -> list[tuple[dict, int]]:
        """The (metrics, rows) sent with pushes since the last call, in the order received."""
        taken, self.metrics = self.metrics, []
        return taken

    def stats(self) -> dict:
        return {"version": self.version, "dropped": self.dropped}


class AsyncWorker(Worker):
    """A training worker (``Worker``: one process, set up per run, kept warm between runs) that
    trains on its own and talks to the parameter shards."""

    def initial_state(self) -> list[np.ndarray]:
        """The common start: this worker's trainable weights."""
        return [np.asarray(v) for v in self.model.trainable_variables]

    def run(self, shards, layout: list[list[int]], budget: int, batch_size: int, steps_per_push: int,
            max_staleness: int) -> None:
        """Train until the run has made ``budget`` pushes in all (this worker's included in the
        metrics it sends with each push to the first shard)."""
        import ray  # heavy: Ray

        variables = self.model.trainable_variables
        order, cursor = self.rng.permutation(len(self.x)), 0
        while True:
            pulled = ray.get([s.pull.remote() for s in shards])
            if pulled[0][1] >= budget:
                return
            for (_, _, values), indexes in zip(pulled, layout):
                for i, value in zip(indexes, values):
                    variables[i].assign(value)
            start = [np.array(v) for v in variables]
            measured, sizes = [], []
            for _ in range(steps_per_push):
                if cursor >= len(order):
                    order, cursor = self.rng.permutation(len(self.x)), 0
                batch = order[cursor : cursor + batch_size]
                cursor += len(batch)
                measured.append(self.model.train_on_batch(self.x[batch], self.y[batch], return_dict=True))
                sizes.append(len(batch))
            metrics = (_weighted(measured, sizes), sum(sizes), self.index)
            for number, (shard, (version, _, _), indexes) in enumerate(zip(shards, pulled, layout)):
                shard.push.remote([np.asarray(variables[i]) - start[i] for i in indexes], version, max_staleness,
                                  metrics if number == 0 else None)

    def model_file(self, weights: list[np.ndarray]) -> bytes:
        """The model with these trainable weights (what the shards hold) as a ``.keras`` file."""
        for variable, value in zip(self.model.trainable_variables, weights):
            variable.assign(value)
        return self.saved_model()


def shard_layout(sizes: list[int], num_shards: int) -> list[list[int]]:
    """Spread weight arrays over shards so each holds about the same number of values
    (largest first, each to the lightest shard)."""
    layout: list[list[int]] = [[] for _ in range(max(1, min(num_shards, len(sizes))))]
    load = [0] * len(layout)
    for index in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        lightest = load.index(min(load))
        layout[lightest].append(index)
        load[lightest] += sizes[index]
    return [sorted(indexes) for indexes in layout]


class AsyncParameterServer(Strategy):
    """The asynchronous strategy: parameter shards hold the weights, workers push to them at their
    own pace. The learning rate is not scaled: every push is applied whole."""

    worker_class = AsyncWorker

    def run(self, crew: Crew, started: float) -> TrainResult:
        config, ray = self.config, crew.ray
        with _Shards(ray, config.num_shards, warm.current()) as shards:
            (counts, initial), _ = crew.retrying("while starting", lambda: (
                [setup["rows"] for setup in crew.ready()], crew.call_worker(0, "initial_state")))
            shards.load(initial)
            startup_seconds = time.monotonic() - started
            pushes_per_round = sum(-(-c // config.batch_size) for c in counts) / config.steps_per_push
            progress.report("train_start", total_rounds=config.rounds, workers=len(crew.workers),
                            actors=list(crew.workers), first_round=1)
            history = _History(config.rounds, pushes_per_round, started, config.on_round)
            budget = int(np.ceil(config.rounds * pushes_per_round))
            _supervise(crew, shards, history, (shards.actors, shards.layout, budget, config.batch_size,
                                               config.steps_per_push, config.max_staleness))
            final = shards.weights()
            model_file, _ = crew.retrying("while saving the model", lambda: crew.call_worker(0, "model_file", final))
            stats = shards.call(0, "stats", "while saving the model")
            pushes = [sum(1 for *_, worker in history.received if worker == i) for i in range(len(crew.workers))]
            history.entries[-1].update(worker_steps=[p * config.steps_per_push for p in pushes],
                                       applied_pushes=stats["version"], dropped_pushes=stats["dropped"])
            elapsed = time.monotonic() - started
            progress.report("train_end", history=history.entries, elapsed=elapsed)
            return TrainResult(history.entries, final, model_file, len(crew.workers), elapsed,
                               startup_seconds=startup_seconds)


def _supervise(crew: Crew, shards: _Shards, history: _History, run_args: tuple) -> None:
    """Run every worker until the push budget is spent, reporting rounds as their pushes arrive.
    A worker that dies is replaced (counted against ``max_failures``, as in synchronous mode): the
    replacement pulls the current weights and joins in; the dead worker's lost steps are simply
    taken by the others, as a straggler's are."""
    ray = crew.ray
    running = {index: worker.run.remote(*run_args) for index, worker in enumerate(crew.workers)}
    while running:
        done, _ = ray.wait(list(running.values()), num_returns=len(running), timeout=0.5)
        crew.when = f"in round {history.current}"
        for index in [i for i, ref in running.items() if ref in done]:  # deaths first: they belong to this round
            try:
                crew.gather({index: running.pop(index)})
            except WorkersDied as died:
                crew.replace(died.causes)
                history.retries[history.current] = history.retries.get(history.current, 0) + 1
                running[index] = crew.workers[index].run.remote(*run_args)
            except TrainingError:
                shards.check(crew.when)  # a worker fails when a shard it pulls from has died: say so
                raise
        history.add(shards.call(0, "take", crew.when))
    history.add(shards.call(0, "take", crew.when), finished=True)


class _History:
    """The rounds of an asynchronous run, reported as their pushes arrive: push k belongs to round
    k // pushes_per_round, and the last round takes the rest."""

    def __init__(self, rounds: int, pushes_per_round: float, started: float, on_round):
        self.rounds, self.pushes_per_round, self.started, self.on_round = rounds, pushes_per_round, started, on_round
        self.entries: list[dict] = []
        self.received: list = []  # (metrics, rows, worker) of every push, in the order received
        self.retries: dict[int, int] = {}  # round → workers replaced while it ran

    @property
    def current(self) -> int:
        """The round being trained (the last one once all have been reported)."""
        return min(len(self.entries) + 1, self.rounds)

    def add(self, pushes: list, finished: bool = False) -> None:
        self.received += pushes
        while (number := len(self.entries) + 1) <= self.rounds and (
                finished or len(self.received) >= number * self.pushes_per_round):
            end = len(self.received) if number == self.rounds else int(number * self.pushes_per_round)
            window = self.received[int((number - 1) * self.pushes_per_round) : end]
            entry = _async_entry(number, window, time.monotonic() - self.started, self.retries.get(number, 0))
            self.entries.append(entry)
            progress.report("train_round", total_rounds=self.rounds, **entry)
            if self.on_round is not None:
                self.on_round(entry)


SHARD_SHAPE = warm.Shape("train.ParameterShard")


class _Shards:
    """The parameter servers of one run. A shard that dies takes its part of the weights with it,
    so unlike a worker it cannot be replaced: training ends with a ``TrainingError`` naming it."""

    def __init__(self, ray, count: int, pool: warm.WarmPool | None):
        self.ray, self.pool = ray, pool
        taken = pool.take(SHARD_SHAPE, count) if pool is not None else []
        self.started = taken + [ray.remote(ParameterShard).options(num_cpus=0, max_restarts=0).remote()
                                for _ in range(count - len(taken))]
        self.actors = list(self.started)
        self.layout: list[list[int]] = []

    def __enter__(self) -> _Shards:
        return self

    def __exit__(self, exc_type, *exc_info) -> None:
        if exc_type is not None or self.pool is None:
            stop_actors(self.ray, self.started)
            return
        self.pool.keep(SHARD_SHAPE, self.started)

    def load(self, initial: list[np.ndarray]) -> None:
        """Spread the starting weights over the shards (as many as there are weight arrays, at most)."""
        self.layout = shard_layout([w.size for w in initial], len(self.actors))
        self.actors = self.actors[: len(self.layout)]
        self._get({i: s.load.remote([initial[w] for w in indexes])
                   for i, (s, indexes) in enumerate(zip(self.actors, self.layout))}, "while starting")

    def call(self, index: int, method: str, when: str):
        return self._get({index: getattr(self.actors[index], method).remote()}, when)[0]

    def weights(self) -> list[np.ndarray]:
        pulled = self._get({i: s.pull.remote() for i, s in enumerate(self.actors)}, "while saving the model")
        final: list = [None] * sum(len(indexes) for indexes in self.layout)
        for indexes, (_, _, values) in zip(self.layout, pulled):
            for i, value in zip(indexes, values):
                final[i] = value
        return final

    def check(self, when: str) -> None:
        self._get({i: s.stats.remote() for i, s in enumerate(self.actors)}, when)

    def _get(self, refs: dict[int, object], when: str) -> list:
        results = []
        for index, ref in refs.items():
            try:
                results.append(self.ray.get(ref))
            except self.ray.exceptions.RayTaskError as exc:
                raise TrainingError(f"parameter shard {index} failed {when}: {first_line(exc.cause or exc, named=True)}") from None
            except self.ray.exceptions.RayError as exc:
                raise TrainingError(f"parameter shard {index} died {when} ({death_cause(exc)}); the weights it held "
                                    f"are lost, so asynchronous training cannot go on") from None
        return results


def _weighted(metrics: list[dict], sizes: list[int]) -> dict:
    """Each metric averaged over steps, weighted by their batch sizes."""
    total = sum(sizes)
    return {k: float(sum(float(m[k]) * n for m, n in zip(metrics, sizes)) / total) for k in metrics[0]}


def _async_entry(number: int, window: list, elapsed: float, retries: int) -> dict:
    entry = _weighted([m for m, *_ in window], [n for _, n, _ in window]) if window else {}
    return {"round": number, **entry, "elapsed": elapsed, "retries": retries}
