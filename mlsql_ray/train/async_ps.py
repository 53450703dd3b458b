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
"""

from __future__ import annotations

import time

import numpy as np

from .. import progress
from .data import load_xy
from .worker import Straggler, configure_tensorflow


class ParameterShard:
    """A slice of the model's trainable weights. Every worker pushes to every shard, so a shard
    also knows how many pushes the run has made (its budget is counted in pushes); the metrics
    workers send along with their pushes to the first shard wait there for the driver."""

    def __init__(self):
        self.weights: list[np.ndarray] = []
        self.version = 0  # pushes applied
        self.dropped = 0  # pushes too stale to apply
        self.metrics: list[tuple[dict, int]] = []

    def load(self, weights: list[np.ndarray]) -> None:
        """The starting weights (the shard is created before they exist, so that its process
        starts while the workers import TensorFlow)."""
        self.weights = [np.array(w, dtype=np.float32) for w in weights]

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


class AsyncWorker:
    def __init__(self, index: int, model_fn, source, prepare, threads: int, learning_rate: float | None,
                 slowdown: float = 1.0):
        configure_tensorflow(threads)
        self.model = model_fn()
        if learning_rate is not None:
            self.model.optimizer.learning_rate.assign(learning_rate)
        self.x, self.y = load_xy(source, prepare)
        self.rng = np.random.default_rng(index)
        self.straggler = Straggler(slowdown)

    def ready(self) -> int:
        return len(self.x)

    def initial_state(self) -> list[np.ndarray]:
        """The common start: this worker's trainable weights."""
        return [np.asarray(v) for v in self.model.trainable_variables]

    def run(self, shards, layout: list[list[int]], budget: int, batch_size: int, steps_per_push: int,
            max_staleness: int) -> int:
        """Train until the run has made ``budget`` pushes in all; returns the steps taken here."""
        import ray

        variables = self.model.trainable_variables
        steps = 0
        order, cursor = self.rng.permutation(len(self.x)), 0
        while True:
            pulled = ray.get([s.pull.remote() for s in shards])
            if pulled[0][1] >= budget:
                return steps
            for (_, _, values), indexes in zip(pulled, layout):
                for i, value in zip(indexes, values):
                    variables[i].assign(value)
            start = [np.array(v) for v in variables]
            measured, sizes = [], []
            with self.straggler.work():
                for _ in range(steps_per_push):
                    if cursor >= len(order):
                        order, cursor = self.rng.permutation(len(self.x)), 0
                    batch = order[cursor : cursor + batch_size]
                    cursor += len(batch)
                    measured.append(self.model.train_on_batch(self.x[batch], self.y[batch], return_dict=True))
                    sizes.append(len(batch))
            metrics = (_weighted(measured, sizes), sum(sizes))
            for number, (shard, (version, _, _), indexes) in enumerate(zip(shards, pulled, layout)):
                shard.push.remote([np.asarray(variables[i]) - start[i] for i in indexes], version, max_staleness,
                                  metrics if number == 0 else None)
            steps += steps_per_push

    def model_file(self, weights: list[np.ndarray]) -> bytes:
        import os
        import tempfile

        for variable, value in zip(self.model.trainable_variables, weights):
            variable.assign(value)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "model.keras")
            self.model.save(path)
            with open(path, "rb") as f:
                return f.read()


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


def fit_async(ray, model_fn, data, *, rounds: int, batch_size: int, prepare, threads: int, cpus_per_worker: float,
              learning_rate: float | None, max_staleness: int, num_shards: int, steps_per_push: int,
              slowdown: dict[int, float] | None, on_round, stop_actors):
    """The asynchronous counterpart of ``trainer.fit`` (which checks arguments and resources)."""
    from .trainer import TrainResult, _gather

    slowdown = slowdown or {}
    worker_class = ray.remote(AsyncWorker).options(num_cpus=cpus_per_worker, max_restarts=0)
    workers = [worker_class.remote(i, model_fn, data[i], prepare, threads, learning_rate, slowdown.get(i, 1.0))
               for i in range(len(data))]
    shards = [ray.remote(ParameterShard).options(num_cpus=0).remote() for _ in range(num_shards)]
    actors = workers + shards
    started = time.monotonic()
    try:
        counts = _gather(ray, [w.ready.remote() for w in workers], "starting")
        initial = ray.get(workers[0].initial_state.remote())
        layout = shard_layout([w.size for w in initial], num_shards)
        shards = shards[: len(layout)]
        pushes_per_round = sum(-(-c // batch_size) for c in counts) / steps_per_push
        ray.get([s.load.remote([initial[i] for i in indexes]) for s, indexes in zip(shards, layout)])
        startup_seconds = time.monotonic() - started
        progress.report("train_start", total_rounds=rounds, workers=len(workers), actors=list(workers), first_round=1)
        running = [w.run.remote(shards, layout, int(np.ceil(rounds * pushes_per_round)), batch_size, steps_per_push,
                               max_staleness) for w in workers]
        history: list[dict] = []
        received: list = []  # (metrics, rows) of every push so far: push k belongs to round k // pushes_per_round
        pending = list(running)
        while len(history) < rounds:
            _, pending = ray.wait(pending, num_returns=len(pending), timeout=0.5)
            received += ray.get(shards[0].take.remote())
            while len(history) < rounds and (len(received) >= (len(history) + 1) * pushes_per_round or not pending):
                number = len(history) + 1
                end = len(received) if number == rounds else int(number * pushes_per_round)
                entry = _async_entry(number, received[int((number - 1) * pushes_per_round) : end],
                                     time.monotonic() - started)
                history.append(entry)
                progress.report("train_round", total_rounds=rounds, **entry)
                if on_round is not None:
                    on_round(entry)
        steps_by_worker = _gather(ray, running, "training")
        stats = ray.get(shards[0].stats.remote())
        final: list = [None] * len(initial)
        for indexes, (_, _, values) in zip(layout, ray.get([s.pull.remote() for s in shards])):
            for i, value in zip(indexes, values):
                final[i] = value
        model_file = ray.get(workers[0].model_file.remote(final))
        history[-1].update(worker_steps=steps_by_worker, applied_pushes=stats["version"], dropped_pushes=stats["dropped"])
        elapsed = time.monotonic() - started
        progress.report("train_end", history=history, elapsed=elapsed)
        return TrainResult(history, final, model_file, len(workers), elapsed, startup_seconds=startup_seconds)
    finally:
        stop_actors(ray, actors)


def _weighted(metrics: list[dict], sizes: list[int]) -> dict:
    """Each metric averaged over steps, weighted by their batch sizes."""
    total = sum(sizes)
    return {k: float(sum(float(m[k]) * n for m, n in zip(metrics, sizes)) / total) for k in metrics[0]}


def _async_entry(number: int, window: list, elapsed: float) -> dict:
    entry = _weighted([m for m, _ in window], [n for _, n in window]) if window else {}
    return {"round": number, **entry, "elapsed": elapsed}
