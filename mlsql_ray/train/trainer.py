"""Synchronous weight averaging on Ray actors: the seed's parameter-server loop, made correct.

    workers start from worker 0's weights
    repeat for each round:
        every worker trains on its own partition (an epoch, or N batches)
        the driver averages their weights (by sample count) and sends the average back

With k workers the learning rate is multiplied by k (``scale_learning_rate``): each worker sees
1/k of the data per round, and averaging k updates of size 1/k would otherwise make each round
worth 1/k of an epoch. A worker that dies is replaced, reloads its partition from its data
server, and the round is retried from the last average; no actor outlives ``fit``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from .. import progress, ray_internals
from ..errors import MLSQLError
from ..raycluster import remote_error_line
from .averaging import average
from .checkpoint import Checkpoints
from .data import Columns, Source
from .worker import Worker


TRAIN_METADATA_KEY = "mlsql.train"


class TrainingError(MLSQLError):
    """Training could not finish; the message names the worker and the cause."""


@dataclass
class TrainResult:
    """What ``fit`` returns: the per-round history, the final weights and the model file."""

    history: list[dict]
    weights: list[np.ndarray]
    model_file: bytes  # a Keras 3 .keras file with the averaged weights
    workers: int
    elapsed: float
    read_seconds: list[float] = field(default_factory=list)  # per worker: its partition → numpy
    startup_seconds: float = 0.0  # from the call until every worker held its data and model
    _model: object = field(default=None, repr=False)

    @property
    def model(self):
        """The trained Keras model, loaded in this process on first use."""
        if self._model is None:
            from ..models import model_from_bytes

            self._model = model_from_bytes(self.model_file)
        return self._model

    def model_rows(self) -> list[dict]:
        """The model as ``schema=file`` rows, ready for ``ray_context.build_result``."""
        from ..models import rows_from_model_file

        return rows_from_model_file(self.model_file)

    def model_table(self):
        """The model rows as an Arrow table that also carries ``summary()`` as schema metadata;
        saving it to Delta stores the training metrics with that table version."""
        import json

        import pyarrow as pa

        from ..storage.rows import FILE_SCHEMA

        schema = FILE_SCHEMA.with_metadata({TRAIN_METADATA_KEY: json.dumps(self.summary())})
        return pa.Table.from_pylist(self.model_rows(), schema=schema)

    def summary(self) -> dict[str, str]:
        """Final metrics as strings, e.g. for Delta commit metadata."""
        last = self.history[-1] if self.history else {}
        facts = {"rounds": len(self.history), "workers": self.workers, "elapsed_s": round(self.elapsed, 1)}
        facts.update({k: round(v, 4) for k, v in last.items() if isinstance(v, float) and k != "elapsed"})
        return {k: str(v) for k, v in facts.items()}


def fit(
    model_fn: Callable,
    data: Sequence[Source],
    *,
    rounds: int = 1,
    steps_per_round: int | None = None,
    batch_size: int = 32,
    prepare: Callable | None = None,
    features: str | Sequence[str] = "image",
    label: str = "label",
    scale: float | None = None,
    one_hot: int | None = None,
    validation: Source | None = None,
    learning_rate: float | None = None,
    scale_learning_rate: bool = True,
    average_optimizer: bool = False,
    cpus_per_worker: float = 1,
    gpus_per_worker: float = 0,
    max_failures: int = 3,
    on_round: Callable[[dict], None] | None = None,
    checkpoints: Checkpoints | None = None,
    resume: bool = False,
    early_stopping: tuple[str, int] | None = None,
    mode: str = "sync",
    max_staleness: int = 4,
    num_shards: int = 2,
    steps_per_push: int = 8,
    slowdown: dict[int, float] | None = None,
) -> TrainResult:
    """Train ``model_fn()`` (a compiled Keras model) with one Ray actor per partition of ``data``.

    ``data``: data servers (``ray_context.data_servers()``), Arrow tables or (x, y) pairs.
    Arrow partitions become (x, y) by ``prepare(table)``, by default the ``features`` list
    column as a float32 matrix times ``scale`` and the ``label`` column (one-hot with
    ``one_hot`` classes). ``rounds`` rounds of an epoch each, or ``steps_per_round`` batches.
    ``learning_rate`` replaces the compiled optimizer's rate (before scaling by the number of
    workers, which ``scale_learning_rate=False`` turns off). ``validation``: evaluated on the averaged model after each round (a source, or a list of
    data servers). ``checkpoints``: save the averaged state after every k rounds; with
    ``resume=True`` a run continues after its last checkpoint. ``early_stopping=("val_loss", 2)``
    stops when that metric has not improved for 2 rounds (lower is better for losses, higher
    for anything else).

    ``mode="async"``: sharded parameter servers (``num_shards``) and workers that never wait for
    each other, each pushing the change of ``steps_per_push`` local steps; a change computed from
    weights more than ``max_staleness`` updates old is dropped (see ``async_ps``). The learning
    rate is not scaled: every push is applied whole.
    Pick it when workers run at uneven speeds or hold uneven partitions. ``slowdown={1: 3.0}``
    makes worker 1 three times slower, to see that for yourself.
    """
    import ray

    if not data:
        raise TrainingError("no training data: pass the data servers of a non-empty table")
    if rounds < 1:
        raise TrainingError("rounds must be at least 1")
    prepare = prepare or Columns(features, label, scale, one_hot)
    _check_resources(ray, len(data), cpus_per_worker, gpus_per_worker)
    threads = max(1, int(cpus_per_worker))
    if mode == "async":
        if checkpoints is not None or validation is not None or early_stopping is not None:
            raise TrainingError("mode=\"async\" does not support checkpoints, validation or early stopping yet")
        from .async_ps import fit_async

        return fit_async(ray, model_fn, list(data), rounds=rounds, batch_size=batch_size, prepare=prepare,
                         threads=threads, cpus_per_worker=cpus_per_worker, learning_rate=learning_rate,
                         max_staleness=max_staleness, num_shards=num_shards, steps_per_push=steps_per_push,
                         slowdown=slowdown, on_round=on_round, stop_actors=_stop)
    if mode != "sync":
        raise TrainingError(f"mode must be \"sync\" or \"async\", not {mode!r}")
    actor_class = ray.remote(Worker).options(num_cpus=cpus_per_worker, num_gpus=gpus_per_worker, max_restarts=0)
    slowdown = slowdown or {}

    def start(index: int):
        return actor_class.remote(index, model_fn, data[index], prepare, threads,
                                  validation if index == 0 else None, slowdown.get(index, 1.0))

    started = time.monotonic()
    workers = [start(i) for i in range(len(data))]
    everyone = list(workers)  # every actor ever started, so that all of them are killed at the end
    failures = 0
    try:
        read_seconds = [w["read_s"] for w in _gather(ray, [w.ready.remote() for w in workers], "starting")]
        startup_seconds = time.monotonic() - started
        lr_scale = len(workers) if scale_learning_rate else 1
        _gather(ray, [w.set_learning_rate.remote(learning_rate, lr_scale) for w in workers], "setting the learning rate")
        weights, optimizer_state = ray.get(workers[0].get_weights.remote(average_optimizer))
        history: list[dict] = []
        first_round, resumed_from = 1, None
        saved = checkpoints.latest() if (checkpoints is not None and resume) else None
        if saved is not None:
            weights, history = saved["weights"], saved["history"]
            optimizer_state = saved["optimizer_state"] if average_optimizer else optimizer_state
            first_round = resumed_from = saved["round"] + 1
        progress.report("train_start", total_rounds=rounds, workers=len(workers), actors=list(workers),
                        first_round=first_round)
        for round_number in range(first_round, rounds + 1):
            weights_ref = ray.put(weights)
            state_ref = ray.put(optimizer_state) if optimizer_state is not None else None
            retries = 0
            while True:
                try:
                    _gather(ray, [w.set_weights.remote(weights_ref, state_ref) for w in workers], "receiving weights")
                    metrics = _gather(ray, [w.train_round.remote(batch_size, steps_per_round) for w in workers],
                                      f"round {round_number}")
                    states = _gather(ray, [w.get_weights.remote(average_optimizer) for w in workers], "sending weights")
                    break
                except _WorkersDied as died:
                    failures += len(died.indexes)
                    if failures > max_failures:
                        index, cause = next(iter(died.indexes.items()))
                        raise TrainingError(f"training worker {index} died in round {round_number} ({cause}); "
                                            f"{failures} failures is more than max_failures={max_failures}") from None
                    for index in died.indexes:
                        workers[index] = start(index)
                        everyone.append(workers[index])
                    _gather(ray, [w.ready.remote() for w in workers], "restarting")
                    _gather(ray, [w.set_learning_rate.remote(learning_rate, lr_scale) for w in workers], "setting the learning rate")
                    retries += 1
            counts = [m["samples"] for m in metrics]
            weights = average([s[0] for s in states], counts)
            if average_optimizer:
                optimizer_state = average([s[1] for s in states], counts)
            entry = _round_entry(round_number, metrics, counts, time.monotonic() - started, retries)
            if validation is not None:
                ray.get(workers[0].set_weights.remote(ray.put(weights), None))
                entry.update(ray.get(workers[0].evaluate.remote()))
            if round_number == resumed_from:
                entry["resumed_from_checkpoint"] = resumed_from - 1
            history.append(entry)
            progress.report("train_round", total_rounds=rounds, **entry)
            if on_round is not None:
                on_round(entry)
            if checkpoints is not None and checkpoints.due(round_number, rounds):
                checkpoints.save(round_number, weights, optimizer_state, history)
            if early_stopping is not None and _should_stop(history, *early_stopping):
                entry["stopped_early"] = True
                break
        ray.get(workers[0].set_weights.remote(ray.put(weights), None))
        model_file = ray.get(workers[0].model_file.remote())
        elapsed = time.monotonic() - started
        progress.report("train_end", history=history, elapsed=elapsed)
        return TrainResult(history, weights, model_file, len(workers), elapsed, read_seconds, startup_seconds)
    finally:
        _stop(ray, everyone)


def _should_stop(history: list[dict], metric: str, patience: int) -> bool:
    """True when ``metric`` has not improved for ``patience`` rounds."""
    if metric not in history[-1]:
        known = ", ".join(k for k, v in history[-1].items() if isinstance(v, float) and k != "elapsed")
        hint = " (pass validation= data to get val_ metrics)" if metric.startswith("val_") else ""
        raise TrainingError(f"early_stopping watches {metric!r} but rounds report {known}{hint}")
    values = [h[metric] for h in history if metric in h]
    best = int(np.argmin(values) if "loss" in metric else np.argmax(values))
    return len(values) - 1 - best >= patience


class _WorkersDied(Exception):
    def __init__(self, indexes: dict[int, str]):
        super().__init__(indexes)
        self.indexes = indexes


def _gather(ray, refs: list, what: str) -> list:
    """Results of one call per worker; dead workers are collected (to be replaced), and a
    worker whose own code failed stops training with its error."""
    results, died = [None] * len(refs), {}
    for index, ref in enumerate(refs):
        try:
            results[index] = ray.get(ref)
        except ray.exceptions.RayActorError as exc:
            if "creation task" in str(exc):  # its __init__ raised: a bug to report, not a death to retry
                raise TrainingError(f"training worker {index} failed while {what}: {remote_error_line(exc)}") from None
            died[index] = _first_line(exc)
        except ray.exceptions.RayTaskError as exc:
            raise TrainingError(f"training worker {index} failed while {what}: {_first_line(exc.cause or exc)}") from None
    if died:
        raise _WorkersDied(died)
    return results


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _round_entry(number: int, metrics: list[dict], counts: list[int], elapsed: float, retries: int) -> dict:
    total = sum(counts)
    keys = [k for k in metrics[0] if k != "samples"]
    entry: dict = {"round": number}
    for key in keys:
        entry[key] = float(sum(m[key] * c for m, c in zip(metrics, counts)) / total)
    entry["elapsed"] = elapsed
    entry["retries"] = retries
    entry["workers"] = [{"worker": i, **m} for i, m in enumerate(metrics)]
    return entry


def _check_resources(ray, workers: int, cpus: float, gpus: float, patience: float = 15) -> None:
    """Refuse up front what would otherwise wait forever for resources that never come. Resources
    still held by actors that are just going away (a previous run) get ``patience`` seconds."""
    from ray.util import get_current_placement_group

    if get_current_placement_group() is not None:
        return  # inside a reservation made for us (a search trial): our resources are set aside
    total = ray.cluster_resources()
    deadline = time.monotonic() + patience
    for name, each in (("CPU", cpus), ("GPU", gpus)):
        if each <= 0:
            continue
        needed = workers * each
        if needed > total.get(name, 0):
            raise TrainingError(f"{workers} workers x {each} {name} = {needed:g} {name}s, but the Ray cluster has "
                                f"{total.get(name, 0):g}; use fewer partitions (num_partitions) or fewer {name}s per worker")
        while (free := ray.available_resources().get(name, 0)) + 1e-9 < needed:
            if time.monotonic() > deadline:
                raise TrainingError(f"{workers} workers need {needed:g} {name}s but only {free:g} are free "
                                    f"(other tasks or actors hold the rest); they would wait forever")
            time.sleep(0.2)


def _stop(ray, actors: list) -> None:
    """Kill every actor and wait until Ray reports them dead, so none outlives the call."""
    for actor in actors:
        try:
            ray.kill(actor, no_restart=True)
        except Exception:  # noqa: BLE001 - already gone
            pass
    ids = {ray_internals.actor_id(a) for a in actors}
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        alive = [i for i in ids if ray_internals.actor_states(i).get("State") != "DEAD"]
        if not alive:
            return
        time.sleep(0.1)
