"""KerasClassifier → the seed notebook's dense network trained by ``mlsql_ray.train.fit`` (weight
averaging on Ray actors, ``workers`` of them). ``scale`` is baked into the model as its first
layer, so the saved ``.keras`` file scores raw features; it is loaded in Keras's safe mode."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..algorithm import CLASSIFIER, Algorithm, Param, to_int


def _layers(text: str) -> tuple[int, ...]:
    sizes = tuple(int(p) for p in text.split(",") if p.strip())
    if not sizes or min(sizes) < 1:
        raise ValueError("expected hidden layer sizes such as \"512,256\"")
    return sizes


def _fraction(text: str) -> float:
    return float(Fraction(text.strip()))


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
        from ...train import fit

        classes = int(y.max()) + 1
        one_hot = np.eye(classes, dtype=np.float32)[y.astype(np.int64)]
        parts = np.array_split(np.arange(len(x)), self.workers)
        data = [(x[p].astype(np.float32), one_hot[p]) for p in parts]
        shape, layers, rate, scale, seed = x.shape[1], self.layers, self.learning_rate, self.scale, self.seed

        def network():
            import keras

            keras.utils.set_random_seed(seed)
            net = keras.Sequential([keras.layers.Input((shape,)), keras.layers.Rescaling(scale)]
                                   + [keras.layers.Dense(n, activation="relu") for n in layers]
                                   + [keras.layers.Dense(classes, activation="softmax")])
            net.compile(optimizer=keras.optimizers.SGD(learning_rate=rate), loss="categorical_crossentropy",
                        metrics=["accuracy"])
            return net

        result = fit(network, data, rounds=self.epochs, batch_size=self.batch_size, cpus_per_worker=self.cpus_per_worker)
        self.model_file = result.model_file
        self._model = result.model
        return self

    @classmethod
    def from_bytes(cls, data: bytes) -> "KerasClassifier":
        from ...models import model_from_bytes

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
        Param("layers", "layers", str, "512", "hidden layer sizes, e.g. 512,256", adapt=_layers),
        Param("epochs", "epochs", to_int, 7, "rounds of weight averaging (one epoch each)"),
        Param("batchSize", "batch_size", to_int, 128, "batch size"),
        Param("learningRate", "learning_rate", float, 0.01, "SGD learning rate (scaled by the worker count)"),
        Param("scale", "scale", str, "1", "factor applied to features, e.g. 1/255", adapt=_fraction),
        Param("workers", "workers", to_int, 2, "Ray actors training in parallel"),
        Param("cpusPerWorker", "cpus_per_worker", float, 1.0, "CPUs per actor"),
        Param("seed", "seed", to_int, 0, "random seed of the initial weights"),
    ),
    build=lambda kwargs, n_rows: KerasClassifier(**kwargs), in_process=True,
),)
