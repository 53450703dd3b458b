"""Weight averaging: the whole synchronous algorithm in one pure function."""

from __future__ import annotations

from typing import Sequence

import numpy as np


def average(weight_sets: Sequence[Sequence[np.ndarray]], counts: Sequence[int]) -> list[np.ndarray]:
    """The sample-weighted mean of each layer over workers: a worker that trained on twice the
    rows pulls twice as hard. Integer arrays (e.g. step counters) keep worker 0's value."""
    if not weight_sets:
        raise ValueError("nothing to average")
    if len(weight_sets) != len(counts):
        raise ValueError(f"{len(weight_sets)} weight sets but {len(counts)} sample counts")
    total = float(sum(counts))
    if total <= 0:
        raise ValueError("sample counts must add up to more than zero")
    shares = [c / total for c in counts]
    averaged = []
    for layer in zip(*weight_sets, strict=True):
        first = np.asarray(layer[0])
        if not np.issubdtype(first.dtype, np.floating):
            averaged.append(first.copy())
            continue
        acc = np.zeros(first.shape, dtype=np.float64)
        for share, w in zip(shares, layer):
            acc += share * np.asarray(w, dtype=np.float64)
        averaged.append(acc.astype(first.dtype))
    return averaged
