"""The model side of the model statements: what ``train``/``predict``/``register``/``load
modelExplain`` of a built-in algorithm do with the session's tables, the warehouse and Ray. The
engine's statement modules (``engine/statements/train.py``, ``register.py``) name the outputs in
the catalog and say what happened.

``train T as ALG.`TARGET``` fits and saves; ``predict T as ALG.`TARGET``` scores in this
process; ``register ALG.`TARGET` as f`` serves the model from Ray actors as a DuckDB function
(ml.serving.ModelFunction, as for Keras models), for LDA Byzer's f, f_doc and f_topic;
``load modelExplain`` explains a model (``ml.kinds`` is where the engine finds all of them). An algorithm may write
tables next to its model (ALS's ``TARGET/data/userRec``) and refuse ``predict``/``register``
(``Algorithm.no_inference``).
"""

from __future__ import annotations

import functools
import re
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from sqlglot import exp

from ..errors import MLSQLError
from ..lang import ast
from ..options import flag
from . import predictor as ml_predictor, registry, runner, sources, store
from .algorithm import TOPICS
from ..cells.partitions import stored_query
from ..cells.runner import partition
from .deployments import Loader
from .serving import Calls, ModelFunction


ROWS = "_train_rows"  # what a train's table is called in the SQL that describes it


def _quoted(name: str) -> str:
    """A column name as DuckDB SQL, by sqlglot (the engine's ``catalog.quoted`` is above this package)."""
    return exp.to_identifier(name, quoted=True).sql("duckdb")


def train(session, s: ast.Train, plans: list[runner.GroupPlan]) -> tuple[pa.Table, int, int, int]:
    """Fit the groups ``s`` asks for (``plans``) and save them to its TARGET: (Byzer's result
    table, the model table's version, how many groups were fitted, how many of them failed)."""
    options = dict(s.options)
    evaluate_name = options.get("evaluateTable")
    if evaluate_name and evaluate_name not in session.catalog:
        session.catalog.relation(evaluate_name)  # raises: no table of that name
    evaluate = CatalogTable(session, evaluate_name) if evaluate_name else None
    table = CatalogTable(session, s.table)
    with session.workers.active():
        here = runner.fitted_here(plans, ray_link=session.ray_link)  # decided once: the data's form follows
        data = runner.datasets(plans, table, evaluate, in_process=here, alone=runner.one_machine(session.ray_link))
        groups = runner.run_groups(plans, data, session.ray_link, in_process=here)
    if all(g.status == "fail" for g in groups):
        reasons = "; ".join(f"group {g.index}: {g.metadata.get('reason', '')}" for g in groups)
        raise MLSQLError(f"every parameter group failed, nothing saved to {s.path} ({reasons})")
    automl = s.format.lower() == registry.AUTOML.lower()
    extra = runner.extra_tables(None if automl else plans[0].algorithm, options, groups, s.path)
    path = store.model_target(session, s.path, options)
    version = store.write(path, s.path, groups, flag(options, "keepVersion", False))
    if extra is not None:
        _write_data(path / "data", extra)
    result = runner.result_table(groups, s.path, version, automl=automl)
    return result, version, len(groups), sum(g.status == "fail" for g in groups)


class CatalogTable:
    """The table a train statement reads (``runner.TrainTable``): whole from the catalog, or
    described by SQL (row count, distinct labels, the first row a column check rejects) and
    split into data servers as a cell's input is (``cells.runner.partition``), without its rows
    coming into this process. A Daft select is described where its partitions are
    (``cells.partitions.stored_query``), the others by the session's DuckDB."""

    def __init__(self, session, name: str):
        self.session, self.name = session, name
        self._whole: pa.Table | None = None

    def arrow(self) -> pa.Table:
        if self._whole is None:
            self._whole = self.session.catalog.arrow(self.name)
        return self._whole

    def head(self) -> pa.Table:
        return self._query(f"SELECT * FROM {ROWS} LIMIT 1")

    def summary(self, label: str | None) -> tuple[int, np.ndarray | None]:
        blocks = self.session.catalog.blocks(self.name)
        if blocks is not None:
            rows = sum(n for _, n in blocks)
        else:
            [(rows,)] = self.session.catalog.relation(self.name).aggregate("count(*)").fetchall()
        if label is None:
            return rows, None
        distinct = self._query(f"SELECT DISTINCT CAST({_quoted(label)} AS DOUBLE) AS v FROM {ROWS} ORDER BY v",
                               combine=f"SELECT DISTINCT v FROM {ROWS} ORDER BY v")
        return rows, distinct.column("v").to_numpy()

    def first_invalid(self, column: str, ids: bool = False) -> pa.Table:
        value = _quoted(column)
        invalid = f"{value} IS NULL"
        if ids:
            number = f"TRY_CAST({value} AS DOUBLE)"
            invalid += f" OR {number} <> floor({number}) OR abs({number}) > 2147483647"
        return self._query(f"SELECT * FROM {ROWS} WHERE {invalid} LIMIT 1")

    def _query(self, sql: str, combine: str | None = None) -> pa.Table:
        """``sql`` (DuckDB) over the table named ``ROWS``: by the session's DuckDB, or over each of a
        Daft select's partitions where it is, then ``combine`` (default ``sql``: a filter with a
        LIMIT) over their answers here."""
        blocks = self.session.catalog.blocks(self.name)
        if blocks is not None:
            return stored_query(blocks, ROWS, sql, combine or sql)
        return self.session.catalog.relation(self.name).query(ROWS, sql).to_arrow_table()

    def servers(self, count: int) -> list:
        self.session.ray_link.ensure()
        return partition(self.session, self.name, count)


def _write_data(folder: Path, tables: dict[str, pa.Table]) -> None:
    """Byzer's TARGET/data/NAME Parquet folders, replacing those of the previous train."""
    shutil.rmtree(folder, ignore_errors=True)
    for name, table in tables.items():
        (folder / name).mkdir(parents=True)
        pq.write_table(table, folder / name / "part-0.parquet")


def _chosen(session, fmt: str, target: str, options: dict):
    """(the model table's version, the group FMT's ``predict``/``register`` use, its algorithm):
    the algorithm looked up once, AutoML's as its chosen group names it."""
    return _chosen_at(store.model_target(session, target, options), fmt, target, options)


def _chosen_at(path: Path, fmt: str, target: str, options: dict):
    """``_chosen`` of the model table at ``path`` (TARGET resolved)."""
    alg = None if fmt.lower() == registry.AUTOML.lower() else registry.get(fmt)
    if alg is not None and alg.no_inference:
        raise MLSQLError(f"{alg.name} does not support batch predict or API predict (register): "
                         f"{alg.no_inference.replace('TARGET', target)}")
    version, groups = store.read(path, target, options)
    group = ml_predictor.select(groups, alg, options, target)
    return version, group, alg or registry.get(group.alg)


def chosen_rows(path: Path, fmt: str, target: str, options: dict) -> tuple[int, pa.Table]:
    """(version, rows) of the group ``register`` serves, as a Ray Serve replica reads it."""
    version, group, _ = _chosen_at(path, fmt, target, options)
    return version, store.to_table([group])


def replica_loader(session, s: ast.Register, version: int) -> Loader:
    """How a Ray Serve replica loads the model ``s`` registered at ``version`` by itself (a
    model on actors; LDA's functions, answered in this process, are not served so)."""
    options = {**dict(s.options), "version": str(version)}
    path = store.model_target(session, s.path, options)
    path = path.absolute() if isinstance(path, Path) else path  # the replica's working folder is Ray's
    _, _, alg = _chosen_at(path, s.format, s.path, options)
    if alg.kind in FUNCTIONS:
        raise MLSQLError(f"{alg.name}'s functions are answered in this process, not by a model on actors: "
                         f"serve=\"true\" cannot deploy them")
    return Loader(ml_predictor.Predictor, Calls.of(options, ml_predictor.Predictor),
                  functools.partial(chosen_rows, path, s.format, s.path, options))


def predict(session, s: ast.Train) -> tuple[pa.Table, str]:
    """``s``'s table scored by the model group it chooses: (the table with the model's columns,
    which model: its TARGET, version and algIndex)."""
    options = dict(s.options)
    table = session.catalog.arrow(s.table)
    version, group, alg = _chosen(session, s.format, s.path, options)
    model = ml_predictor.FittedModel(group, s.path, alg)
    x = runner.features_of(table, options.get("featuresCol", group.metadata["featuresCol"]), s.table)
    scored = table
    for name, column in model.predict(x).items():
        if name in scored.column_names:
            scored = scored.drop_columns([name])
        scored = scored.append_column(name, column)
    return scored, f"model {s.path} version {version}, algIndex {group.index}"


def _on_actors(output: str | None = None):
    """A ModelFunction (ml/serving.py) whose Ray actors hold the group, answering ``output`` (else
    the statement's ``output`` option)."""

    def start(session, name: str, s: ast.Register, version: int, group):
        options = dict(s.options) if output is None else {**dict(s.options), "output": output}
        session.ray_link.ensure()
        return ModelFunction.start(name, s.path, version, store.to_table([group]), options,
                                   session.ray_link.cpus(), predictor=ml_predictor.Predictor, pool=session.workers)

    return start


def _in_process(function_class):
    """A function answered in this process from the loaded group (``function_class.of``)."""

    def make(session, name: str, s: ast.Register, version: int, group):
        return function_class.of(name, s.path, version, group)

    return make


#: what ``register ALG.`TARGET` as f`` defines, by the suffix of each function's name; LDA's are
#: Byzer's: f(term) a row of the topics matrix, f_doc(features) a document's topic distribution,
#: f_topic(topic, n) the topic's n heaviest terms (Spark's describeTopics)
FUNCTIONS = {TOPICS: {"": _in_process(ml_predictor.TermTopics), "_doc": _on_actors("probability"),
                      "_topic": _in_process(ml_predictor.DescribedTopic)}}
#: … and for every other kind of algorithm: f(features), the model on Ray actors
MODEL_ON_ACTORS = {"": _on_actors()}


def model_functions(session, s: ast.Register) -> list:
    """The functions serving the chosen group of an ML model table, ``s.function`` first."""
    version, group, alg = _chosen(session, s.format, s.path, dict(s.options))
    made = []
    try:
        for suffix, make in FUNCTIONS.get(alg.kind, MODEL_ON_ACTORS).items():
            made.append(make(session, s.function + suffix, s, version, group))
    except BaseException:
        for function in made:
            function.close()
        raise
    return made


#: Byzer's folder of one train's models, ``TARGET/_model_N``: ``modelExplain`` reads it as index="N"
_MODEL_FOLDER = re.compile(r"^(?P<target>.+?)/+_model_(?P<index>\d+)/*$")


def model_explain(session, s: ast.Load) -> pa.Table:
    """``index="N"`` (or the path ``TARGET/_model_N``) explains the models of the train that
    reported ``modelPath`` TARGET/_model_N/..., the table's version N; without it the latest."""
    options = dict(s.options)
    target, index = s.path.rstrip("/") or s.path, options.get("index")
    folder = _MODEL_FOLDER.match(target)
    if folder:
        if index is not None and index.strip() != folder["index"]:
            raise MLSQLError(f"modelExplain.`{target}` is index {folder['index']}, but index={index!r} is given too")
        target, index = folder["target"], folder["index"]
    path = store.model_target(session, target, options)
    if index is not None:
        kept = store.kept_versions(path, target)
        if not index.strip().isdigit() or int(index) not in kept:
            raise MLSQLError(f"{target} has no model index {index!r} (the index is the N of modelPath "
                             f"{target}/_model_N/...; it has {', '.join(map(str, kept))})")
        options["version"] = str(int(index))
    _, groups = store.read(path, target, options)
    alg = options.get("alg")
    if alg:
        registry.get(alg)
        groups = [g for g in groups if g.alg.lower() == alg.lower()]
    return sources.model_explain(groups, target)
