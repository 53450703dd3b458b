"""Model tables as SQL functions: ``register tf.`db.model` as f;`` then ``select f(image) ...``.

Each registered function owns a few Ray actors that load the model once, when it is
registered; when it goes (``unregister``, or the end of a ``predict``), its actors go to the
session's warm pool (``mlsql_ray.cluster.warm``), TensorFlow still imported, for the next one. DuckDB hands the function whole Arrow vectors; the function cuts them into batches,
spreads the batches over its actors and returns one Arrow column: no per-row model loading and
no per-row Python call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from fractions import Fraction

import pyarrow as pa
import pyarrow.compute as pc

from ..arrays import matrix
from ..cluster.link import remote_error_line, stop_actors
from ..cluster.warm import Shape, WarmActor, WarmPool
from ..errors import MLSQLError
from ..models import model_file, model_from_rows, refuse_python_code
from ..train.worker import configure_tensorflow
from .functions import SQLFunction
from ..options import flag, integer

#: what a model function returns, by its ``output`` option: (Arrow type, DuckDB type); each
#: predictor class answers some of them (``outputs``, its default first)
OUTPUT_TYPES = {"probabilities": (pa.list_(pa.float32()), "FLOAT[]"), "argmax": (pa.int64(), "BIGINT"),
                "prediction": (pa.float64(), "DOUBLE"), "probability": (pa.list_(pa.float64()), "DOUBLE[]")}


class Predictor(WarmActor):
    """A Ray actor holding one loaded Keras model. The algorithms' (``ml.predictor``) is another
    class with the same methods and its ``outputs``."""

    outputs = ("probabilities", "argmax")

    def __init__(self, threads: int):
        configure_tensorflow(threads)
        self.model = None

    def load(self, rows, unsafe: bool) -> int | None:
        """Load the model from its rows; returns ``input_width()``."""
        self.forget()
        self.model = model_from_rows(rows, unsafe=unsafe)
        return self.input_width()

    def forget(self) -> None:
        """Drop the model (the actor waits in a warm pool for the next one)."""
        import keras  # heavy: TensorFlow

        self.model = None
        keras.backend.clear_session(free_memory=False)  # no gc.collect(): seconds on a busy machine

    def input_width(self) -> int | None:
        """Values per input row the model takes (None when its input is not a flat vector)."""
        shape = tuple(self.model.inputs[0].shape)
        return int(shape[1]) if len(shape) == 2 and shape[1] is not None else None

    def predict(self, column: pa.Array, scale: float | None, output: str, batch_size: int) -> pa.Array:
        x = matrix(column)
        if scale is not None:
            x *= scale
        scores = self.model.predict(x, batch_size=batch_size, verbose=0)
        if output == "argmax":
            return pa.array(scores.argmax(axis=1).astype("int64"))
        flat = pa.array(scores.astype("float32").reshape(-1))
        return pa.ListArray.from_arrays(pa.array(range(0, flat.__len__() + 1, scores.shape[1]), pa.int32()), flat)


def parse_scale(text: str | None) -> float | None:
    """``scale="1/255"`` or ``scale="0.0039"``: the factor applied to inputs before predicting."""
    if text is None:
        return None
    try:
        return float(Fraction(text.strip()))
    except (ValueError, ZeroDivisionError) as exc:
        raise MLSQLError(f"scale must be a number or a fraction like 1/255, not {text!r}") from exc


@dataclass(frozen=True)
class Calls:
    """How a loaded model's predictor is called, from ``register``'s options: ``output`` (one of
    the predictor class's ``outputs``, its first by default), ``scale``, ``batchSize``, and
    ``unsafe`` (a Keras model's Python code allowed to load)."""

    output: str
    scale: float | None
    batch_size: int
    unsafe: bool

    @classmethod
    def of(cls, options: dict, predictor: type) -> "Calls":
        outputs = predictor.outputs
        output = options.get("output", outputs[0])
        if output not in outputs:
            raise MLSQLError(f"output must be one of {', '.join(outputs)}, not {output!r}")
        return cls(output, parse_scale(options.get("scale")), integer(options, "batchSize", 1024, minimum=1),
                   flag(options, "unsafe", False))


@dataclass
class ModelFunction(SQLFunction):
    """A model table loaded into actors and callable on Arrow columns (DuckDB's UDF)."""

    name: str
    table: str
    version: int
    actors: list
    width: int | None
    scale: float | None = None
    output: str = "probabilities"
    batch_size: int = 1024
    argument: str = field(default="input")  # how the call was written, for error messages
    pool: WarmPool | None = field(default=None, repr=False)  # where the actors go when the function does
    shape: Shape | None = field(default=None, repr=False)
    #: the actors' predictor class and the model's rows (a Ray object), when the class can load
    #: the model in the calling process too (``nearby``)
    predictor: type | None = field(default=None, repr=False)
    rows_ref: object = field(default=None, repr=False)

    @classmethod
    def start(cls, name: str, table: str, version: int, rows: pa.Table, options: dict, cpus: int,
              predictor: type = Predictor, pool: WarmPool | None = None) -> "ModelFunction":
        """Take ``predictor`` actors from ``pool`` (or start them); wait until each has the model.

        One per node in turn on a cluster of several; none is left running when loading fails. A Keras
        model carrying Python code is refused here, before any actor starts, unless ``unsafe="true"``."""
        import ray  # heavy: Ray

        calls = Calls.of(options, predictor)
        workers = integer(options, "workers", max(1, min(2, cpus)), minimum=1)
        unsafe = calls.unsafe
        row_list = rows.to_pylist()
        if predictor is Predictor:
            what = f"the rows of {table} version {version}"
            with model_file(row_list, what) as path:
                refuse_python_code(path, what, unsafe)
        rows_ref = ray.put(row_list)
        threads = max(1, cpus // workers)
        shape = Shape(f"{predictor.__module__}.{predictor.__qualname__}/{threads} threads")
        nodes = placement(ray, workers)
        reused = pool.take_on(shape, nodes) if pool is not None else [None] * workers
        try:
            actors, widths = start_predictors(ray, predictor, threads, nodes, reused, rows_ref, unsafe)
        except Exception as exc:  # noqa: BLE001 - any load failure is reported the same way
            raise MLSQLError(f"cannot load the model in {table} version {version}: {remote_error_line(exc)}") from None
        loads_here = hasattr(predictor, "here")
        return cls(name, table, version, actors, widths[0], calls.scale, calls.output, calls.batch_size,
                   pool=None if unsafe else pool, shape=shape,  # code from a table ran in them: not reused
                   predictor=predictor if loads_here else None, rows_ref=rows_ref if loads_here else None)

    def __call__(self, column: pa.Array) -> pa.Array:
        import ray  # heavy: Ray

        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        check_shape(column, self.width, f"{self.name}({self.argument})")
        pieces = [column.slice(i, self.batch_size) for i in range(0, len(column), self.batch_size)]
        refs = [self.actors[i % len(self.actors)].predict.remote(p, self.scale, self.output, self.batch_size)
                for i, p in enumerate(pieces)]
        results = ray.get(refs)
        return pa.concat_arrays(results) if results else pa.array([], self.arrow_type)

    def nearby(self) -> Callable[[pa.Array], pa.Array]:
        """It called in this process, the model loaded here (each call of ``nearby`` loads it
        anew: keep what it returns), when its predictor class can (``here``: a scikit-learn,
        XGBoost or ALS model, never Keras); else itself, on its actors. A server's
        ``/model/predict`` of one row then costs the model's prediction, not an actor's round trip."""
        import ray  # heavy: Ray

        here = self.predictor.here(ray.get(self.rows_ref)) if self.predictor is not None else None
        if here is None:
            return self

        # not a method: what it returns must not keep the function (and its actors) alive
        width, call_text, scale, output, batch_size = (self.width, f"{self.name}({self.argument})", self.scale,
                                                        self.output, self.batch_size)

        def call(column: pa.Array) -> pa.Array:
            if isinstance(column, pa.ChunkedArray):
                column = column.combine_chunks()
            check_shape(column, width, call_text)
            return here.predict(column, scale, output, batch_size)

        return call

    def for_workers(self) -> "ModelFunction":
        """The same actors, without the session's warm pool (which stays in the session's process)."""
        return replace(self, pool=None, shape=None, predictor=None, rows_ref=None)

    @property
    def arrow_type(self) -> pa.DataType:
        return OUTPUT_TYPES[self.output][0]

    @property
    def duckdb_type(self) -> str:
        return OUTPUT_TYPES[self.output][1]

    def close(self) -> None:
        """Hand the actors to the pool, model dropped (or stop them, without one)."""
        import ray  # heavy: Ray

        actors, self.actors = self.actors, []
        if self.pool is None:
            stop_actors(ray, actors)
            return
        self.pool.keep(self.shape, actors)


def check_shape(column: pa.Array, width: int | None, call: str) -> None:
    """A model's input column is a list of numbers per row, ``width`` of them when it is known
    (``call``: how the call was written, e.g. ``f(features)``, for the error)."""
    if not (pa.types.is_list(column.type) or pa.types.is_large_list(column.type) or pa.types.is_fixed_size_list(column.type)):
        raise ValueError(f"{call}: the model takes a list of numbers per row, not {column.type}")
    if width is None or len(column) == 0:
        return
    lengths = pc.list_value_length(column)
    if pc.any(pc.not_equal(lengths, width)).as_py():
        seen = pc.min_max(lengths).as_py()
        got = seen["min"] if seen["min"] == seen["max"] else f"{seen['min']} to {seen['max']}"
        raise ValueError(f"{call}: the model takes rows of {width} values, got rows of {got}")


def placement(ray, count: int) -> list[str | None]:
    """The node each of ``count`` actors goes to: node i mod N of the cluster's live nodes with
    CPUs, or None (anywhere) on a one-node cluster. Actors that ask for no CPU cannot be left to
    Ray: it puts a zero-resource actor on a random node whatever its strategy ("SPREAD", soft node
    affinity), except under hard node affinity."""
    nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU")]
    if len(nodes) < 2:
        return [None] * count
    return [nodes[i % len(nodes)] for i in range(count)]


def start_predictors(ray, predictor: type, threads: int, nodes: list[str | None], reused: list, rows_ref,
                     unsafe: bool) -> tuple[list, list[int | None]]:
    """One ``predictor`` actor per entry of ``nodes`` (a node id; None: anywhere) with the model of
    ``rows_ref`` loaded: the one of ``reused`` in its place, else a fresh one pinned to that node.
    Returns (actors, their input widths); if any load fails, stops them all and raises. A fresh
    actor whose node died after ``placement`` listed it fails at once as unschedulable (hard
    affinity does not move it): a replacement goes wherever Ray puts it, on a live node."""
    from ray.exceptions import ActorUnschedulableError  # heavy: Ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    actor_class = ray.remote(predictor)

    def new_actor(node: str | None):
        strategy = "DEFAULT" if node is None else NodeAffinitySchedulingStrategy(node, soft=False)
        return actor_class.options(num_cpus=0, max_restarts=0, scheduling_strategy=strategy).remote(threads)

    actors = [actor if actor is not None else new_actor(node) for actor, node in zip(reused, nodes)]
    refs = [actor.load.remote(rows_ref, unsafe) for actor in actors]
    widths = []
    try:
        for index, ref in enumerate(refs):
            try:
                widths.append(ray.get(ref))
            except ActorUnschedulableError:
                actors[index] = new_actor(None)
                widths.append(ray.get(actors[index].load.remote(rows_ref, unsafe)))
    except BaseException:
        stop_actors(ray, actors)
        raise
    return actors, widths
