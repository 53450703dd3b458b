"""One training worker: a Ray actor holding a Keras model and its partition of the data.

It loads its own partition from its data server (the driver never touches the rows), trains one
round when told to, and hands its weights over for averaging.
"""

from __future__ import annotations

import os
import tempfile
import time
from typing import Callable

import numpy as np

from ..cluster.warm import WarmActor
from .data import Source, load_xy, source_key


def configure_tensorflow(threads: int) -> None:
    """Give TensorFlow exactly this worker's CPUs, so workers sharing a machine don't fight
    over cores. Must run before TensorFlow executes anything in this process."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf  # heavy: TensorFlow

    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(1 if threads <= 2 else 2)
    except RuntimeError:
        pass  # this process already ran TensorFlow ops (a reused worker); keep its pools


class Worker(WarmActor):
    """Started once per process (TensorFlow configured and imported), then given one run's
    partition and model by ``setup``; a warm pool hands it to the next run after ``forget``.
    A subclass given as ``TrainConfig.worker_class`` can instrument a run, e.g. wrap the methods
    of the ``self.model`` that ``setup`` builds (rounds train by its ``fit``)."""

    def __init__(self, threads: int):
        configure_tensorflow(threads)
        self.source_key = None  # what x, y were read from, when it can be told again (a data server)

    def setup(self, index: int, model_fn: Callable, source: Source, prepare, learning_rate: float | None,
              learning_rate_scale: float, validation: Source | None = None) -> dict:
        """This run's part: its partition (kept from the last run when it is the same data
        server read the same way), a fresh model from ``model_fn`` and fresh random state.
        Returns the rows it trains on and the seconds it took to read them into numpy."""
        import keras  # heavy: TensorFlow

        self.model = None
        self.index = index
        began = time.perf_counter()
        key = (source_key(source), prepare)
        if key[0] is None or key != self.source_key:
            self.source_key = None
            self.x, self.y = load_xy(source, prepare)
            self.source_key = key if key[0] is not None else None
        self.read_seconds = time.perf_counter() - began
        self.validation = load_xy(validation, prepare) if validation is not None else None
        keras.backend.clear_session(free_memory=False)  # the last run's model and layer names go (without
        # its gc.collect(): 0.4-1.3 s of a warm start on a busy machine, and Python collects anyway)
        self.model = model_fn()
        if getattr(self.model, "optimizer", None) is None:
            raise ValueError("the model factory must return a compiled model (call model.compile(...))")
        rate = self.model.optimizer.learning_rate
        rate.assign((float(rate) if learning_rate is None else learning_rate) * learning_rate_scale)
        self.rng = np.random.default_rng(index)
        self.cursor = 0
        self.order = self.rng.permutation(len(self.x))
        return {"rows": len(self.x), "read_s": self.read_seconds}

    def forget(self) -> None:
        """Drop the run's model and validation data (the partition stays, for a next run on it)."""
        self.model = self.validation = None

    def get_weights(self, with_optimizer: bool = False):
        weights = self.model.get_weights()
        if with_optimizer:
            return weights, [np.asarray(v) for v in self.model.optimizer.variables]
        return weights, None

    def set_weights(self, weights, optimizer_state=None) -> None:
        self.model.set_weights(weights)
        if optimizer_state is not None:
            for var, value in zip(self.model.optimizer.variables, optimizer_state):
                if "learning_rate" not in var.path:
                    var.assign(value)

    def train_round(self, batch_size: int, steps: int | None) -> dict:
        """One round of local training: a full pass over the partition, or ``steps`` batches
        continuing where the last round stopped. Returns its metrics."""
        if steps is None:
            index = self.rng.permutation(len(self.x))
        else:
            index = self._next_batches(steps * batch_size)
        history = self.model.fit(self.x[index], self.y[index], batch_size=batch_size, epochs=1, shuffle=False, verbose=0)
        metrics = {k: float(v[-1]) for k, v in history.history.items()}
        metrics["samples"] = int(len(index))
        return metrics

    def _next_batches(self, count: int) -> np.ndarray:
        taken = []
        while count > 0:
            if self.cursor >= len(self.order):
                self.order, self.cursor = self.rng.permutation(len(self.x)), 0
            part = self.order[self.cursor : self.cursor + count]
            taken.append(part)
            self.cursor += len(part)
            count -= len(part)
        return np.concatenate(taken)

    def evaluate(self, weights) -> dict:
        """Metrics of ``weights`` on the validation data (this worker holds it)."""
        self.model.set_weights(weights)
        x, y = self.validation
        values = self.model.evaluate(x, y, batch_size=512, verbose=0, return_dict=True)
        return {f"val_{k}": float(v) for k, v in values.items()}

    def model_file(self, weights) -> bytes:
        """The model with ``weights`` as a Keras 3 ``.keras`` file."""
        self.model.set_weights(weights)
        return self.saved_model()

    def saved_model(self) -> bytes:
        """The model as it is, as a Keras 3 ``.keras`` file."""
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "model.keras")
            self.model.save(path)
            with open(path, "rb") as f:
                return f.read()
