"""Asynchronous training with sharded parameter servers (seed 004's pattern, for Keras).

    parameter servers: each holds a shard of the weights and applies pushed gradients (SGD)
    workers, each on its own partition, loop without waiting for each other:
        pull every shard → compute the gradient of one batch → push each shard its part

A push computed from weights more than ``max_staleness`` updates old is dropped, so a slow
worker cannot drag the model back. Training ends when the workers together have taken as many
steps as ``rounds`` epochs over all the data: a straggler simply contributes fewer steps, which
is why this mode beats synchronous averaging when workers run at different speeds.
"""

from __future__ import annotations

import time

import numpy as np

from .. import progress
from .data import load_xy
from .worker import configure_tensorflow


class ParameterShard:
    """A slice of the model's trainable weights and the step counter of the whole run."""

    def __init__(self, weights: list[np.ndarray], learning_rate: float):
        self.weights = [np.array(w, dtype=np.float32) for w in weights]
        self.learning_rate = learning_rate
        self.version = 0
        self.dropped = 0

    def pull(self) -> tuple[int, list[np.ndarray]]:
        return self.version, self.weights

    def push(self, gradients: list[np.ndarray], version: int, max_staleness: int) -> bool:
        if self.version - version > max_staleness:
            self.dropped += 1
            return False
        for weight, gradient in zip(self.weights, gradients):
            weight -= self.learning_rate * gradient
        self.version += 1
        return True

    def stats(self) -> dict:
        return {"version": self.version, "dropped": self.dropped}


class StepCounter:
    """How many steps all workers have taken, and their recent loss/accuracy."""

    def __init__(self, budget: int):
        self.budget = budget
        self.steps = 0
        self.metrics: list[tuple[float, float, int]] = []

    def add(self, loss: float, accuracy: float, size: int) -> bool:
        """Count one step; False once the budget is spent (the worker should stop)."""
        self.steps += 1
        self.metrics.append((loss, accuracy, size))
        return self.steps < self.budget

    def take(self) -> tuple[int, list]:
        taken, self.metrics = self.metrics, []
        return self.steps, taken


class AsyncWorker:
    def __init__(self, index: int, model_fn, source, prepare, threads: int, slowdown: float = 1.0):
        configure_tensorflow(threads)
        self.model = model_fn()
        self.x, self.y = load_xy(source, prepare)
        self.rng = np.random.default_rng(index)
        self.slowdown = slowdown

    def ready(self) -> int:
        return len(self.x)

    def initial_state(self) -> tuple[list[np.ndarray], float]:
        """The common start: this worker's trainable weights, and its optimizer's learning rate."""
        return [np.asarray(v) for v in self.model.trainable_variables], float(self.model.optimizer.learning_rate)

    def run(self, shards, layout: list[list[int]], counter, batch_size: int, max_staleness: int) -> int:
        """Train until the counter says the run's step budget is spent; returns steps taken."""
        import ray
        import tensorflow as tf

        variables = self.model.trainable_variables
        steps, counted = 0, None
        while True:
            order = self.rng.permutation(len(self.x))
            for start in range(0, len(order), batch_size):
                began = time.perf_counter()
                pulled = ray.get([s.pull.remote() for s in shards])
                for (version, values), indexes in zip(pulled, layout):
                    for i, value in zip(indexes, values):
                        variables[i].assign(value)
                batch = order[start : start + batch_size]
                xb, yb = self.x[batch], self.y[batch]
                with tf.GradientTape() as tape:
                    predicted = self.model(xb, training=True)
                    loss = self.model.compute_loss(x=xb, y=yb, y_pred=predicted)
                gradients = [g.numpy() for g in tape.gradient(loss, variables)]
                for shard, (version, _), indexes in zip(shards, pulled, layout):
                    shard.push.remote([gradients[i] for i in indexes], version, max_staleness)
                accuracy = _accuracy(np.asarray(predicted), yb)
                steps += 1
                if self.slowdown > 1:  # a simulated straggler (benchmarks and tests)
                    time.sleep((self.slowdown - 1) * (time.perf_counter() - began))
                # counting is not waited for: the answer for the previous step is in by now
                if counted is not None and not ray.get(counted):
                    return steps
                counted = counter.add.remote(float(loss), accuracy, len(batch))

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


def _accuracy(predicted: np.ndarray, labels: np.ndarray) -> float:
    truth = labels.argmax(axis=1) if labels.ndim == 2 else labels.reshape(-1)
    return float((predicted.argmax(axis=1) == truth).mean())


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
              max_staleness: int, num_shards: int, slowdown: dict[int, float] | None, on_round, stop_actors):
    """The asynchronous counterpart of ``trainer.fit`` (which checks arguments and resources)."""
    from .trainer import TrainResult, _gather

    slowdown = slowdown or {}
    worker_class = ray.remote(AsyncWorker).options(num_cpus=cpus_per_worker, max_restarts=0)
    workers = [worker_class.remote(i, model_fn, data[i], prepare, threads, slowdown.get(i, 1.0)) for i in range(len(data))]
    actors = list(workers)
    started = time.monotonic()
    try:
        counts = _gather(ray, [w.ready.remote() for w in workers], "starting")
        initial, learning_rate = ray.get(workers[0].initial_state.remote())
        layout = shard_layout([w.size for w in initial], num_shards)
        shard_class = ray.remote(ParameterShard).options(num_cpus=0)
        shards = [shard_class.remote([initial[i] for i in indexes], learning_rate) for indexes in layout]
        steps_per_round = sum(-(-c // batch_size) for c in counts)
        counter = ray.remote(StepCounter).options(num_cpus=0).remote(rounds * steps_per_round)
        actors += shards + [counter]
        progress.report("train_start", total_rounds=rounds, workers=len(workers), actors=list(workers), first_round=1)
        running = [w.run.remote(shards, layout, counter, batch_size, max_staleness) for w in workers]
        history: list[dict] = []
        window: list = []  # per-step metrics since the last reported round
        pending = list(running)
        while len(history) < rounds:
            _, pending = ray.wait(pending, num_returns=len(pending), timeout=0.5)
            steps, metrics = ray.get(counter.take.remote())
            window += metrics
            while len(history) < rounds and (steps >= (len(history) + 1) * steps_per_round or not pending):
                entry = _async_entry(len(history) + 1, window, time.monotonic() - started)
                window = []
                history.append(entry)
                progress.report("train_round", total_rounds=rounds, **entry)
                if on_round is not None:
                    on_round(entry)
        steps_by_worker = _gather(ray, running, "training")
        dropped = sum(s["dropped"] for s in ray.get([s.stats.remote() for s in shards]))
        final: list = [None] * len(initial)
        for indexes, (_, values) in zip(layout, ray.get([s.pull.remote() for s in shards])):
            for i, value in zip(indexes, values):
                final[i] = value
        model_file = ray.get(workers[0].model_file.remote(final))
        history[-1].update(worker_steps=steps_by_worker, dropped_pushes=dropped)
        elapsed = time.monotonic() - started
        progress.report("train_end", history=history, elapsed=elapsed)
        return TrainResult(history, final, model_file, len(workers), elapsed)
    finally:
        stop_actors(ray, actors)


def _async_entry(number: int, metrics: list, elapsed: float) -> dict:
    if not metrics:
        return {"round": number, "elapsed": elapsed}
    sizes = np.array([m[2] for m in metrics], dtype=np.float64)
    return {
        "round": number,
        "loss": float(np.dot([m[0] for m in metrics], sizes) / sizes.sum()),
        "accuracy": float(np.dot([m[1] for m in metrics], sizes) / sizes.sum()),
        "elapsed": elapsed,
    }
