"""Models, data and checks shared by the training tests. Ray workers cannot import test
modules, so this one is sent to them by value (cloudpickle)."""

from __future__ import annotations

import sys
import time

import numpy as np
import pyarrow.parquet as pq
import ray.cloudpickle

from mlsql_ray.cluster import ray_internals
from mlsql_ray.cells.context import DataServer
from mlsql_ray.train.async_ps import AsyncWorker
from mlsql_ray.train.worker import Worker

ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


def mnist_model():
    """The seed's model: 784-512-10, SGD."""
    from tensorflow.keras import layers, models

    network = models.Sequential([layers.Input((784,)), layers.Dense(512, activation="relu"), layers.Dense(10, activation="softmax")])
    network.compile(optimizer="sgd", loss="categorical_crossentropy", metrics=["accuracy"])
    return network


def seeded_mnist_model():
    """The seed's model with fixed initial weights, so two runs differ only in what they did."""
    import keras

    keras.utils.set_random_seed(7)
    return mnist_model()


def tiny_model(learning_rate: float = 0.1):
    """A factory for a 4-in, 3-class softmax model: seconds to train, for the mechanics."""

    def build():
        from tensorflow.keras import layers, models, optimizers

        network = models.Sequential([layers.Input((4,)), layers.Dense(3, activation="softmax")])
        network.compile(optimizer=optimizers.SGD(learning_rate), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        return network

    return build


def tiny_partitions(seed: int = 0):
    rng = np.random.default_rng(seed)
    return [(rng.random((40, 4), dtype=np.float32), rng.integers(0, 3, 40)) for _ in range(2)]


def servers_from(ray, path) -> list[DataServer]:
    """A parquet file (the sample MNIST train set) as two data servers."""
    table = pq.read_table(path)
    half = table.num_rows // 2
    return [DataServer(ray.put(table.slice(0, half).combine_chunks()), 0, half),
            DataServer(ray.put(table.slice(half).combine_chunks()), 1, table.num_rows - half)]


def held_out_accuracy(result, test) -> float:
    """Accuracy of a training result's model on (x, labels)."""
    x, y = test
    return float((result.model.predict(x, verbose=0).argmax(axis=1) == y).mean())


def alive_actors(class_name: str = "") -> list[dict]:
    return [a for a in ray_internals.actor_states().values() if a.get("State") != "DEAD" and class_name in a.get("ActorClassName", "")]


def eventually(check, seconds: float = 20) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return check()


class Fate:
    """Numbers events across a run's worker processes (a file per event in ``folder``: every actor
    is its own process) and kills with SIGKILL the process whose event number is in ``kill_at``:
    a real death at an exact moment, e.g. in the constructor of the second replacement."""

    def __init__(self, folder, kill_at: set[int]):
        self.folder, self.kill_at = str(folder), set(kill_at)

    def __call__(self) -> None:
        import os
        import signal

        last = os.path.join(self.folder, str(max(self.kill_at)))
        if os.path.exists(last):
            return  # every death has happened: stop counting
        number = 1
        while True:
            try:
                os.close(os.open(os.path.join(self.folder, str(number)), os.O_CREAT | os.O_EXCL))
                break
            except FileExistsError:
                number += 1
        if number in self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)


def fated_model(build, fate: Fate, at: str = "build"):
    """``build``'s model whose process meets ``fate`` at each ``at`` event: "build" (the model
    factory, inside the actor's constructor) or a method of the model ("train_on_batch",
    "evaluate")."""

    def create():
        if at == "build":
            fate()
        network = build()
        if at != "build":
            method = getattr(network, at)

            def fated(*args, **kwargs):
                fate()
                return method(*args, **kwargs)

            object.__setattr__(network, at, fated)
        return network

    return create


class Straggling:
    """A training worker class mixin that makes worker 1 ``FACTOR`` times slower, to see what
    stragglers do (``fit(..., worker_class=STRAGGLERS[mode])``): after each training call of its
    model (``fit`` in a synchronous round, ``train_on_batch`` in an asynchronous step) it sleeps
    (FACTOR - 1) times as long as the call took, the call counted as at least ``SHORTEST_S``: a
    tiny model's step takes about a millisecond, less than what each step costs besides it (its
    pushes and pulls), so stretching the call alone left the two workers' speeds to chance on a
    fast machine (a CI run's async workers: 20 steps to the straggler's 22). The first call is not
    stretched: it includes tracing and compiling, a one-off cost, not the speed being simulated."""

    SLOW_WORKER, FACTOR, SHORTEST_S = 1, 3.0, 0.01

    def setup(self, index, *args):
        answer = super().setup(index, *args)
        if index == self.SLOW_WORKER:
            for name in ("fit", "train_on_batch"):
                object.__setattr__(self.model, name, _stretched(getattr(self.model, name), self.FACTOR, self.SHORTEST_S))
        return answer


def _stretched(method, factor: float, shortest: float):
    calls = []

    def slow(*args, **kwargs):
        began = time.perf_counter()
        answer = method(*args, **kwargs)
        if calls:
            time.sleep((factor - 1) * max(time.perf_counter() - began, shortest))
        calls.append(None)
        return answer

    return slow


class StragglingWorker(Straggling, Worker):
    """A synchronous worker whose worker 1 is a straggler."""


class StragglingAsyncWorker(Straggling, AsyncWorker):
    """An asynchronous worker whose worker 1 is a straggler."""


STRAGGLERS = {"sync": StragglingWorker, "async": StragglingAsyncWorker}
