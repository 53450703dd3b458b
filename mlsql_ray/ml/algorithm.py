"""What an algorithm is to ``train``: a name, a kind, one table of parameters (Spark's name →
the library's keyword, with a converter, default and doc), and a builder that returns an
estimator with scikit-learn's contract (``fit``, ``predict``, ``predict_proba``/``transform``).

Each module in ``mlsql_ray.ml.algs`` defines one or more ``Algorithm`` values; ``registry``
collects them.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import MLSQLError
from ..options import Param, check_known

CLASSIFIER, REGRESSOR, CLUSTERER, TOPICS, RECOMMENDER = "classifier", "regressor", "clusterer", "topics", "recommender"
#: kinds fitted on a label column (a recommender's label is its rating)
SUPERVISED = (CLASSIFIER, REGRESSOR, RECOMMENDER)
#: options of ``train`` that are not estimator parameters
COMMON_OPTIONS = ("featuresCol", "labelCol", "evaluateTable", "keepVersion", "mode")
#: options a single parameter group may override
GROUP_OPTIONS = ("featuresCol", "labelCol")


def to_int(text: str) -> int:
    value = float(text)
    if value != int(value):
        raise ValueError(f"expected a whole number, not {text!r}")
    return int(value)


def spark_param(name: str, target: str | None, convert: Callable[[str], Any], default: Any, doc: str,
                adapt: Callable[[Any], Any] | None = None) -> Param:
    """One Spark/Byzer parameter: ``name`` as users write it, ``target`` the estimator keyword
    (None: accepted for compatibility and ignored, e.g. Spark's ``checkpointInterval``)."""
    return Param(name, default, doc, target, convert, *([adapt] if adapt else []))


@dataclass(frozen=True)
class Algorithm:
    name: str
    kind: str
    library: str  # the serialiser's name: "skops", "xgboost", "keras" or "npz"
    #: what ``load modelList`` shows; a trained group reports the class that ran (implementation_of)
    implementation: str
    params: tuple[Param, ...]
    build: Callable[[dict, int], Any]  # build(library_kwargs, n_rows) → an unfitted estimator
    threads_param: str | None = None  # the estimator keyword for its thread count
    in_process: bool = False  # fitted by the driver (it starts Ray actors itself), never in a Ray task
    #: a classifier whose workers read their partitions of the table themselves: it gets a
    #: ``runner.Described`` table (``fit_partitions``), never the rows as arrays
    reads_partitions: bool = False
    #: options of the whole statement, not of a group (ALS's userRec/itemRec), checked as parameters are
    statement_params: tuple[Param, ...] = ()
    #: parameters naming whole-number id columns read as the features instead of featuresCol (ALS's
    #: userCol, itemCol), and the one naming the label column (ALS's ratingCol)
    id_params: tuple[str, ...] = ()
    label_param: str = "labelCol"
    #: the numpy type its features are handed over in: scikit-learn's forests compute in float32
    #: and copy any other matrix into it, so they are given float32 (the same trees; in a fresh
    #: process, bench_sql_train's two fits with their conversion: 1.65 s against 2.36 s)
    features_dtype: str = "float64"
    #: tables train also writes under TARGET/data/NAME as Parquet: (best group's model, statement
    #: options by target) → {NAME: table}
    tables: Callable[[Any, dict], dict] | None = None
    #: why ``predict``/``register`` refuse its models (None: they serve them)
    no_inference: str | None = None
    #: what ``load modelExplain`` shows of a fitted model, name → numbers, when its fitted
    #: attributes (sources.EXPLAINED) do not explain it (ALS: parameters and factor shapes)
    explain: Callable[[Any], dict] | None = None
    #: a classifier's class probabilities (estimator, rows) when not by its own ``predict_proba``
    scores: Callable[[Any, Any], Any] | None = None

    def param_names(self) -> list[str]:
        return [p.name for p in self.params]

    def value(self, spark_params: dict[str, str], name: str):
        """A parameter as the group gives it (unconverted text), else its default."""
        return spark_params.get(name, next(p.default for p in self.params if p.name == name))

    def columns(self, given: dict[str, str], features: str, label: str) -> dict[str, str]:
        """The columns a group reads, by the option naming each: featuresCol (or the id
        parameters) and, for a supervised kind, the label's option."""
        read = {p: self.value(given, p) for p in self.id_params} or {"featuresCol": given.get("featuresCol", features)}
        if self.kind in SUPERVISED:
            own = self.label_param != "labelCol"  # a parameter of the algorithm, not train's labelCol
            read[self.label_param] = self.value(given, self.label_param) if own else given.get("labelCol", label)
        return read

    def statement_kwargs(self, options: dict[str, str]) -> dict:
        """The statement options (``statement_params``) by target, None where not given."""
        out = {}
        for param in self.statement_params:
            text = options.get(param.name)
            try:
                out[param.target] = None if text is None else param.convert(text)
            except ValueError as exc:
                raise MLSQLError(f"{self.name} option {param.name}={text!r}: {exc}") from None
        return out

    def known_params(self, spark_params: dict[str, str]) -> dict[str, str]:
        """The parameters this algorithm knows, after a warning of the others (``check_known``)."""
        known = check_known(spark_params, [*self.param_names(), *COMMON_OPTIONS[:-1]], self.name, ignore_case=False)
        return {name: spark_params[name] for name in known}

    def library_kwargs(self, spark_params: dict[str, str], threads: int) -> dict:
        """Spark-named string parameters → the estimator's keywords, Spark's defaults for the
        rest; a bad value is the user's mistake (and an unknown name outside a statement)."""
        by_name = {p.name: p for p in self.params}
        kwargs = {p.target: p.adapt(p.default) for p in self.params if p.target is not None}
        if self.threads_param:
            kwargs[self.threads_param] = threads
        for name, text in self.known_params(spark_params).items():
            param = by_name.get(name)
            if param is None:
                continue  # a statement option (keepVersion, evaluateTable) given to a group: not the estimator's
            try:
                value = param.adapt(param.convert(text))
            except (ValueError, KeyError) as exc:
                raise MLSQLError(f"{self.name} parameter {name}={text!r}: {exc}") from None
            if param.target is not None:
                kwargs[param.target] = value
        return kwargs

    def estimator(self, spark_params: dict[str, str], n_rows: int, threads: int = 1):
        return self.build(self.library_kwargs(spark_params, threads), n_rows)

    def implementation_of(self, estimator) -> str:
        """What a group reports as ``alg``: the class that did the work for its parameters
        (NaiveBayes's modelType picks one of three, LinearRegression's regParam one of three; a
        pipeline's last step is the model). Our own classes report the declared implementation."""
        model = estimator.steps[-1][1] if hasattr(estimator, "steps") else estimator
        cls = type(model)
        if cls.__module__.split(".")[0] == "mlsql_ray":
            return self.implementation
        return public_name(cls)


def public_name(cls: type) -> str:
    """``sklearn.linear_model.Ridge`` rather than ``sklearn.linear_model._ridge.Ridge``: the
    shortest module path that exports the class."""
    parts = cls.__module__.split(".")
    for end in range(1, len(parts) + 1):
        module = importlib.import_module(".".join(parts[:end]))
        if getattr(module, cls.__name__, None) is cls:
            return f"{module.__name__}.{cls.__name__}"
    return f"{cls.__module__}.{cls.__name__}"
