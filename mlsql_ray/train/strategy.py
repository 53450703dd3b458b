"""How a run's workers train together, behind one interface.

``fit`` checks its config, then hands the run to the strategy its ``mode`` names: synchronous
weight averaging (``trainer.SyncAveraging``) or asynchronous parameter servers
(``async_ps.AsyncParameterServer``). What both need first is here: one worker actor per
partition, taken from the warm pool when one is active, the rest started only once the cluster is
known to have room for them (a request Ray cannot meet would otherwise wait forever).
"""

from __future__ import annotations

import abc
import contextlib
import functools
from typing import ClassVar, Iterator, Sequence

from ..cluster import warm
from ..cluster.link import stop_actors
from .actors import Crew, TrainingError
from .config import TrainConfig
from .data import Source
from .result import TrainResult
from .worker import Worker


class Strategy(abc.ABC):
    """One mode of training: ``run`` trains the workers of a ``Crew`` (each already sent its setup)
    and returns the result. A subclass names its actor class and how it scales the learning rate."""

    worker_class: ClassVar[type[Worker]] = Worker

    def __init__(self, config: TrainConfig):
        self.config = config
        self.actor_class = config.worker_class or self.worker_class
        if not (isinstance(self.actor_class, type) and issubclass(self.actor_class, self.worker_class)):
            raise TrainingError(f"worker_class must be a subclass of {self.worker_class.__module__}."
                                f"{self.worker_class.__qualname__} for mode={config.mode!r}, not {self.actor_class!r}")

    def learning_rate_scale(self, workers: int) -> float:
        """What the workers multiply the learning rate by."""
        return 1

    @abc.abstractmethod
    def run(self, crew: Crew, started: float) -> TrainResult:
        """Train (``started``: when ``fit`` was called, for the start-up and elapsed times)."""

    @contextlib.contextmanager
    def crew(self, ray, model_fn, data: Sequence[Source]) -> Iterator[Crew]:
        """The run's workers, each sent its setup (its partition, the model, the learning rate;
        worker 0 the validation data too); handed to the warm pool when the block ends well."""
        config, workers = self.config, len(data)
        pool = warm.current()
        shape = worker_shape(self.actor_class, config.cpus_per_worker, config.gpus_per_worker)
        reused = pool.take(shape, workers) if pool is not None else []
        try:
            check_resources(ray, workers, config.cpus_per_worker, config.gpus_per_worker, workers - len(reused))
        except BaseException:
            stop_actors(ray, reused)
            raise
        actor = ray.remote(self.actor_class).options(num_cpus=config.cpus_per_worker,
                                                     num_gpus=config.gpus_per_worker, max_restarts=0)
        scale = self.learning_rate_scale(workers)

        def setup_args(index: int) -> tuple:
            return (index, model_fn, data[index], config.preparer, config.learning_rate, scale,
                    config.validation if index == 0 else None)

        keep = functools.partial(pool.keep, shape) if pool is not None else None
        with warm.released_on_interrupt(pool), Crew(ray, lambda: actor.remote(config.threads), setup_args, workers,
                                                      config.max_failures, reused, keep) as crew:
            yield crew


def worker_shape(actor_class: type, cpus: float, gpus: float) -> warm.Shape:
    """What a warm pool files a training worker under (``engine.prestart`` starts some ahead)."""
    return warm.Shape(f"{actor_class.__module__}.{actor_class.__qualname__}", cpus, gpus)


def check_resources(ray, workers: int, cpus: float, gpus: float, fresh: int, patience: float = 15) -> None:
    """Refuse up front what would otherwise wait forever for resources that never come: ``workers``
    actors must fit the cluster, and the ``fresh`` ones still to start (not taken warm) its free
    resources. Idle warm actors holding what is missing are let go (``warm.make_room``); resources
    held by actors just going away (a previous run, another session's pool) get ``patience``
    seconds, asked for as a placement group so that other processes' pools see the demand."""
    from ray.util import get_current_placement_group  # heavy: Ray

    if get_current_placement_group() is not None:
        return  # inside a reservation made for us (a search trial): our resources are set aside
    total = ray.cluster_resources()
    bundle = {name: each for name, each in (("CPU", cpus), ("GPU", gpus)) if each > 0}
    for name, each in bundle.items():
        needed = workers * each
        if needed > total.get(name, 0):
            raise TrainingError(f"{workers} workers x {each} {name} = {needed:g} {name}s, but the Ray cluster has "
                                f"{total.get(name, 0):g}; use fewer partitions (num_partitions) or fewer {name}s per worker")
    if not bundle or not fresh:
        return
    warm.make_room(ray, fresh * cpus, fresh * gpus)
    free = ray.available_resources()
    short = {n: fresh * e for n, e in bundle.items() if free.get(n, 0) + 1e-9 < fresh * e}
    if short and not _reserve_briefly(ray, bundle, fresh, patience):
        free = ray.available_resources()
        name, needed = next(iter(short.items()))
        raise TrainingError(f"{workers} workers need {needed:g} more {name}s but only {free.get(name, 0):g} are free "
                            f"(other tasks or actors hold the rest); they would wait forever")


def _reserve_briefly(ray, bundle: dict, count: int, patience: float) -> bool:
    """Whether ``count`` bundles became free within ``patience`` seconds (reserved, then let go
    for the actors about to start)."""
    from ray.util.placement_group import placement_group, remove_placement_group  # heavy: Ray

    group = placement_group([dict(bundle) for _ in range(count)])
    try:
        return group.wait(timeout_seconds=patience)
    finally:
        remove_placement_group(group)
