"""Synchronous weight averaging on Ray actors: the seed's parameter-server loop, made correct.

    workers start from worker 0's weights
    repeat for each round:
        every worker trains on its own partition (an epoch, or N batches)
        the driver averages their weights (by sample count) and sends the average back

With k workers the learning rate is multiplied by k (``scale_learning_rate``): each worker sees
1/k of the data per round, and averaging k updates of size 1/k would otherwise make each round
worth 1/k of an epoch. A worker that dies, at start-up, in a round or while worker 0 evaluates
or saves, is replaced (it reloads its partition from its data server) and that step is retried
from the last average, up to ``max_failures`` deaths in all (see ``actors.Crew``); no actor
outlives ``fit``, except the workers of a run that ended well, which go to the warm pool when one
is active (``mlsql_ray.warm``): the next run of the same shape starts on them at once.
"""

from __future__ import annotations

import functools
import time
from typing import Callable, Sequence

import numpy as np

from .. import progress, warm
from ..raycluster import stop_actors
from .actors import Crew, TrainingError, starter
from .averaging import average
from .checkpoint import Checkpoints
from .data import Columns, Source
from .result import TrainResult
from .worker import Worker, straggler_factor


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
    for anything else). ``max_failures``: worker deaths survived in all (each dead worker is
    replaced and its step retried); one more ends in ``TrainingError`` naming the worker.

    ``mode="async"``: sharded parameter servers (``num_shards``) and workers that never wait for
    each other, each pushing the change of ``steps_per_push`` local steps; a change computed from
    weights more than ``max_staleness`` updates old is dropped (see ``async_ps``). The learning
    rate is not scaled: every push is applied whole. Pick it when workers run at uneven speeds
    or hold uneven partitions.
    """
    import ray

    if not data:
        raise TrainingError("no training data: pass the data servers of a non-empty table")
    if rounds < 1:
        raise TrainingError("rounds must be at least 1")
    if mode not in ("sync", "async"):
        raise TrainingError(f"mode must be \"sync\" or \"async\", not {mode!r}")
    prepare = prepare or Columns(features, label, scale, one_hot)
    threads = max(1, int(cpus_per_worker))
    if mode == "async":
        _check_resources(ray, len(data), cpus_per_worker, gpus_per_worker)
        if checkpoints is not None or validation is not None or early_stopping is not None:
            raise TrainingError("mode=\"async\" does not support checkpoints, validation or early stopping yet")
        from .async_ps import fit_async

        return fit_async(ray, model_fn, list(data), rounds=rounds, batch_size=batch_size, prepare=prepare,
                         threads=threads, cpus_per_worker=cpus_per_worker, learning_rate=learning_rate,
                         max_staleness=max_staleness, num_shards=num_shards, steps_per_push=steps_per_push,
                         max_failures=max_failures, on_round=on_round)
    actor_class = ray.remote(Worker).options(num_cpus=cpus_per_worker, num_gpus=gpus_per_worker, max_restarts=0)
    lr_scale = len(data) if scale_learning_rate else 1
    pool, shape = warm.current(), warm.Shape("train.Worker", cpus_per_worker, gpus_per_worker)
    started = time.monotonic()
    reused = pool.take(shape, len(data)) if pool is not None else []
    try:
        _check_resources(ray, len(data), cpus_per_worker, gpus_per_worker, len(data) - len(reused))
    except BaseException:
        stop_actors(ray, reused)
        raise

    start, setups = starter(reused, lambda: actor_class.remote(threads), lambda index: (
        index, model_fn, data[index], prepare, learning_rate, lr_scale, validation if index == 0 else None,
        straggler_factor(index)))
    with warm.released_on_interrupt(pool), Crew(ray, start, len(data), max_failures,
                                                  functools.partial(pool.keep, shape) if pool is not None else None) as crew:
        run = _Averaging(crew, started, batch_size, steps_per_round, average_optimizer)
        read_seconds, weights, optimizer_state = run.start(setups)
        startup_seconds = time.monotonic() - started
        history: list[dict] = []
        first_round, resumed_from = 1, None
        saved = checkpoints.latest() if (checkpoints is not None and resume) else None
        if saved is not None:
            weights, history = saved["weights"], saved["history"]
            optimizer_state = saved["optimizer_state"] if average_optimizer else optimizer_state
            first_round = resumed_from = saved["round"] + 1
        progress.report("train_start", total_rounds=rounds, workers=len(data), actors=list(crew.workers),
                        first_round=first_round)
        for round_number in range(first_round, rounds + 1):
            entry, weights, optimizer_state = run.round(round_number, weights, optimizer_state)
            if validation is not None:
                entry.update(run.evaluate(round_number, weights))
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
        model_file = run.model_file(weights)
        elapsed = time.monotonic() - started
        progress.report("train_end", history=history, elapsed=elapsed)
        return TrainResult(history, weights, model_file, len(data), elapsed, read_seconds, startup_seconds)


class _Averaging:
    """The steps of a synchronous run, each retried with fresh workers when some die."""

    def __init__(self, crew: Crew, started: float, batch_size: int, steps_per_round: int | None,
                 average_optimizer: bool):
        self.crew, self.ray, self.started = crew, crew.ray, started
        self.batch_size, self.steps_per_round, self.average_optimizer = batch_size, steps_per_round, average_optimizer

    def start(self, setups: dict[int, object]) -> tuple[list[float], list[np.ndarray], list[np.ndarray] | None]:
        """Every worker up with its data and model (``setups``: each worker's setup call, renewed
        when it is replaced): their read times, and worker 0's weights (and optimizer state) as
        everyone's common start."""
        crew = self.crew
        (ready, (weights, optimizer_state)), _ = crew.retrying(
            "while starting", lambda: (crew.gather(dict(setups)), crew.call_worker(0, "get_weights", self.average_optimizer)))
        return [r["read_s"] for r in ready], weights, optimizer_state

    def round(self, number: int, weights, optimizer_state) -> tuple[dict, list[np.ndarray], list | None]:
        """Everyone trains from ``weights``; returns the round's history entry and the averages."""
        crew = self.crew
        weights_ref = self.ray.put(weights)
        state_ref = self.ray.put(optimizer_state) if optimizer_state is not None else None

        def attempt():
            crew.call("set_weights", weights_ref, state_ref)
            metrics = crew.call("train_round", self.batch_size, self.steps_per_round)
            return metrics, crew.call("get_weights", self.average_optimizer)

        (metrics, states), retries = crew.retrying(f"in round {number}", attempt)
        counts = [m["samples"] for m in metrics]
        weights = average([s[0] for s in states], counts)
        if self.average_optimizer:
            optimizer_state = average([s[1] for s in states], counts)
        entry = _round_entry(number, metrics, counts, time.monotonic() - self.started, retries)
        return entry, weights, optimizer_state

    def evaluate(self, number: int, weights) -> dict:
        """Validation metrics of ``weights`` (worker 0 holds the validation data)."""
        ref = self.ray.put(weights)
        return self.crew.retrying(f"while evaluating round {number}", lambda: self.crew.call_worker(0, "evaluate", ref))[0]

    def model_file(self, weights) -> bytes:
        ref = self.ray.put(weights)
        return self.crew.retrying("while saving the model", lambda: self.crew.call_worker(0, "model_file", ref))[0]


def _should_stop(history: list[dict], metric: str, patience: int) -> bool:
    """True when ``metric`` has not improved for ``patience`` rounds."""
    if metric not in history[-1]:
        known = ", ".join(k for k, v in history[-1].items() if isinstance(v, float) and k != "elapsed")
        hint = " (pass validation= data to get val_ metrics)" if metric.startswith("val_") else ""
        raise TrainingError(f"early_stopping watches {metric!r} but rounds report {known}{hint}")
    values = [h[metric] for h in history if metric in h]
    best = int(np.argmin(values) if "loss" in metric else np.argmax(values))
    return len(values) - 1 - best >= patience


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


def _check_resources(ray, workers: int, cpus: float, gpus: float, fresh: int | None = None,
                     patience: float = 15) -> None:
    """Refuse up front what would otherwise wait forever for resources that never come: ``workers``
    actors must fit the cluster, and the ``fresh`` ones still to start (default: all) its free
    resources. Idle warm actors holding what is missing are let go (``warm.make_room``); resources
    held by actors just going away (a previous run, another session's pool) get ``patience``
    seconds, asked for as a placement group so that other processes' pools see the demand."""
    from ray.util import get_current_placement_group

    if get_current_placement_group() is not None:
        return  # inside a reservation made for us (a search trial): our resources are set aside
    total = ray.cluster_resources()
    bundle = {name: each for name, each in (("CPU", cpus), ("GPU", gpus)) if each > 0}
    for name, each in bundle.items():
        needed = workers * each
        if needed > total.get(name, 0):
            raise TrainingError(f"{workers} workers x {each} {name} = {needed:g} {name}s, but the Ray cluster has "
                                f"{total.get(name, 0):g}; use fewer partitions (num_partitions) or fewer {name}s per worker")
    starting = workers if fresh is None else fresh
    if not bundle or not starting:
        return
    warm.make_room(ray, starting * cpus, starting * gpus)
    free = ray.available_resources()
    short = {n: starting * e for n, e in bundle.items() if free.get(n, 0) + 1e-9 < starting * e}
    if short and not _reserve_briefly(ray, bundle, starting, patience):
        free = ray.available_resources()
        name, needed = next(iter(short.items()))
        raise TrainingError(f"{workers} workers need {needed:g} more {name}s but only {free.get(name, 0):g} are free "
                            f"(other tasks or actors hold the rest); they would wait forever")


def _reserve_briefly(ray, bundle: dict, count: int, patience: float) -> bool:
    """Whether ``count`` bundles became free within ``patience`` seconds (reserved, then let go
    for the actors about to start)."""
    from ray.util.placement_group import placement_group, remove_placement_group

    group = placement_group([dict(bundle) for _ in range(count)])
    try:
        return group.wait(timeout_seconds=patience)
    finally:
        remove_placement_group(group)
