"""A stored group as a working model: batch ``predict`` and the actors behind ``register``."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..arrays import matrix
from ..cluster.warm import WarmActor
from ..errors import MLSQLError
from . import metrics as evaluation, registry, serialize
from .algorithm import CLASSIFIER, TOPICS, Algorithm
from .functions import SQLFunction
from .store import StoredGroup, byzer_alg_index, groups_of

def _lists(values: np.ndarray) -> pa.Array:
    flat = pa.array(values.astype(np.float64).reshape(-1))
    return pa.ListArray.from_arrays(pa.array(np.arange(0, values.size + 1, max(values.shape[1], 1)), pa.int32()), flat)


class FittedModel:
    """The estimator of one group, loaded without pickle (see serialize)."""

    def __init__(self, group: StoredGroup, what: str, algorithm: Algorithm | None = None):
        """``algorithm``: the group's, when the caller has it (else looked up by the name it was stored under)."""
        self.group = group
        self.algorithm = algorithm or registry.get(group.alg)
        self.metadata = group.metadata
        self.estimator = serialize.loads(group.data, self.algorithm.library,
                                         lambda: self.algorithm.build({}, 0), what)

    @property
    def width(self) -> int:
        return int(self.metadata["numFeatures"])

    @property
    def second_output(self) -> str | None:
        """The name of the per-class (per-topic) column next to ``prediction``, if any."""
        return {CLASSIFIER: "probability", TOPICS: "topicDistribution"}.get(self.algorithm.kind)

    def predict(self, x: np.ndarray) -> dict[str, pa.Array]:
        if x.shape[1] != self.width:
            raise MLSQLError(f"the model takes rows of {self.width} features, got rows of {x.shape[1]}")
        kind = self.algorithm.kind
        if kind == CLASSIFIER:
            scores = (self.algorithm.scores or type(self.estimator).predict_proba)(self.estimator, x)
            classes = np.asarray(self.metadata["classes"], dtype=np.float64)
            return {"prediction": pa.array(classes[scores.argmax(axis=1)]), "probability": _lists(scores)}
        if kind == TOPICS:
            topics = self.estimator.transform(x)
            return {"prediction": pa.array(topics.argmax(axis=1).astype(np.float64)), "topicDistribution": _lists(topics)}
        return {"prediction": pa.array(np.asarray(self.estimator.predict(x), dtype=np.float64))}


def select(groups: list[StoredGroup], alg: Algorithm | None, options: dict, what: str) -> StoredGroup:
    """The group ``register``/``predict`` of ``alg`` (None: of ``AutoML``) use: ``algIndex="N"``
    (or Byzer's AutoML form ``"ALG.N"``, the N-th group of algorithm ALG), the best by
    ``autoSelectByMetric``, for AutoML the best by ``sortedBy`` (default accuracy, for regressors
    rmse), else the first that succeeded."""
    automl = alg is None
    if not automl:
        other = {g.alg for g in groups} - {alg.name}
        if other:
            raise MLSQLError(f"{what} holds {', '.join(sorted(other))} models, not {alg.name}")
    fine = [g for g in groups if g.status == "success"]
    if not fine:
        raise MLSQLError(f"{what} holds no successfully trained model")
    if "algIndex" in options:
        wanted = options["algIndex"].strip()
        chosen = next((g for g in groups if wanted.lower() in (str(g.index), byzer_alg_index(g, groups).lower())), None)
        if chosen is None:
            has = [str(g.index) if not automl else f"{g.index} ({byzer_alg_index(g, groups)})" for g in groups]
            raise MLSQLError(f"{what} has no algIndex {options['algIndex']!r} (it has {', '.join(has)})")
        if chosen.status != "success":
            raise MLSQLError(f"group {chosen.index} of {what} failed in training: {chosen.metadata.get('reason', '')}")
        return chosen
    metric = options.get("autoSelectByMetric") or (options.get("sortedBy") or _automl_metric(fine) if automl else None)
    if metric is None:
        return fine[0]
    chosen = evaluation.best(fine, metric)
    if chosen is None:
        known = sorted({m for g in fine for m in g.metrics})
        raise MLSQLError(f"no model in {what} has the metric {metric!r} (train with evaluateTable to compute metrics; "
                         f"stored: {', '.join(known) or 'none'})")
    return chosen


def _automl_metric(groups: list[StoredGroup]) -> str:
    """AutoML's default ``sortedBy`` for the kind its models are (accuracy for classifiers)."""
    kinds = registry.AUTOML_KINDS
    return kinds.get(registry.get(groups[0].alg).kind, kinds[CLASSIFIER])[0]


class Predictor(WarmActor):
    """A Ray actor holding one loaded group, called by serving.ModelFunction (``register``).
    ``unsafe`` is the Keras predictor's switch; these models (skops with trusted types, XGBoost's
    JSON, a safe-mode .keras file) never carry code to run, so it changes nothing here."""

    outputs = ("prediction", "probability")  # serving.OUTPUT_TYPES

    def __init__(self, threads: int):
        from threadpoolctl import threadpool_limits  # scikit-learn's dependency, needed where fits run

        threadpool_limits(threads)
        self.threads = threads
        self.model = None

    def load(self, rows: list[dict], unsafe: bool = False) -> int:
        """Load the group; its estimator's own ``n_jobs`` (kept from training) made the actor's
        threads: joblib's threads for a forest's trees cost 11 ms a call on 2 cores, five
        times a 1024-row batch's prediction in one thread (``bench_service.py``)."""
        self.model = FittedModel(groups_of(pa.Table.from_pylist(rows), "the registered model")[0], "the registered model")
        params = self.model.estimator.get_params(deep=False) if hasattr(self.model.estimator, "get_params") else {}
        if "n_jobs" in params:
            self.model.estimator.set_params(n_jobs=self.threads)
        return self.input_width()

    @classmethod
    def here(cls, rows: list[dict]) -> "Predictor | None":
        """One in the calling process, for a server's ``/model/predict`` (no round trip to an
        actor): one thread, the process's thread pools left as they are. None for a Keras group,
        whose TensorFlow import would cost the server seconds and gigabytes."""
        group = groups_of(pa.Table.from_pylist(rows), "the registered model")[0]
        if registry.get(group.alg).library == "keras":
            return None
        predictor = cls.__new__(cls)
        predictor.threads = 1
        predictor.load(rows)
        return predictor

    def forget(self) -> None:
        self.model = None

    def input_width(self) -> int:
        return self.model.width

    def predict(self, column: pa.Array, scale: float | None, output: str, batch_size: int) -> pa.Array:
        x = matrix(column, np.float64)
        if scale is not None:
            x *= scale
        columns = self.model.predict(x)
        if output == "prediction":
            return columns["prediction"]
        if self.model.second_output is None:
            raise ValueError(f"a {self.model.algorithm.name} model has no probabilities; use output=\"prediction\"")
        return columns[self.model.second_output]


def _whole_numbers(column: pa.Array, what: str) -> list[int | None]:
    """A column of indices; Spark casts a double argument of an int UDF parameter, and so do we."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if not (pa.types.is_integer(column.type) or pa.types.is_floating(column.type) or pa.types.is_decimal(column.type)
            or pa.types.is_null(column.type)):
        raise MLSQLError(f"{what} is a whole number, not {column.type}")
    return pc.cast(column, pa.int64(), safe=False).to_pylist()


@dataclass
class TopicsMatrixFunction(SQLFunction):
    """Byzer's LDA functions that read only the topics matrix (Spark's ``LDAModel.topicsMatrix``,
    terms × topics; scikit-learn's ``components_`` is its transpose, unnormalised as Spark's
    online optimizer leaves it): a lookup per row in this process, no actors to start."""

    name: str
    table: str
    version: int
    topics: np.ndarray  # topics × terms
    actors: list = field(default_factory=list)

    null_handling = "special"  # null in, null out; and null for a term or topic the model lacks

    @classmethod
    def of(cls, name: str, table: str, version: int, group: StoredGroup) -> TopicsMatrixFunction:
        model = FittedModel(group, table)
        return cls(name, table, version, np.asarray(model.estimator.components_, dtype=np.float64))


class TermTopics(TopicsMatrixFunction):
    """``lda(term)``: row ``term`` of the topics matrix, the term's weight in each topic (null for
    a term the model does not have, as SQL's element access past the end)."""

    output = "a term's row of the topics matrix"
    duckdb_type = "DOUBLE[]"

    def __call__(self, terms: pa.Array) -> pa.Array:
        vocabulary = self.topics.shape[1]
        rows = [None if t is None or not 0 <= t < vocabulary else self.topics[:, t].tolist()
                for t in _whole_numbers(terms, f"{self.name}'s term index")]
        return pa.array(rows, pa.list_(pa.float64()))


DESCRIBED_TOPIC = pa.struct([("termIndices", pa.list_(pa.int64())), ("termWeights", pa.list_(pa.float64()))])


class DescribedTopic(TopicsMatrixFunction):
    """``lda_topic(topic, n)``: Spark's ``describeTopics(n)`` row of one topic, its n heaviest terms
    (``termIndices``) and their weights in the topic's term distribution (``termWeights``); null for
    a topic the model does not have (Byzer's)."""

    output = "describeTopics"
    duckdb_type = "STRUCT(termIndices BIGINT[], termWeights DOUBLE[])"

    def __call__(self, topics: pa.Array, sizes: pa.Array) -> pa.Array:
        weights = self.topics / self.topics.sum(axis=1, keepdims=True)
        rows = []
        for topic, size in zip(_whole_numbers(topics, f"{self.name}'s topic"), _whole_numbers(sizes, f"{self.name}'s term count")):
            if topic is None or size is None or not 0 <= topic < len(weights):
                rows.append(None)
                continue
            heaviest = np.argsort(-weights[topic], kind="stable")[:max(size, 0)]
            rows.append({"termIndices": heaviest.tolist(), "termWeights": weights[topic][heaviest].tolist()})
        return pa.array(rows, DESCRIBED_TOPIC)
