"""Registered models as Ray Serve deployments: ``register RandomForest.`models/rf` as rf where
serve="true";`` also serves the model over HTTP from replicas on the session's Ray, at
``http://127.0.0.1:PORT/serve/rf`` (Ray Serve's proxy, loopback only).

Each replica loads the model itself from its Delta table (the version the session registered),
with the predictor class the registered function's actors use (``serving.Predictor`` for Keras,
``predictor.Predictor`` for the built-in algorithms), and answers Byzer's API request
(``predict_request``) with one prediction per row. Ray Serve restarts a replica that dies and
scales between ``serveMinReplicas`` and ``serveMaxReplicas`` by its queue; a replica asks for
``serveCpus`` CPUs (0 by default: as the function's own actors, it shares the machine), never more
in all than the cluster has.

A deployment is one Ray Serve application per function name, cluster-wide: registering the name
again (from any session) replaces it, ``unregister`` deletes it, and ``mlsql-ray serve`` deletes the
ones it made when it stops (``undeploy_all``); a script's session leaves them running (on an
embedded Ray they end with it)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable

import pyarrow as pa

from ..cluster import ray_internals
from ..cluster.link import imported_ray
from ..errors import MLSQLError, first_line
from ..options import integer, number
from . import predict_request
from .serving import Calls, check_shape

APP_PREFIX = "mlsql-"  # a Ray Serve application serving function f is named mlsql-f
ROUTE_PREFIX = "/serve/"  # … and answers at /serve/f
DEFAULT_PORT = 8000  # Ray Serve's own default
INPUT = "feature"  # the column of the request's data the model reads, as in Byzer's /model/predict

_deployed: set[str] = set()  # the functions this process deployed (``undeploy_all``)
_lock = threading.Lock()


@dataclass(frozen=True)
class Loader:
    """What a replica needs to load a model by itself: the predictor class, how it is called, and
    ``rows``, a picklable read of the model's rows from its Delta table: () -> (version, rows)."""

    predictor: type
    calls: Calls
    rows: Callable[[], tuple[int, pa.Table]]


@dataclass(frozen=True)
class Scaling:
    """The ``serve*`` options of ``register``: the proxy's port (taken when Ray Serve starts), a
    fixed number of replicas or autoscaling bounds, and each replica's CPUs."""

    port: int
    replicas: int | None
    bounds: tuple[int, int] | None
    cpus: float

    @classmethod
    def of(cls, options: dict, cluster_cpus: int) -> "Scaling":
        port = integer(options, "servePort", DEFAULT_PORT, minimum=1)
        cpus = number(options, "serveCpus", 0.0)
        if cpus < 0:
            raise MLSQLError(f"serveCpus must be 0 or more, not {cpus:g}")
        autoscaled = "serveMinReplicas" in options or "serveMaxReplicas" in options
        if autoscaled and "serveReplicas" in options:
            raise MLSQLError("give serveReplicas (a fixed number) or serveMinReplicas/serveMaxReplicas (autoscaling), not both")
        if autoscaled:
            if "serveMaxReplicas" not in options:
                raise MLSQLError("serveMinReplicas needs serveMaxReplicas: the most replicas autoscaling may start")
            low = integer(options, "serveMinReplicas", 1, minimum=0)
            high = integer(options, "serveMaxReplicas", 1, minimum=1)
            if low > high:
                raise MLSQLError(f"serveMinReplicas ({low}) is more than serveMaxReplicas ({high})")
            most, scaling = high, cls(port, None, (low, high), cpus)
        else:
            most = integer(options, "serveReplicas", 1, minimum=1)
            scaling = cls(port, most, None, cpus)
        if cpus * most > cluster_cpus:
            raise MLSQLError(f"{most} replicas of serveCpus={cpus:g} need {cpus * most:g} CPUs; the cluster has "
                             f"{cluster_cpus} (serveCpus may be a fraction, or 0 to share them)")
        return scaling

    def deployment_options(self) -> dict:
        counts = ({"num_replicas": self.replicas} if self.bounds is None else
                  {"autoscaling_config": {"min_replicas": self.bounds[0], "max_replicas": self.bounds[1]}})
        return {**counts, "ray_actor_options": {"num_cpus": self.cpus}}

    def describe(self) -> str:
        count = f"{self.replicas}" if self.bounds is None else f"{self.bounds[0]} to {self.bounds[1]}"
        return f"{count} replicas of {self.cpus:g} CPUs"


class Replica:
    """One replica of a served model (Ray Serve's deployment class): the model loaded from its
    table when the replica starts; each request's ``data`` predicted, answered as
    ``[{"f": prediction}, ...]``; a request that does not fit answered 400 with what is wrong."""

    def __init__(self, name: str, loader: Loader):
        self.name, self.calls = name, loader.calls
        self.predictor = loader.predictor(1)  # one thread: replicas, not threads, spread the load
        self.version, rows = loader.rows()
        self.width = self.predictor.load(rows.to_pylist(), loader.calls.unsafe)

    async def __call__(self, request):
        from starlette.responses import JSONResponse, Response  # Ray Serve's own dependency

        try:
            params = predict_request.parameters(dict(request.query_params), await request.body(),
                                                request.headers.get("content-type", ""))
            column = self._input(predict_request.input_table(params.get("dataType", "vector"), params.get("data", "[]")))
            answer = self.predictor.predict(column, self.calls.scale, self.calls.output, self.calls.batch_size)
        except (ValueError, pa.ArrowException) as exc:  # BadRequest among them: the request's fault
            return Response(f"{self.name}: {exc}", status_code=400, media_type="text/plain")
        return JSONResponse([{self.name: value} for value in answer.to_pylist()])

    def _input(self, table: pa.Table) -> pa.Array:
        """The request's ``feature`` column, its lists as numbers (``vec_dense``)."""
        if INPUT not in table.column_names:
            raise predict_request.BadRequest(f"data needs the model's input, {INPUT}; it has {', '.join(table.column_names)}")
        column = table.column(INPUT).combine_chunks()
        if pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
            column = column.cast(pa.list_(pa.float64()))
        if column.null_count:
            raise predict_request.BadRequest(f"{INPUT} is null in {column.null_count} of the rows")
        check_shape(column, self.width, f"{self.name}({INPUT})")
        return column


def route(name: str) -> str:
    return ROUTE_PREFIX + name


def deploy(name: str, loader: Loader, options: dict, ray_link) -> str:
    """Serve ``name``'s model from Ray Serve replicas on ``ray_link``'s Ray, starting Ray Serve
    (its proxy on 127.0.0.1) if it is not running; replaces a deployment of that name. Waits until
    the replicas have loaded the model; says where it answers."""
    from ray import serve  # heavy: Ray Serve

    ray_link.ensure()
    scaling = Scaling.of(options, ray_link.cpus())
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": scaling.port})
        deployment = serve.deployment(Replica, name=name, **scaling.deployment_options())
        serve.run(deployment.bind(name, loader), name=APP_PREFIX + name, route_prefix=route(name))
    except Exception as exc:  # noqa: BLE001 - a replica that cannot load, a port taken: said as one error
        raise MLSQLError(f"cannot serve {name} with Ray Serve: {first_line(exc)}") from exc
    with _lock:
        _deployed.add(name)
    host, port = ray_internals.serve_http_address()
    return f"served at http://{host}:{port}{route(name)} ({scaling.describe()})"


def undeploy(name: str) -> bool:
    """Delete the deployment serving ``name``, if Ray Serve runs one; whether it did."""
    ray = imported_ray()
    if ray is None or not ray.is_initialized():
        return False
    from ray import serve  # heavy: Ray Serve

    app = APP_PREFIX + name
    if app not in serve.status().applications:
        return False
    serve.delete(app)
    with _lock:
        _deployed.discard(name)
    return True


def undeploy_all() -> None:
    """Delete the deployments this process made (``mlsql-ray serve`` stopping)."""
    with _lock:
        names = sorted(_deployed)
    for name in names:
        undeploy(name)


def listing() -> pa.Table:
    """``!show served``: the functions Ray Serve serves on this session's Ray (none while Ray is
    not started here), with their route, status and replicas by state."""
    ray = imported_ray()
    applications = {}
    if ray is not None and ray.is_initialized():
        from ray import serve  # heavy: Ray Serve

        applications = {name: app for name, app in serve.status().applications.items() if name.startswith(APP_PREFIX)}
    rows = []
    for app_name, app in sorted(applications.items()):
        name = app_name[len(APP_PREFIX):]
        states = {_word(state): count for d in app.deployments.values() for state, count in d.replica_states.items()}
        rows.append((name, route(name), _word(app.status), ", ".join(f"{k} {v}" for k, v in sorted(states.items()))))
    return pa.table({key: pa.array([r[i] for r in rows], pa.string())
                     for i, key in enumerate(("function", "route", "status", "replicas"))})


def _word(state) -> str:
    """A Ray Serve status (a string enum) as its word, ``RUNNING``."""
    return str(getattr(state, "value", state))
