"""Distributed Keras training on Ray actors: synchronous weight averaging, or asynchronous
parameter servers (``mode="async"``).

    from mlsql_ray import train
    result = train.fit(create_model, ray_context.data_servers(), rounds=7, batch_size=128,
                       scale=1 / 255, one_hot=10)
    ray_context.build_result(result.model_rows())

``fit``'s keywords are the fields of ``TrainConfig``, documented one by one there.

Inside a session (a ``--%python`` cell, ``train ... as KerasClassifier``) a second ``fit`` of the
same shape reuses the first one's actors (``mlsql_ray.cluster.warm``); from plain Python, run the fits
inside ``with WarmPool() as pool, pool.active():``.
"""

from ..cluster.warm import WarmPool
from .actors import TrainingError
from .averaging import average
from .checkpoint import Checkpoints
from .config import TrainConfig
from .data import Columns, matrix
from .result import TrainResult
from .search import SearchResult, search
from .trainer import fit

__all__ = ["Checkpoints", "Columns", "SearchResult", "TrainConfig", "TrainResult", "TrainingError", "WarmPool", "average", "fit", "matrix", "search"]
