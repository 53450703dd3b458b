"""Hyperparameter search: Ray Tune trials, each a weight-averaging ``fit``, stopped early by ASHA.

    table, best = search(create_model, servers, {"learning_rate": [0.01, 0.05], "batch_size": [64, 128]},
                         rounds=7, validation=test_table, metric="val_accuracy")

The trials are sized to the cluster before anything starts: a trial holds no CPU itself, its
workers hold ``workers x cpus_per_worker``, and only as many trials run at once as the cluster's
CPUs allow. A search that cannot fit even one trial is refused with the numbers.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import pyarrow as pa

from ..models import rows_from_model_file
from ..errors import first_line
from .actors import TrainingError
from .config import TrainConfig
from .trainer import fit

SEARCHABLE = ("learning_rate", "batch_size", "rounds", "workers", "steps_per_round")


@dataclass
class SearchResult:
    table: pa.Table  # one row per trial: its settings, final metrics, rounds run and status
    best_config: dict
    best_metrics: dict
    best_model_file: bytes

    def best_model_rows(self) -> list[dict]:
        return rows_from_model_file(self.best_model_file)


def _grid(space: dict[str, Sequence]) -> list[dict]:
    for key in space:
        if key not in SEARCHABLE:
            raise TrainingError(f"cannot search over {key!r}; searchable settings: {', '.join(SEARCHABLE)}")
    keys = list(space)
    return [dict(zip(keys, values)) for values in itertools.product(*(space[k] for k in keys))]


def search(model_fn: Callable, data: Sequence, space: dict[str, Sequence], *, rounds: int = 5,
           metric: str = "val_accuracy", mode: str = "max", num_samples: int | None = None,
           grace_period: int = 1, cpus_per_worker: float = 1, **fit_options) -> SearchResult:
    """Try every combination in ``space`` (a grid; ``num_samples`` caps how many), each trial a
    ``fit`` with ``rounds`` rounds reporting ``metric`` after each round to ASHA. Other keywords are
    ``fit``'s (``TrainConfig``'s fields), checked before any trial starts."""
    import ray  # heavy: Ray
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler

    base = TrainConfig.build(None, {"rounds": rounds, "cpus_per_worker": cpus_per_worker, **fit_options})
    configs = _grid(space)[: num_samples or None]
    max_workers = max(min(int(c.get("workers", len(data))), len(data)) for c in configs)
    cluster_cpus = ray.cluster_resources().get("CPU", 0)
    per_trial = max_workers * cpus_per_worker
    if per_trial > cluster_cpus:
        raise TrainingError(f"a trial needs {max_workers} workers x {cpus_per_worker} CPU = {per_trial:g} CPUs "
                            f"but the cluster has {cluster_cpus:g}; search over fewer workers")
    concurrent = max(1, int(cluster_cpus // per_trial))
    data_ref = ray.put(list(data))

    def trial(config: dict) -> None:
        import ray as trial_ray  # heavy: Ray

        from ray import tune as trial_tune

        settings = dict(config["setting"])
        workers = int(settings.pop("workers", len(data)))
        partitions = trial_ray.get(data_ref)[:workers]
        trial_rounds = int(settings.pop("rounds", rounds))
        result = fit(model_fn, partitions, config=base, rounds=trial_rounds,
                     on_round=lambda e: None if e["round"] == trial_rounds else trial_tune.report(_numbers(e)), **settings)
        with tempfile.TemporaryDirectory() as tmp:
            Path(tmp, "model.keras").write_bytes(result.model_file)
            trial_tune.report(_numbers(result.history[-1]), checkpoint=trial_tune.Checkpoint.from_directory(tmp))

    storage = tempfile.mkdtemp(prefix="mlsql-search-")
    tuner = tune.Tuner(
        # the trial itself holds no CPU; its workers' CPUs are reserved with it, as bundles
        # that the workers it starts are placed in (Tune captures a trial's child actors)
        tune.with_resources(trial, tune.PlacementGroupFactory([{"memory": 2**20}] + [{"CPU": cpus_per_worker}] * max_workers)),
        param_space={"setting": tune.grid_search(configs)},  # each trial: one combination
        tune_config=tune.TuneConfig(metric=metric, mode=mode, num_samples=1, max_concurrent_trials=concurrent,
                                    scheduler=ASHAScheduler(max_t=rounds, grace_period=grace_period)),
        run_config=tune.RunConfig(storage_path=storage, name="search", verbose=0),
    )
    grid = tuner.fit()
    rows = []
    for result in grid:
        config = dict(result.config["setting"])
        metrics = result.metrics or {}
        done = int(metrics.get("round", 0) or 0)
        status = "error" if result.error else ("stopped early" if done < int(config.get("rounds", rounds)) else "finished")
        rows.append({**{k: config.get(k) for k in space}, metric: metrics.get(metric), "loss": metrics.get("loss"),
                     "rounds_run": done, "status": status, "error": first_line(result.error) if result.error else None})
    best_result = grid.get_best_result(metric=metric, mode=mode, scope="last")
    if best_result is None or best_result.checkpoint is None:
        raise TrainingError(f"no trial finished with a {metric} to compare (errors: "
                            f"{'; '.join(r['error'] for r in rows if r['error']) or 'none'})")
    with best_result.checkpoint.as_directory() as folder:
        best_model = Path(folder, "model.keras").read_bytes()
    shutil.rmtree(storage, ignore_errors=True)
    return SearchResult(pa.Table.from_pylist(rows), dict(best_result.config["setting"]), dict(best_result.metrics), best_model)


def _numbers(entry: dict) -> dict:
    return {k: v for k, v in entry.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
