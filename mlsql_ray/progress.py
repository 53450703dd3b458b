"""Where long work reports how it is going. The work calls ``report``; whoever runs it (the CLI
prints lines, the kernel updates one display in place) listens with ``reporting_to``.

Events are a kind plus plain fields. Training sends:
  ``train_start``  total_rounds, workers, actors (the worker actor handles, for supervisors)
  ``train_round``  round, total_rounds, loss, accuracy, elapsed (s), val_loss/val_accuracy if any
  ``train_end``    history (a list of per-round dicts), elapsed
SQL ``train`` sends, per parameter group (``fitParam.N``):
  ``group_start``  alg, group (its N), groups (how many)
  ``group_end``    alg, group, groups, status (success/fail), metrics (name → value), message, elapsed (s)
"""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator

Sink = Callable[[str, dict], None]
_sinks: list[Sink] = []


def report(kind: str, **fields) -> None:
    for sink in list(_sinks):
        sink(kind, fields)


@contextlib.contextmanager
def reporting_to(sink: Sink) -> Iterator[None]:
    _sinks.append(sink)
    try:
        yield
    finally:
        _sinks.remove(sink)
