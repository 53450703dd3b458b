"""What one training run is asked to do: ``train.fit``'s keywords as one typed value.

Users write keywords in their cells (``fit(model_fn, servers, rounds=7, batch_size=128)``), and
those stay the public API; ``fit`` turns them into a ``TrainConfig`` at once, checked field by
field, so that a mistake is one clear error before any actor starts and everything after passes
one object instead of two dozen arguments.
"""

from __future__ import annotations

import dataclasses
import numbers
from dataclasses import dataclass
from typing import Callable, Sequence

from .actors import TrainingError
from .checkpoint import Checkpoints
from .data import Columns, Source

#: the values of ``mode``: synchronous weight averaging, asynchronous parameter servers
MODES = ("sync", "async")


@dataclass(frozen=True)
class TrainConfig:
    """One run's settings (every field is a keyword of ``train.fit``)."""

    rounds: int = 1
    """Rounds of training: each an epoch over every partition, or ``steps_per_round`` batches.
    Asynchronous mode trains as many steps in all and reports the same rounds as they pass."""

    steps_per_round: int | None = None
    """Batches per round per worker, continuing where the last round stopped (None: an epoch)."""

    batch_size: int = 32
    """Rows per training step."""

    prepare: Callable | None = None
    """Turns an Arrow partition into (x, y); None: ``Columns(features, label, scale, one_hot)``."""

    features: str | Sequence[str] = "image"
    """The feature column(s) of the default ``prepare``, made one float32 matrix."""

    label: str = "label"
    """The label column of the default ``prepare``."""

    scale: float | None = None
    """Multiplies the features in the default ``prepare`` (e.g. ``1 / 255`` for pixels)."""

    one_hot: int | None = None
    """Classes to one-hot encode the labels into, in the default ``prepare`` (None: labels as they are)."""

    validation: Source | None = None
    """Data to evaluate the averaged model on after each round (``val_*`` metrics): a source or a list of
    data servers. Synchronous mode only."""

    learning_rate: float | None = None
    """Replaces the compiled optimizer's learning rate (None: keep it), before ``scale_learning_rate``."""

    scale_learning_rate: bool = True
    """Synchronous mode multiplies the learning rate by the number of workers: each sees 1/k of the data
    per round, and an average of k updates of size 1/k would make a round worth 1/k of an epoch."""

    average_optimizer: bool = False
    """Average the optimizer's slots (momentum etc.) along with the weights (synchronous mode)."""

    cpus_per_worker: float = 1
    """CPUs each worker actor holds in Ray; TensorFlow's thread pools follow it."""

    gpus_per_worker: float = 0
    """GPUs each worker actor holds in Ray."""

    max_failures: int = 3
    """Worker deaths survived in all (each dead worker is replaced and its step retried); one more ends
    the run with a ``TrainingError`` naming the worker."""

    on_round: Callable[[dict], None] | None = None
    """Called with each round's history entry as the round ends."""

    checkpoints: Checkpoints | None = None
    """Where and how often to save the averaged state (synchronous mode)."""

    resume: bool = False
    """Continue after the last of ``checkpoints`` instead of starting over."""

    early_stopping: tuple[str, int] | None = None
    """``(metric, patience)``: stop once ``metric`` has not improved for ``patience`` rounds (lower is
    better for losses, higher for anything else). Synchronous mode."""

    mode: str = "sync"
    """"sync": every round the workers' weights are averaged (deterministic, every partition weighs
    the same). "async": workers never wait for each other, pushing changes to parameter servers;
    pick it when workers run at uneven speeds or hold uneven partitions."""

    max_staleness: int = 4
    """Asynchronous mode: a change computed from weights more than this many updates old is dropped."""

    num_shards: int = 2
    """Asynchronous mode: parameter servers the weights are spread over."""

    steps_per_push: int = 8
    """Asynchronous mode: local steps a worker takes between pushes (fewer Ray round trips)."""

    worker_class: type | None = None
    """The workers' actor class: None for the mode's own (``worker.Worker`` when synchronous,
    ``async_ps.AsyncWorker`` when asynchronous), or a subclass of it that instruments its training
    (the tests' stragglers are one)."""

    def __post_init__(self):
        for name, least, integer in _NUMBERS:
            value = getattr(self, name)
            if value is not None or name not in _OPTIONAL:
                _check_number(name, value, least, integer)
        if self.mode not in MODES:
            raise TrainingError(f"mode must be \"sync\" or \"async\", not {self.mode!r}")
        if self.early_stopping is not None:
            if not (isinstance(self.early_stopping, (tuple, list)) and len(self.early_stopping) == 2
                    and isinstance(self.early_stopping[0], str)):
                raise TrainingError(f"early_stopping must be (metric, patience), e.g. (\"val_loss\", 2), "
                                    f"not {self.early_stopping!r}")
            _check_number("early_stopping's patience", self.early_stopping[1], 0, True)
        if self.resume and self.checkpoints is None:
            raise TrainingError("resume=True needs checkpoints= (the table to resume from)")
        if self.mode == "async" and (self.checkpoints is not None or self.validation is not None
                                     or self.early_stopping is not None):
            raise TrainingError("mode=\"async\" does not support checkpoints, validation or early stopping yet")

    @classmethod
    def build(cls, config: TrainConfig | None, options: dict) -> TrainConfig:
        """``config`` (default: the defaults) with ``options``, keywords named as the fields, replacing
        its values; an unknown keyword is an error that lists the known ones."""
        known = [f.name for f in dataclasses.fields(cls)]
        unknown = [name for name in options if name not in known]
        if unknown:
            raise TrainingError(f"train.fit got unknown keyword{'s' if len(unknown) > 1 else ''} "
                                f"{', '.join(unknown)}; it takes: {', '.join(known)}")
        if config is not None and not isinstance(config, cls):
            raise TrainingError(f"config must be a train.TrainConfig, not {type(config).__name__}")
        return dataclasses.replace(config, **options) if config is not None else cls(**options)

    @property
    def preparer(self) -> Callable:
        """What turns an Arrow partition into (x, y)."""
        return self.prepare or Columns(self.features, self.label, self.scale, self.one_hot)

    @property
    def threads(self) -> int:
        """TensorFlow threads per worker: its whole CPUs, at least one."""
        return max(1, int(self.cpus_per_worker))


#: the numeric fields: (name, least value, whole number); those in _OPTIONAL may be None
_NUMBERS = (("rounds", 1, True), ("steps_per_round", 1, True), ("batch_size", 1, True), ("one_hot", 1, True),
            ("scale", float("-inf"), False), ("learning_rate", 0, False), ("cpus_per_worker", 0, False),
            ("gpus_per_worker", 0, False), ("max_failures", 0, True), ("max_staleness", 0, True),
            ("num_shards", 1, True), ("steps_per_push", 1, True))
_OPTIONAL = {"steps_per_round", "one_hot", "scale", "learning_rate"}


def _check_number(name: str, value, least: float, integer: bool) -> None:
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind) or value < least:
        wanted = ("a whole number" if integer else "a number") + (f" of at least {least:g}" if least > float("-inf") else "")
        raise TrainingError(f"{name} must be {wanted}, not {value!r}")
