"""``train T as ALG.`TARGET` where ...``: options → parameter groups → fits → model table.

Every group is checked before anything is fitted (a bad value is the user's mistake and stops the
statement; an unknown parameter is a warning and left out, ``options.check_known``). The fits then run on Ray actors (``GroupHost``), as many
as the cluster has CPUs for, each with its share of them as threads; a single group runs in this
process instead (nothing to ship, and it gets all local CPUs). The hosts go to the session's warm
pool afterwards (``mlsql_ray.cluster.warm``), so the next ``train`` finds scikit-learn imported. A group
whose fit fails is ``fail`` with its error; the others still finish.

On a cluster that is this machine alone, several groups are fitted in this process too, one after
another with every CPU, while no warm GroupHosts are ready for them (``fitted_here``): a fresh
host costs a Ray worker process plus importing this package and scikit-learn (4-8 s on 2 cores,
several times the fits themselves), and on one machine the rows are read where they are fitted
either way. The hosts are then started in the background for the next ``train`` (after the fits,
not beside them: their start would take the CPUs the fits use). On a cluster of several nodes the
groups always go to hosts (issue 26: each reads its table on the node that fits it).

Where the rows are read: a group fitted in this process reads the table (and the evaluateTable)
here, and so do groups fitted on GroupHosts when the cluster is this machine alone (``one_machine``):
the arrays go to Ray's object store once and every host maps them from there, where each host
reading the whole table itself cost a read per host, all on the same two cores, before any fit
began (``bench_service.py``: 0.27 s of the first train of a job on the warm server). On a cluster
of several nodes, and for an algorithm whose workers read their own partitions
(``Algorithm.reads_partitions``), the table is described instead (``Described``): checked from its
first row and SQL counts, and sent as data servers (``cells.partitions``: the files and rows to
read, or where a computed table's batches are in Ray's object store) that each host reads where it
runs (``HostRows``); the driver never holds those training rows.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable, Protocol

import numpy as np
import pyarrow as pa

from .. import progress
from ..cluster import warm
from ..cluster.link import imported_ray, local_cpus, remote_error_line, stop_actors
from ..errors import MLSQLError
from ..options import check_known, groups, is_group_option
from . import metrics as evaluation, registry, serialize
from .algorithm import (CLASSIFIER, CLUSTERER, COMMON_OPTIONS, GROUP_OPTIONS, RECOMMENDER, REGRESSOR, SUPERVISED,
                        TOPICS, Algorithm)
from .columns import features_of, ids_of, labels_of
from .store import StoredGroup, byzer_alg_index

AUTOML_OPTIONS = ("algos", "sortedBy")


@dataclass(frozen=True)
class GroupPlan:
    """One group of a train: the algorithm itself (looked up once, when the statement is planned,
    and carried to every room and host that fits it), its parameters and columns."""

    index: int
    algorithm: Algorithm
    params: dict  # the estimator's parameters, Spark-named strings
    columns: dict  # the columns it reads, by option: featuresCol, labelCol (ALS: userCol, itemCol, ratingCol)
    given: dict = field(default_factory=dict)  # as the user wrote them (for trainParams)

    @property
    def alg(self) -> str:
        """Byzer's name of the algorithm."""
        return self.algorithm.name

    @property
    def inputs(self) -> tuple:
        """What its data is read by, and whether as arrays here or as partitions on workers
        (``Algorithm.reads_partitions``): groups with the same inputs share one dataset."""
        return (self.algorithm.reads_partitions, *self.columns.items())


@dataclass
class Dataset:
    """Features (rows × numbers; ALS: user and item ids) and, for supervised algorithms, labels."""

    x: np.ndarray
    y: np.ndarray | None

    @property
    def rows(self) -> int:
        return len(self.x)

    @property
    def width(self) -> int:
        return int(self.x.shape[1])

    def labels(self) -> np.ndarray:
        """The distinct labels, sorted."""
        return np.unique(self.y)


@dataclass
class Described:
    """A table the driver does not read, for an algorithm whose workers read their own partitions
    (``Algorithm.reads_partitions``) or for groups fitted on GroupHosts: its size and labels, found
    by the engine's SQL, and ``servers(count)``, its partitions as data servers (``cells.partitions``:
    what to read, or where its batches are in Ray's object store) that ``train.fit`` hands to its
    workers, or that a host reads whole (``HostRows``)."""

    name: str
    rows: int
    width: int
    distinct: np.ndarray  # the label column's distinct values as float64, sorted
    servers: Callable[[int], list]

    def labels(self) -> np.ndarray:
        return self.distinct


@dataclass(frozen=True)
class HostRows:
    """A described table as a GroupHost is sent it: data servers (``cells.context.DataServer``)
    that the host reads where it runs, then makes into a ``Dataset`` as the driver would."""

    name: str  # as errors call it
    servers: tuple

    def dataset(self, alg: Algorithm, columns: dict) -> Dataset:
        tables = [server.read() for server in self.servers]
        return dataset(alg, columns, pa.concat_tables(tables) if len(tables) > 1 else tables[0], self.name)


class TrainTable(Protocol):
    """The table a train statement reads, as the engine offers it: whole, for groups fitted from
    arrays in this process, or described, for GroupHosts and for algorithms whose workers read
    their own partitions."""

    name: str

    def arrow(self) -> pa.Table:
        """Every row, in this process."""

    def head(self) -> pa.Table:
        """The first row (none when the table is empty): enough to check the columns' types."""

    def summary(self, label: str | None) -> tuple[int, np.ndarray | None]:
        """(rows, the distinct values of ``label`` as float64, sorted, nulls included as NaN)."""

    def first_invalid(self, column: str, ids: bool = False) -> pa.Table:
        """The first row whose ``column`` is null (``ids``: or not a whole number in Spark's
        Integer range), none when every row is fine: what ``columns`` would reject, found by SQL."""

    def servers(self, count: int) -> list:
        """The table's rows as at most ``count`` data servers."""


def plan(alg_name: str, options: dict) -> list[GroupPlan]:
    """The groups a train statement asks for, every parameter checked."""
    automl = alg_name.lower() == registry.AUTOML.lower()
    alg = None if automl else registry.get(alg_name)
    statement = AUTOML_OPTIONS if automl else [p.name for p in alg.statement_params]
    shared = {k: v for k, v in options.items() if not is_group_option(k) and k not in COMMON_OPTIONS
              and k not in statement}
    per_group = groups(options)
    features, label = options.get("featuresCol", "features"), options.get("labelCol", "label")
    if automl:
        return _automl_plan(options, shared, features, label)
    alg.statement_kwargs(options)  # raises on a bad value
    plans = []
    for index in sorted(per_group) or [0]:
        given = {**shared, **per_group.get(index, {})}
        params = alg.known_params({k: v for k, v in given.items() if k not in GROUP_OPTIONS})
        alg.library_kwargs(params, 1)  # raises on a bad value
        plans.append(GroupPlan(index, alg, params, alg.columns(given, features, label), per_group.get(index, {})))
    return plans


def _automl_plan(options: dict, shared: dict, features: str, label: str) -> list[GroupPlan]:
    algorithms = registry.automl_algorithms(options.get("algos"), options.get("sortedBy"))
    known = check_known(shared, [name for alg in algorithms for name in alg.param_names()],
                        f"AutoML over {', '.join(alg.name for alg in algorithms)}", ignore_case=False)
    plans = []
    for index, alg in enumerate(algorithms):
        params = {k: shared[k] for k in known if k in alg.param_names()}
        alg.library_kwargs(params, 1)
        plans.append(GroupPlan(index, alg, params, alg.columns({}, features, label), params))
    return plans


def dataset(alg: Algorithm, columns: dict, table: pa.Table, what: str) -> Dataset:
    """A group's data from ``table``: the columns the algorithm reads (``Algorithm.columns``)."""
    if alg.id_params:
        x = np.column_stack([ids_of(table, columns[p], what, p) for p in alg.id_params])
    else:
        x = features_of(table, columns["featuresCol"], what, np.dtype(alg.features_dtype))
    y = labels_of(table, columns[alg.label_param], what, alg.label_param) if alg.kind in SUPERVISED else None
    return Dataset(x, y)


def described(alg: Algorithm, columns: dict, table: TrainTable, what: str | None = None) -> Described:
    """A group's data as a description: its first row checked as ``dataset`` checks every row,
    its size, labels and the rows ``columns`` would reject found by SQL; the rows stay where they
    are until workers (or GroupHosts) read them. ``what``: the table as errors call it."""
    what = what or table.name
    head = table.head()
    if alg.id_params:
        for param in alg.id_params:
            ids_of(head, columns[param], what, param)
            ids_of(table.first_invalid(columns[param], ids=True), columns[param], what, param)
        width = len(alg.id_params)
    else:
        width = features_of(head, columns["featuresCol"], what).shape[1]
    label = columns.get(alg.label_param) if alg.kind in SUPERVISED else None
    if label is not None:
        labels_of(head, label, what, alg.label_param)
        labels_of(table.first_invalid(label), label, what, alg.label_param)  # raises on nulls
    rows, distinct = table.summary(label if alg.kind == CLASSIFIER else None)
    if rows and not width:  # an empty list in the first row: workers would read no features
        raise MLSQLError(f"features column {columns['featuresCol']!r} of {what} holds empty lists")
    return Described(what, rows, width, distinct, table.servers)


#: whether a cluster that is this machine alone takes the one-machine ways (``one_machine``: several
#: groups fitted here while no warm GroupHosts are ready, the rows read here for the hosts; see the
#: module's docstring); tests of the hosts' own path, as on several machines, turn it off
FIT_HERE_ON_ONE_MACHINE = True


def one_machine(ray_link) -> bool:
    """Whether the train takes the one-machine ways: the cluster is this machine alone."""
    return FIT_HERE_ON_ONE_MACHINE and ray_link.single_machine()


def fitted_here(plans: list[GroupPlan], in_process: bool | None = None, ray_link=None) -> bool:
    """Whether ``run_groups`` fits the groups in this process rather than on GroupHosts: as
    ``in_process`` says if given; one group, always; several (``ray_link`` given) when the cluster
    is this machine alone and the warm pool has no GroupHosts ready for them."""
    if in_process is not None:
        return in_process
    if len(plans) == 1:
        return True
    if ray_link is None or not one_machine(ray_link):
        return False
    up = _ray_and_pool()
    if up is None:
        return True  # no Ray yet: no warm host either
    threads, count = host_layout(len(plans), ray_link.cpus())
    return up[1].idle_count(warm.Shape(HOST_KIND, threads)) < count


def _ray_and_pool():
    """(ray, the session's warm pool) when Ray is up in this process and a pool is active, else None."""
    ray, pool = imported_ray(), warm.current()
    if pool is None or ray is None or not ray.is_initialized():
        return None
    return ray, pool


def host_layout(groups: int, cpus: int) -> tuple[int, int]:
    """(threads per GroupHost, hosts) for ``groups`` groups on a cluster of ``cpus`` CPUs."""
    threads = max(1, cpus // min(groups, cpus))
    return threads, min(groups, max(1, cpus // threads))


def datasets(plans: list[GroupPlan], table: TrainTable, evaluate: TrainTable | None, in_process: bool | None = None,
             alone: bool = False) -> dict[tuple, tuple[Dataset | Described, Dataset | Described | None]]:
    """(train, evaluation) data per set of columns the groups read (GroupPlan.inputs), checked.
    A fit in this process (``fitted_here``, or an ``Algorithm.in_process`` one) or on the GroupHosts
    of a cluster that is this machine alone (``alone``: ``one_machine``) reads them here, except the
    training rows of an algorithm whose workers read their own partitions; groups fitted on the
    hosts of a cluster of several nodes get both tables described, for the hosts to read."""
    out = {}
    name = table.name
    here = alone or fitted_here(plans, in_process)
    for p in plans:
        if p.inputs in out:
            continue
        alg = p.algorithm
        on_hosts = not here and not alg.in_process
        train = (described(alg, p.columns, table) if alg.reads_partitions or on_hosts
                 else dataset(alg, p.columns, table.arrow(), name))
        check = None
        if evaluate is not None:
            what = f"evaluateTable {evaluate.name}"
            check = (described(alg, p.columns, evaluate, what) if on_hosts
                     else dataset(alg, p.columns, evaluate.arrow(), what))
        if check is not None and check.width != train.width:
            raise MLSQLError(f"evaluateTable {evaluate.name} has {check.width} features per row, {name} has {train.width}")
        if train.rows == 0:
            raise MLSQLError(f"{name} has no rows to train on")
        out[p.inputs] = (train, check)
    for p in plans:
        labels = out[p.inputs][0].labels()
        if p.algorithm.kind == CLASSIFIER and len(labels) < 2:
            raise MLSQLError(f"label column {p.columns['labelCol']!r} of {name} has one class ({labels[0].item()!r}): "
                             f"{p.alg} needs at least two")
    return out


def shipped(alg: Algorithm, data: Dataset | Described | None) -> Dataset | Described | HostRows | None:
    """A group's data as its fit takes it: a description of a table for an algorithm fitted from
    arrays becomes the whole table as data servers (``HostRows``) for the host to read."""
    if isinstance(data, Described) and not alg.reads_partitions:
        return HostRows(data.name, tuple(data.servers(1)))
    return data


def fit_group(group: GroupPlan, train: Dataset | Described | HostRows, check: Dataset | HostRows | None,
              threads: int) -> StoredGroup:
    """Fit one group and evaluate it; any failure makes the group ``fail`` with its reason. Rows
    sent as ``HostRows`` are read first, here: a bad row there is the statement's error."""
    _after_loads_ahead(group.alg)
    from threadpoolctl import threadpool_limits  # scikit-learn's dependency, needed where fits run

    alg = group.algorithm
    if isinstance(train, HostRows):
        train = train.dataset(alg, group.columns)
    if isinstance(check, HostRows):
        check = check.dataset(alg, group.columns)
    started = time.time()
    metadata = {"algorithm": alg.name, "implementation": alg.implementation, "library": alg.library,
                "kind": alg.kind, "algIndex": group.index, "params": group.params, "given": group.given,
                **group.columns, "columns": list(group.columns),
                "numFeatures": train.width, "trainRows": train.rows, "metrics": {}}
    data = b""
    try:
        estimator = alg.estimator(group.params, train.rows, threads)
        metadata["implementation"] = alg.implementation_of(estimator)
        with threadpool_limits(threads):
            if isinstance(train, Described):  # a classifier whose workers read their partitions
                metadata["classes"] = train.distinct.tolist()
                estimator.fit_partitions(train, group.columns)
            elif alg.kind == CLASSIFIER:
                classes, y = np.unique(train.y, return_inverse=True)
                metadata["classes"] = classes.tolist()
                estimator.fit(train.x, y)
            elif alg.kind in SUPERVISED:
                estimator.fit(train.x, train.y)
            else:
                estimator.fit(train.x)
            if check is not None:
                metadata["metrics"] = evaluate(alg.kind, estimator, metadata, check)
        data = serialize.dumps(estimator, alg.library)
        status = "success"
    except Exception as exc:  # noqa: BLE001 - a group's failure is reported in its row, as Byzer does
        status = "fail"
        metadata["reason"] = f"{type(exc).__name__}: {exc}"
    metadata.update(status=status, startTime=_stamp(started), endTime=_stamp(time.time()))
    return StoredGroup(group.index, alg.name, status, metadata, data)


def evaluate(kind: str, estimator, metadata: dict, check: Dataset) -> dict[str, float]:
    if kind == CLASSIFIER:
        classes = np.asarray(metadata["classes"])
        predicted = classes[np.asarray(estimator.predict(check.x), dtype=np.int64)]
        every = np.unique(np.concatenate([classes, check.y]))
        return evaluation.classification(np.searchsorted(every, check.y), np.searchsorted(every, predicted), len(every))
    if kind == REGRESSOR:
        return evaluation.regression(check.y, np.asarray(estimator.predict(check.x), dtype=np.float64))
    if kind == CLUSTERER:
        return evaluation.silhouette(check.x, estimator.predict(check.x))
    if kind == TOPICS:
        return {"logPerplexity": float(np.log(estimator.perplexity(check.x)))}
    if kind == RECOMMENDER:  # Spark's RegressionEvaluator on what coldStartStrategy leaves, as Byzer: rmse
        truth, predicted = estimator.rated(check.x, check.y)
        return {"rmse": float(np.sqrt(np.mean((truth - predicted) ** 2))) if len(truth) else float("nan")}
    raise ValueError(f"unknown algorithm kind {kind!r}")


def extra_tables(alg: Algorithm | None, options: dict, groups: list[StoredGroup], what: str) -> dict[str, pa.Table] | None:
    """The tables the train's algorithm (None: AutoML's several) writes beside its model
    (``Algorithm.tables``), from its best group as Byzer picks it: the best on the groups' metric
    (lowest rmse for ALS), else the first that succeeded. None: the algorithm writes none."""
    if alg is None or alg.tables is None:
        return None
    fine = [g for g in groups if g.status == "success"]
    metric = next((name for g in fine for name in g.metrics), None)
    best = (evaluation.best(fine, metric) if metric else None) or fine[0]
    model = serialize.loads(best.data, alg.library, lambda: alg.build({}, 0), what)
    return alg.tables(model, alg.statement_kwargs(options))


def _stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def run_groups(plans: list[GroupPlan], data: dict, ray_link, in_process: bool | None = None) -> list[StoredGroup]:
    """Fit every group: in this process (``fitted_here``: one group; several on a machine alone
    while no warm GroupHosts are ready, which are then started for the next train), or on
    GroupHosts sized to the cluster (``in_process`` overrides the choice; bench/bench_sql_train.py
    measures both)."""
    if fitted_here(plans, in_process, ray_link):
        if any(p.algorithm.in_process for p in plans):
            ray_link.ensure()  # their fit starts Ray actors
        done = []
        with warm.released_on_interrupt(warm.current()):
            for p in plans:
                _report_start(p, len(plans))
                train, check = (shipped(p.algorithm, d) for d in data[p.inputs])
                done.append(_report_end(fit_group(p, train, check, local_cpus()), len(plans)))
        _start_hosts_ahead(plans, ray_link)
        return done
    local = [p for p in plans if p.algorithm.in_process]
    if local:  # e.g. KerasClassifier, whose fit starts its own actors: they must not wait on our tasks
        remote = run_groups([p for p in plans if p not in local], data, ray_link) if len(local) < len(plans) else []
        done = {g.index: g for g in remote + run_groups(local, data, ray_link, in_process=True)}
        return [done[p.index] for p in plans]
    ray = ray_link.ensure()
    threads, count = host_layout(len(plans), ray_link.cpus())
    refs = {}
    for p in plans:
        if p.inputs not in refs:
            refs[p.inputs] = tuple(ray.put(shipped(p.algorithm, d)) for d in data[p.inputs])
    with warm.released_on_interrupt(warm.current()), _Hosts(ray, count, threads) as hosts:
        return _fit_on_hosts(ray, hosts, plans, refs, threads)


def _start_hosts_ahead(plans: list[GroupPlan], ray_link) -> None:
    """After groups were fitted here that GroupHosts could fit: start those hosts in the background
    (as many as free CPUs allow, their libraries imported) for the session's next ``train``."""
    hosted = [p for p in plans if not p.algorithm.in_process]
    up = _ray_and_pool()
    if len(hosted) < 2 or up is None:
        return
    ray, pool = up
    start_hosts(ray, pool, ray_link.cpus(), len(hosted), tuple(sorted({p.alg for p in hosted})))


def start_hosts(ray, pool: warm.WarmPool, cpus: int, groups: int, algorithms: tuple[str, ...]) -> int:
    """Start, in the background, the GroupHosts a train of ``groups`` groups takes on a cluster of
    ``cpus`` CPUs that ``pool`` lacks (as many as free CPUs allow), each importing what fitting
    ``algorithms`` needs; they join ``pool`` once loaded. How many started."""
    threads, count = host_layout(groups, cpus)
    shape = warm.Shape(HOST_KIND, threads)
    count = min(count - pool.idle_count(shape), int(ray.available_resources().get("CPU", 0)) // threads)
    if count <= 0:
        return 0
    actor = ray.remote(GroupHost).options(num_cpus=threads, max_restarts=0)
    hosts = [actor.remote() for _ in range(count)]
    pool.start_ahead(shape, hosts, [host.load.remote(algorithms) for host in hosts])
    return count


HOST_KIND = "ml.GroupHost"  # GroupHosts' kind in the warm pool


#: (algorithms, done) of the imports running ahead in a background thread (``load_ahead``)
_loads_ahead: list[tuple[frozenset[str], threading.Event]] = []


def load_ahead(algorithms: tuple[str, ...]) -> Callable[[], None]:
    """Announce that ``algorithms``' libraries are about to be imported by a background thread of
    this process (``engine.prestart``, ahead of fits here) and return the call that imports them,
    for that thread to make. Until it has, a ``fit_group`` of one of them waits for it, not before
    (the train statement reads its rows meanwhile), instead of importing the same modules from a
    second thread at once, which importlib can answer with a module the other half initialised."""
    done = threading.Event()
    entry = (frozenset(algorithms), done)
    _loads_ahead.append(entry)

    def load() -> None:
        try:
            load_algorithms(algorithms)
        finally:
            done.set()
            _loads_ahead.remove(entry)

    return load


def _after_loads_ahead(algorithm: str) -> None:
    for algorithms, done in list(_loads_ahead):
        if algorithm in algorithms:
            done.wait()


def load_algorithms(algorithms: tuple[str, ...]) -> None:
    """Import what fitting ``algorithms`` needs, in this process: their libraries and serialisers,
    by building each one's default estimator (a GroupHost's, or the driver's ahead of its fits)."""
    for name in algorithms:
        alg = registry.get(name)
        alg.estimator({}, 1)
        if alg.library == "skops":
            import skops.io  # noqa: F401 - what dumps will import


class GroupHost(warm.WarmActor):
    """A Ray actor that fits groups, one at a time; its imports (scikit-learn, XGBoost, ...) stay
    for the next group and, through the warm pool, the next ``train``."""

    def load(self, algorithms: tuple[str, ...]) -> None:
        """Import what fitting ``algorithms`` needs, ahead of the first group (``engine.prestart``)."""
        load_algorithms(algorithms)

    def fit(self, group: GroupPlan, train: Dataset | HostRows, check: Dataset | HostRows | None,
            threads: int) -> StoredGroup:
        return fit_group(group, train, check, min(threads, local_cpus()))


class _Hosts:
    """``count`` GroupHosts of ``threads`` CPUs, warm ones from the session's pool first. Those
    alive at the end go back to the pool after a run that ended well; the rest are stopped."""

    def __init__(self, ray, count: int, threads: int):
        self.ray, self.pool, self.shape = ray, warm.current(), warm.Shape(HOST_KIND, threads)
        self.actor_class = ray.remote(GroupHost).options(num_cpus=threads, max_restarts=0)
        self.idle = self.pool.take(self.shape, count) if self.pool is not None else []
        warm.make_room(ray, (count - len(self.idle)) * threads)
        self.idle += [self.actor_class.remote() for _ in range(count - len(self.idle))]
        self.busy: list = []

    def __enter__(self) -> _Hosts:
        return self

    def replace(self, dead, needed: bool) -> None:
        """A host that died: stopped for good, and a fresh one in its place if groups wait."""
        stop_actors(self.ray, [dead])
        self.busy.remove(dead)
        if needed:
            self.idle.append(self.actor_class.remote())

    def __exit__(self, exc_type, *exc_info) -> None:
        every = self.idle + self.busy
        if exc_type is None and self.pool is not None:
            self.pool.give(self.shape, every)
        else:
            stop_actors(self.ray, every)


def _fit_on_hosts(ray, hosts: _Hosts, plans: list[GroupPlan], refs: dict, threads: int) -> list[StoredGroup]:
    """Each group to the next free host, reported as it starts and as it ends (in the order they
    finish). A host that dies fails its group, not the others, and is replaced."""
    # Each host holds ``threads`` CPUs in Ray, but its library's thread pool may use all the CPUs
    # the run holds (never more than its node has): groups rarely take equal time, and a group
    # that ends early would otherwise leave its CPUs idle while a longer one runs on its share
    # (2 RandomForest groups of depth 8 and 16 on 2 CPUs: 1.28x the direct fits; now 1.15x).
    pool_threads = threads * (len(hosts.idle) + len(hosts.busy))
    waiting, running, done = list(plans), {}, {}
    while waiting or running:
        while waiting and hosts.idle:
            p, host = waiting.pop(0), hosts.idle.pop()
            _report_start(p, len(plans))
            running[host.fit.remote(p, *refs[p.inputs], pool_threads)] = (p, host)
            hosts.busy.append(host)
        [future], _ = ray.wait(list(running), num_returns=1)
        p, host = running.pop(future)
        try:
            group = ray.get(future)
            hosts.busy.remove(host)
            hosts.idle.append(host)
        except Exception as exc:  # noqa: BLE001 - a host that died: that group fails, not the others
            if isinstance(getattr(exc, "cause", None), MLSQLError):  # a bad row the host read
                raise MLSQLError(exc.cause.message) from None
            group = StoredGroup(p.index, p.alg, "fail", {"algorithm": p.alg, "algIndex": p.index, **p.columns,
                                                         "columns": list(p.columns),
                                                         "reason": remote_error_line(exc), "metrics": {}})
            hosts.replace(host, needed=bool(waiting))
        done[p.index] = _report_end(group, len(plans))
    return [done[p.index] for p in plans]


def _report_start(group: GroupPlan, groups: int) -> None:
    progress.report("group_start", alg=group.alg, group=group.index, groups=groups)


def _report_end(group: StoredGroup, groups: int) -> StoredGroup:
    """``group_end`` with the group's status, metrics and fit time (start to end, wherever it ran)."""
    m = group.metadata
    elapsed = None
    if m.get("startTime") and m.get("endTime"):
        elapsed = (datetime.fromisoformat(m["endTime"]) - datetime.fromisoformat(m["startTime"])).total_seconds()
    progress.report("group_end", alg=group.alg, group=group.index, groups=groups, status=group.status,
                    metrics=dict(group.metrics), message=m.get("reason", ""), elapsed=elapsed)
    return group


def result_table(groups: list[StoredGroup], target: str, version: int | None, automl: bool = False) -> pa.Table:
    """Byzer's name/value rows, one block per group (AutoML's algIndex in Byzer's ``ALG.N`` form)."""
    names, values = [], []
    for g in groups:
        m = g.metadata
        given = {**m.get("given", {})}
        for option in m.get("columns", ()):
            given.setdefault(option, m[option])
        block = {
            "modelPath": f"{target}/_model_{version}/model/{g.index}",
            "algIndex": byzer_alg_index(g, groups) if automl else str(g.index),
            "alg": m.get("implementation", g.alg),
            "metrics": evaluation.text(g.metrics),
            "status": g.status,
            "message": m.get("reason", ""),
            "startTime": m.get("startTime", ""),
            "endTime": m.get("endTime", ""),
            "trainParams": "Map(" + ", ".join(f"{k} -> {v}" for k, v in given.items()) + ")",
        }
        names.extend(block)
        values.extend(block.values())
    return pa.table({"name": pa.array(names, pa.string()), "value": pa.array(values, pa.string())})
