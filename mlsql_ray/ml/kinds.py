"""What kind of model a FORMAT names, answered by one lookup (``Kinds.find``): a built-in algorithm
(``train T as RandomForest.`TARGET```), an ET (``ScalerInPlace``, a feature ET that learns; the ETs
that learn nothing are run and refuse the rest), a Keras model table (``tf``/``keras``) or a script
UDF (``ScriptUDF``). Each kind is one object that answers the questions of ``QUESTIONS`` it lists in
its ``ANSWERS``: what its FORMAT does in ``train``, ``predict`` and ``register``, which parameters
and example it has, how ``!show "et/NAME"`` describes it and what a start ahead
(``engine.prestart``) needs for its statements; the algorithms also list themselves and explain
what a model learned. ``train``, ``run``, ``predict``, ``register``, ``load
modelParams/modelExample/modelList/modelExplain``, ``!show`` and the start ahead all ask it.
Whatever a kind registers goes into the session's one registry of functions (``ml.functions``).

The ETs' registry and the script UDFs live in the engine, above this package: the engine builds its
one ``Kinds`` with them (``engine/kinds.py``)."""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from .. import objectstore
from ..errors import MLSQLError
from ..lang import ast
from ..options import check_known, warnings_given
from ..models import stored_rows
from . import registry, runner, sources, statements
from .ets import fitted
from .ets.base import Call, Partitioned
from .functions import FunctionRegistry, SQLFunction
from .deployments import Loader
from .serving import Calls, ModelFunction, Predictor


@dataclass(frozen=True)
class Ahead:
    """What a statement needs started before it runs: Ray, and for a train of several parameter
    groups the hosts they run on, ``(groups, algorithms)``."""

    group_hosts: tuple[int, tuple[str, ...]] | None = None


@dataclass(frozen=True)
class Trained:
    """``train``'s (and ``run``'s) output: the table it made (None: nothing to show), what to report,
    the name the catalog keeps the table under (None: not kept) with its note on where the table came
    from, the model table's version, the table's partitions' sizes, and whether the result shows all
    of it (an algorithm's one row per group) rather than a preview."""

    table: pa.Table | None
    report: str
    output: str | None = None
    source: str = ""
    version: int | None = None
    partitions: tuple[int, ...] = ()
    whole: bool = False


@dataclass(frozen=True)
class Predicted:
    """``predict``'s output: the scored table, what scored it (for the report; "" for nothing to
    add), the catalog's note on where the table came from, and whether its vector columns are
    Spark's (``probability``...: marked as vectors by the engine)."""

    table: pa.Table
    about: str
    source: str
    vectors: bool = False


QUESTIONS = {
    "train": "train(session, s: ast.Train) -> Trained: ``train T as FORMAT`` (and ``run`` of an ET)",
    "predict": "predict(session, s: ast.Train) -> Predicted: ``predict T as FORMAT``",
    "register": "register(session, s: ast.Register) -> str: define ``s.function`` (and companions); what to report",
    "params": "params(name) -> pa.Table: ``load modelParams.`NAME``` and ``!show \"et/params/NAME\"``",
    "example": "example(name) -> (name, example script, doc): ``load modelExample.`NAME```",
    "describe": "describe(name) -> pa.Table: ``!show \"et/NAME\"``: name, algType, doc",
    "ahead": "ahead(s: ast.Statement) -> Ahead | None: what ``s`` needs started ahead (None: nothing)",
    "loader": "loader(session, s: ast.Register, version) -> Loader: how a Ray Serve replica loads the model ``s`` "
              "registered, by itself (``register ... where serve=\"true\"``, ``ml.deployments``)",
}
"""The questions a kind of model may answer, each by a method of the question's name."""


class Kind(ABC):
    """One kind of model: the FORMATs it ``matches``, and the questions (``QUESTIONS``) it answers,
    listed in ``ANSWERS``, each by its method of that name. ``Kinds.find(fmt, question)`` passes by a
    kind that does not list the question; a list that disagrees with the methods is refused when
    the class is made."""

    ANSWERS: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        kinds = [c for c in cls.__mro__ if issubclass(c, Kind)]  # not ABC's own classmethod ``register``
        defined = {q for q in QUESTIONS if any(q in vars(c) for c in kinds)}
        if cls.ANSWERS != defined:
            raise TypeError(f"{cls.__name__}.ANSWERS lists {sorted(cls.ANSWERS)}; "
                            f"it answers (defines) {sorted(defined)} of {sorted(QUESTIONS)}")

    @abstractmethod
    def matches(self, fmt: str) -> bool:
        """Whether FORMAT ``fmt`` (as written) names this kind."""


class Kinds:
    """The kinds in lookup order, FORMAT names matched case-insensitively."""

    def __init__(self, *kinds: Kind):
        self.kinds = kinds

    def find(self, fmt: str, question: str) -> Kind | None:
        """The kind FMT names that answers ``question`` (one of ``QUESTIONS``), or None."""
        return next((k for k in self.kinds if question in k.ANSWERS and k.matches(fmt)), None)


# -- the kinds whose models serve as SQL functions ------------------------------------------------------------------

def serve(session, functions: list[SQLFunction]) -> None:
    """Add functions to the session's one registry of them (``ml.functions``, made with the first)."""
    if session.model_functions is None:
        session.model_functions = FunctionRegistry(session.con)
    for function in functions:
        session.model_functions.add(function)


class ModelKind(Kind):
    """A kind whose ``register`` serves stored state as functions (``functions``), ``s.function`` first."""

    ANSWERS = frozenset({"register"})

    @abstractmethod
    def functions(self, session, s: ast.Register) -> list[SQLFunction]:
        """The functions ``s`` registers, ``s.function`` first."""

    def register(self, session, s: ast.Register) -> str:
        functions = self.functions(session, s)
        serve(session, functions)
        function, *companions = functions
        also = f"; also {', '.join(c.name for c in companions)}" if companions else ""
        return (f"registered {s.function} from {s.path} version {function.version} "
                f"({sum(len(f.actors) for f in functions)} workers, output {function.output}{also})")


class Algorithms(ModelKind):
    """The built-in algorithms (``ml.registry``, AutoML among them): trained into model tables
    (``ml.store``), scored here, served on Ray actors (``ml.statements``)."""

    ANSWERS = frozenset({"train", "predict", "register", "params", "example", "describe", "ahead", "loader"})

    def matches(self, fmt: str) -> bool:
        return registry.is_known(fmt)

    def train(self, session, s: ast.Train) -> Trained:
        """Byzer's result table, one row per group, kept as OUT (else ``output``)."""
        result, version, trained, failed = statements.train(session, s, self.plans(s.format, dict(s.options)))
        return Trained(result, f"trained {trained} {s.format} model(s) into {s.path} version {version}"
                               + (f" ({failed} failed)" if failed else ""),
                       output=s.output or "output", source=f"train {s.format}.`{s.path}`", version=version,
                       whole=True)

    @staticmethod
    def plans(fmt: str, options: dict) -> list[runner.GroupPlan]:
        """The groups a train statement asks for, planned once for the start ahead and the train."""
        key = (fmt, tuple(sorted(options.items())))
        planned = _PLANNED.get(key)
        if planned is None:
            given = warnings_given()
            planned = tuple(runner.plan(fmt, options))
            if warnings_given() == given:  # plans that warned are planned again, to warn again
                _PLANNED[key] = planned
                while len(_PLANNED) > 16:
                    del _PLANNED[next(iter(_PLANNED))]
        return list(planned)

    def predict(self, session, s: ast.Train) -> Predicted:
        scored, model = statements.predict(session, s)
        return Predicted(scored, f" ({model})", f"predict {s.format}.`{s.path}`", vectors=True)

    def functions(self, session, s: ast.Register) -> list:
        return statements.model_functions(session, s)

    def loader(self, session, s: ast.Register, version: int) -> Loader:
        return statements.replica_loader(session, s, version)

    def params(self, name: str) -> pa.Table:
        return sources.model_params(name)

    def example(self, name: str) -> tuple[str, str, str]:
        return name, "", ""

    def describe(self, name: str) -> pa.Table:
        algorithms = sources.model_list()
        return algorithms.filter(pc.equal(pc.utf8_lower(algorithms.column("name")), name.lower())).select(
            ["name", "algType", "doc"])

    def ahead(self, s: ast.Statement) -> Ahead | None:
        """``register``: Ray; ``train`` of several groups: their hosts (see ``engine.prestart``)."""
        if isinstance(s, ast.Register):
            return Ahead()
        if not isinstance(s, ast.Train) or s.verb != "train":
            return None
        try:
            plans = self.plans(s.format, dict(s.options))
        except Exception:  # noqa: BLE001 - bad options: the statement reports them when it runs
            return None
        if any(p.algorithm.in_process for p in plans):
            return Ahead()  # e.g. KerasClassifier: its fit starts its own actors
        if len(plans) < 2:
            return None  # one group is fitted in this process
        return Ahead(group_hosts=(len(plans), tuple(sorted({p.alg for p in plans}))))

    @staticmethod
    def listing() -> pa.Table:
        """``load modelList.`` as t``."""
        return sources.model_list()

    @staticmethod
    def explain(session, s: ast.Load) -> pa.Table:
        """``load modelExplain.`TARGET` where alg=...``."""
        return statements.model_explain(session, s)


_PLANNED: dict[tuple[str, tuple], tuple[runner.GroupPlan, ...]] = {}
"""The last 16 trains' plans by FORMAT as written and options (planned once for the start ahead and the train)."""


class ETRegistry(Protocol):
    """The engine's registry of every ET (``engine.ets``): those that learn are in ``ml.ets``."""

    ETS: dict

    def find(self, name: str): ...

    def params(self, name: str) -> pa.Table: ...


class FeatureETs(ModelKind):
    """ETs, those over tables and those that learn: ``train`` (and ``run``) runs one, a feature ET
    saving its fitted state (``ml.ets.fitted``); ``predict`` and ``register`` apply that state, and
    refuse an ET that learns nothing."""

    ANSWERS = frozenset({"train", "predict", "register", "params", "example", "describe"})

    def __init__(self, ets: ETRegistry):
        self.ets = ets

    def matches(self, fmt: str) -> bool:
        return fmt.lower() in self.ets.ETS

    def names(self) -> list[str]:
        return [e.name for e in self.ets.ETS.values()]

    def train(self, session, s: ast.Train) -> Trained:
        """``train|run T as NAME.`PATH` where ... [as OUT]``: the ET's output, kept as OUT when given.
        An option the ET does not know is a warning naming the known ones (a typo such as
        ``rountAt`` would otherwise go unnoticed; Byzer ignores it, so the ET goes on), as for
        algorithms and data sources (``options.check_known``)."""
        et = self.ets.find(s.format)
        check_known(s.options, [p.name for p in et.params], et.name)
        table = et.run(session, Call(s.table, dict(s.options), s.path, session.local_path))
        if table is None:
            return Trained(None, f"{et.name} done")
        table, parts = (table.table, table.sizes) if isinstance(table, Partitioned) else (table, ())
        return Trained(table, f"{s.output or et.name}: {table.num_rows} rows", output=s.output,
                       source=f"{s.verb} {et.name}", partitions=parts)

    def learner(self, name: str, verb: str) -> fitted.Learner:
        et = self.ets.find(name)
        if et.learner is None:
            raise MLSQLError(f"{et.name} learns nothing to {verb}; ETs that do: "
                             f"{', '.join(e.name for e in self.ets.ETS.values() if e.learner) or 'none'}")
        return et.learner

    def predict(self, session, s: ast.Train) -> Predicted:
        """T as ``train`` would have transformed it, with the state it saved."""
        learner = self.learner(s.format, "predict")
        version, state = fitted.load(session, s.path, learner.name)
        table = learner.transform(state, session.catalog.arrow(s.table), s.table)
        return Predicted(table, f" ({learner.name} {s.path} version {version})", f"predict {learner.name}.`{s.path}`")

    def functions(self, session, s: ast.Register) -> list:
        """The saved state as the function f (and f's companions, f_SUFFIX, for an ET that has them)."""
        learner = self.learner(s.format, "register")
        version, state = fitted.load(session, s.path, learner.name)
        return [fitted.FittedFunction(s.function + suffix, s.path, version, applier, state)
                for suffix, applier in {"": learner.applier, **learner.companions}.items()]

    def params(self, name: str) -> pa.Table:
        return self.ets.params(name)

    def example(self, name: str) -> tuple[str, str, str]:
        et = self.ets.find(name)
        return et.name, et.example, et.description

    def describe(self, name: str) -> pa.Table:
        et = self.ets.find(name)
        return pa.table({"name": [et.name], "algType": [et.kind], "doc": [et.description]})


class Keras(ModelKind):
    """Keras models saved as rows (``mlsql_ray.models``), served on Ray actors (``ml.serving``)."""

    ANSWERS = frozenset({"predict", "register", "ahead", "loader"})
    FORMATS = ("tf", "keras")

    def matches(self, fmt: str) -> bool:
        return fmt.lower() in self.FORMATS

    def started(self, session, name: str, fmt: str, table: str, options: dict):
        """Load a model table's rows and start the actors that serve it."""
        if not self.matches(fmt):
            raise MLSQLError(f"models are registered as {' or '.join(self.FORMATS)}.`db.table`, not {fmt}")
        version, rows = stored_rows(session.warehouse, table, options)
        session.ray_link.ensure()
        return ModelFunction.start(name, table, version, rows, options, session.ray_link.cpus(), pool=session.workers)

    def functions(self, session, s: ast.Register) -> list:
        return [self.started(session, s.function, s.format, s.path, dict(s.options))]

    def loader(self, session, s: ast.Register, version: int) -> Loader:
        options = {**dict(s.options), "version": str(version)}
        table = s.path
        if options.get("mode") == "path" and not objectstore.is_uri(table):
            table = str(Path(table).expanduser().absolute())  # the replica's working folder is Ray's
        return Loader(Predictor, Calls.of(options, Predictor), functools.partial(stored_rows, session.warehouse, table, options))

    def predict(self, session, s: ast.Train) -> Predicted:
        """T plus a prediction column, from the list column ``inputCol`` (else T's first)."""
        options = dict(s.options)
        table = session.catalog.arrow(s.table)
        column = options.get("inputCol") or next(
            (f.name for f in table.schema if pa.types.is_list(f.type) or pa.types.is_fixed_size_list(f.type)
             or pa.types.is_large_list(f.type)), None)
        if column is None or column not in table.column_names:
            raise MLSQLError(f"predict needs a list column of {s.table} to feed the model (inputCol=\"...\"); "
                             f"columns: {', '.join(table.column_names)}")
        function = self.started(session, "predict", s.format, s.path, options)
        function.argument = column
        try:
            scored = table.append_column("prediction", function(table.column(column)))
        except ValueError as exc:
            raise MLSQLError(str(exc)) from exc
        finally:
            function.close()
        return Predicted(scored, "", f"predict {s.path}")

    def ahead(self, s: ast.Statement) -> Ahead | None:
        return Ahead() if isinstance(s, ast.Register) else None


ALGORITHMS = Algorithms()
KERAS = Keras()
