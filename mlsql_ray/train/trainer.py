"""``fit``, and its synchronous strategy: weight averaging on Ray actors, the seed's
parameter-server loop made correct.

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
is active (``mlsql_ray.cluster.warm``): the next run of the same shape starts on them at once.
"""

from __future__ import annotations

import time
from typing import Callable, Sequence

import numpy as np

from .. import progress
from .actors import Crew, TrainingError
from .async_ps import AsyncParameterServer
from .averaging import average
from .config import TrainConfig
from .data import Source
from .result import TrainResult
from .strategy import Strategy


def fit(model_fn: Callable, data: Sequence[Source], *, config: TrainConfig | None = None, **options) -> TrainResult:
    """Train ``model_fn()`` (a compiled Keras model) with one Ray actor per partition of ``data``:
    data servers (``ray_context.data_servers()``), Arrow tables or (x, y) pairs.

    The keywords are ``TrainConfig``'s fields, each documented there (``rounds``, ``batch_size``,
    ``scale``, ``one_hot``, ``validation``, ``checkpoints``, ``mode``, ...): users write them in
    their cells, so they stay keywords; ``config=`` passes a whole ``TrainConfig`` instead, and
    keywords given with it replace its values. ``mode`` picks the strategy: "sync" averages the
    workers' weights every round (``SyncAveraging``), "async" has them push their changes to
    parameter servers without waiting for each other (``AsyncParameterServer``).
    """
    import ray  # heavy: Ray

    config = TrainConfig.build(config, options)
    if not data:
        raise TrainingError("no training data: pass the data servers of a non-empty table")
    strategy = STRATEGIES[config.mode](config)
    started = time.monotonic()
    with strategy.crew(ray, model_fn, list(data)) as crew:
        return strategy.run(crew, started)


class SyncAveraging(Strategy):
    """Every round, every worker trains from the same weights and the driver averages theirs; each
    step is retried with fresh workers when some die."""

    def learning_rate_scale(self, workers: int) -> float:
        return workers if self.config.scale_learning_rate else 1

    def run(self, crew: Crew, started: float) -> TrainResult:
        config = self.config
        (ready, (weights, optimizer_state)), _ = crew.retrying("while starting", lambda: (
            crew.ready(), crew.call_worker(0, "get_weights", config.average_optimizer)))
        startup_seconds = time.monotonic() - started
        history: list[dict] = []
        first_round, saved = 1, config.checkpoints.latest() if config.resume else None
        if saved is not None:
            weights, history, first_round = saved["weights"], saved["history"], saved["round"] + 1
            optimizer_state = saved["optimizer_state"] if config.average_optimizer else optimizer_state
        progress.report("train_start", total_rounds=config.rounds, workers=len(crew.workers), actors=list(crew.workers),
                        first_round=first_round)
        for number in range(first_round, config.rounds + 1):
            entry, weights, optimizer_state = self._round(crew, number, weights, optimizer_state, started)
            if config.validation is not None:
                entry.update(_on_worker_0(crew, f"while evaluating round {number}", "evaluate", weights))
            if saved is not None and number == first_round:
                entry["resumed_from_checkpoint"] = saved["round"]
            history.append(entry)
            progress.report("train_round", total_rounds=config.rounds, **entry)
            if config.on_round is not None:
                config.on_round(entry)
            if config.checkpoints is not None and config.checkpoints.due(number, config.rounds):
                config.checkpoints.save(number, weights, optimizer_state, history)
            if config.early_stopping is not None and _should_stop(history, *config.early_stopping):
                entry["stopped_early"] = True
                break
        model_file = _on_worker_0(crew, "while saving the model", "model_file", weights)
        elapsed = time.monotonic() - started
        progress.report("train_end", history=history, elapsed=elapsed)
        return TrainResult(history, weights, model_file, len(crew.workers), elapsed, [r["read_s"] for r in ready],
                           startup_seconds)

    def _round(self, crew: Crew, number: int, weights, optimizer_state, started: float) -> tuple[dict, list, list | None]:
        """Everyone trains from ``weights``; returns the round's history entry and the averages."""
        weights_ref = crew.ray.put(weights)
        state_ref = crew.ray.put(optimizer_state) if optimizer_state is not None else None
        with_optimizer = self.config.average_optimizer

        def attempt():
            crew.call("set_weights", weights_ref, state_ref)
            metrics = crew.call("train_round", self.config.batch_size, self.config.steps_per_round)
            return metrics, crew.call("get_weights", with_optimizer)

        (metrics, states), retries = crew.retrying(f"in round {number}", attempt)
        counts = [m["samples"] for m in metrics]
        weights = average([s[0] for s in states], counts)
        if with_optimizer:
            optimizer_state = average([s[1] for s in states], counts)
        return _round_entry(number, metrics, counts, time.monotonic() - started, retries), weights, optimizer_state


STRATEGIES: dict[str, type[Strategy]] = {"sync": SyncAveraging, "async": AsyncParameterServer}


def _on_worker_0(crew: Crew, when: str, method: str, weights):
    """``method(weights)`` on worker 0 (it holds the validation data; any worker can save the model)."""
    ref = crew.ray.put(weights)
    return crew.retrying(when, lambda: crew.call_worker(0, method, ref))[0]


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
