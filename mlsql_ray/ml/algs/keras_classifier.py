"""KerasClassifier → the seed notebook's dense network trained by ``mlsql_ray.train.fit`` (weight
averaging on Ray actors, ``workers`` of them), each actor reading its partition of the table
itself, as a cell's workers do: the driver never holds the training rows. ``scale`` is baked
into the model as its first layer, so the saved ``.keras`` file scores raw features; it is
loaded in Keras's safe mode."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pyarrow as pa

from ..algorithm import CLASSIFIER, Algorithm, spark_param, to_int
from ..columns import features_of, labels_of
from ...models import model_from_bytes
from ...train import fit


def _layers(text: str) -> tuple[int, ...]:
    sizes = tuple(int(p) for p in text.split(",") if p.strip())
    if not sizes or min(sizes) < 1:
        raise ValueError("expected hidden layer sizes such as \"512,256\"")
    return sizes


def _fraction(text: str) -> float:
    return float(Fraction(text.strip()))


@dataclass(frozen=True)
class LabelledRows:
    """A worker's partition → (float32 features, one-hot labels): ``train.fit``'s ``prepare``
    for a table read by the workers. Frozen and hashable, so a warm worker given the same
    partition read the same way keeps the rows it read (``train.worker.Worker.setup``)."""

    features: str
    label: str
    classes: tuple[float, ...]  # every label of the table, sorted: a label's index is its class
    what: str  # the table's name, for errors

    def __call__(self, table: pa.Table) -> tuple[np.ndarray, np.ndarray]:
        x = features_of(table, self.features, self.what, np.float32)
        y = np.searchsorted(np.asarray(self.classes), labels_of(table, self.label, self.what))
        return x, np.eye(len(self.classes), dtype=np.float32)[y]


class KerasClassifier:
    """scikit-learn's classifier contract around ``train.fit``: labels are 0..n-1 indices."""

    def __init__(self, layers=(512,), epochs=7, batch_size=128, learning_rate=0.01, scale=1.0, workers=2,
                 cpus_per_worker=1.0, seed=0):
        self.layers, self.epochs, self.batch_size = layers, epochs, batch_size
        self.learning_rate, self.scale, self.workers = learning_rate, scale, workers
        self.cpus_per_worker, self.seed = cpus_per_worker, seed
        self.model_file: bytes | None = None
        self._model = None

    def fit(self, x: np.ndarray, y: np.ndarray) -> "KerasClassifier":
        """From arrays in this process, split into ``workers`` partitions."""
        classes = int(y.max()) + 1
        one_hot = np.eye(classes, dtype=np.float32)[y.astype(np.int64)]
        parts = np.array_split(np.arange(len(x)), self.workers)
        return self._train([(x[p].astype(np.float32), one_hot[p]) for p in parts], None, x.shape[1], classes)

    def fit_partitions(self, table, columns: dict) -> "KerasClassifier":
        """From a table this process does not read (``runner.Described``): each worker reads its
        partition itself, wherever it runs."""
        classes = tuple(table.distinct.tolist())
        prepare = LabelledRows(columns["featuresCol"], columns["labelCol"], classes, table.name)
        return self._train(table.servers(self.workers), prepare, table.width, len(classes))

    def _train(self, data: list, prepare, shape: int, classes: int) -> "KerasClassifier":
        layers, rate, scale, seed = self.layers, self.learning_rate, self.scale, self.seed

        def network():
            import keras  # heavy: TensorFlow

            keras.utils.set_random_seed(seed)
            net = keras.Sequential([keras.layers.Input((shape,)), keras.layers.Rescaling(scale)]
                                   + [keras.layers.Dense(n, activation="relu") for n in layers]
                                   + [keras.layers.Dense(classes, activation="softmax")])
            net.compile(optimizer=keras.optimizers.SGD(learning_rate=rate), loss="categorical_crossentropy",
                        metrics=["accuracy"])
            return net

        result = fit(network, data, prepare=prepare, rounds=self.epochs, batch_size=self.batch_size,
                     cpus_per_worker=self.cpus_per_worker)
        self.model_file = result.model_file
        self._model = result.model
        return self

    @classmethod
    def from_bytes(cls, data: bytes) -> "KerasClassifier":
        loaded = cls()
        loaded.model_file, loaded._model = data, model_from_bytes(data)
        return loaded

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        return self._model.predict(x.astype(np.float32), batch_size=1024, verbose=0)

    def predict(self, x: np.ndarray) -> np.ndarray:
        return self.predict_proba(x).argmax(axis=1)


ALGORITHMS = (Algorithm(
    name="KerasClassifier", kind=CLASSIFIER, library="keras", implementation="mlsql_ray.train.fit (Keras)",
    params=(
        spark_param("layers", "layers", str, "512", "hidden layer sizes, e.g. 512,256", adapt=_layers),
        spark_param("epochs", "epochs", to_int, 7, "rounds of weight averaging (one epoch each)"),
        spark_param("batchSize", "batch_size", to_int, 128, "batch size"),
        spark_param("learningRate", "learning_rate", float, 0.01, "SGD learning rate (scaled by the worker count)"),
        spark_param("scale", "scale", str, "1", "factor applied to features, e.g. 1/255", adapt=_fraction),
        spark_param("workers", "workers", to_int, 2, "Ray actors training in parallel"),
        spark_param("cpusPerWorker", "cpus_per_worker", float, 1.0, "CPUs per actor"),
        spark_param("seed", "seed", to_int, 0, "random seed of the initial weights"),
    ),
    build=lambda kwargs, n_rows: KerasClassifier(**kwargs), in_process=True, reads_partitions=True,
),)
