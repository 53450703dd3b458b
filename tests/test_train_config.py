"""``train.fit``'s settings as one ``TrainConfig``: keywords and a whole config are the same run,
every mistake is one clear error before any actor starts, and a worker class of a test's own
(the stragglers) is taken through the public ``worker_class`` field."""

from __future__ import annotations

import dataclasses
import sys

import numpy as np
import pytest
import ray.cloudpickle

from mlsql_ray import progress, train
from mlsql_ray.cluster import ray_internals
from mlsql_ray.train.config import TrainConfig
from mlsql_ray.train.worker import Worker
from training_helpers import STRAGGLERS, tiny_model, tiny_partitions

ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import test modules


def refused(**options) -> str:
    """The message ``fit`` refuses ``options`` with (nothing runs: the model factory is never called)."""
    with pytest.raises(train.TrainingError) as caught:
        train.fit(lambda: pytest.fail("a refused fit built a model"), tiny_partitions(), **options)
    return caught.value.message


def test_an_unknown_keyword_is_named_with_the_known_ones():
    message = refused(rounds=2, epochs=3, batchsize=8)
    assert message.startswith("train.fit got unknown keywords epochs, batchsize; it takes: rounds, steps_per_round, ")
    assert set(message.split("it takes: ")[1].split(", ")) == {f.name for f in dataclasses.fields(TrainConfig)}


@pytest.mark.parametrize(("options", "expected"), [
    ({"rounds": 0}, "rounds must be a whole number of at least 1, not 0"),
    ({"rounds": "7"}, "rounds must be a whole number of at least 1, not '7'"),
    ({"batch_size": 1.5}, "batch_size must be a whole number of at least 1, not 1.5"),
    ({"cpus_per_worker": -1}, "cpus_per_worker must be a number of at least 0, not -1"),
    ({"learning_rate": "fast"}, "learning_rate must be a number of at least 0, not 'fast'"),
    ({"mode": "parallel"}, "mode must be \"sync\" or \"async\", not 'parallel'"),
    ({"early_stopping": "val_loss"}, "early_stopping must be (metric, patience), e.g. (\"val_loss\", 2), not 'val_loss'"),
    ({"early_stopping": ("val_loss", -1)}, "early_stopping's patience must be a whole number of at least 0, not -1"),
    ({"resume": True}, "resume=True needs checkpoints= (the table to resume from)"),
    ({"mode": "async", "early_stopping": ("loss", 1)},
     "mode=\"async\" does not support checkpoints, validation or early stopping yet"),
    ({"mode": "async", "worker_class": Worker}, "worker_class must be a subclass of mlsql_ray.train.async_ps.AsyncWorker "
                                                "for mode='async', not <class 'mlsql_ray.train.worker.Worker'>"),
    ({"worker_class": "Worker"}, "worker_class must be a subclass of mlsql_ray.train.worker.Worker for mode='sync', "
                                 "not 'Worker'"),
    ({"config": {"rounds": 2}}, "config must be a train.TrainConfig, not dict"),
])
def test_bad_settings_are_refused_before_anything_starts(options, expected):
    assert refused(**options) == expected


def test_numpy_numbers_are_numbers():
    config = TrainConfig(rounds=np.int64(3), batch_size=np.int32(16), learning_rate=np.float32(0.1))
    assert config.rounds == 3 and config.batch_size == 16


def test_keywords_given_with_a_config_replace_its_values():
    config = TrainConfig.build(TrainConfig(rounds=3, batch_size=64), {"batch_size": 8})
    assert (config.rounds, config.batch_size) == (3, 8)
    assert TrainConfig(scale=0.5, one_hot=3).preparer == train.Columns(scale=0.5, one_hot=3)


def seeded_tiny_model():
    import keras

    keras.utils.set_random_seed(5)
    return tiny_model()()


@pytest.mark.slow
def test_a_whole_config_is_the_same_run_as_its_keywords_and_brings_its_worker_class(ray_runtime):
    """The same seeded run, once by keywords and once as a ``TrainConfig``, both naming a test's
    worker class (worker 1 slowed, the numbers untouched): the same weights, and the second run
    is on that class's actors: the first run's, taken from a warm pool (a pool hands out only
    actors of the class a run asks for; two TensorFlow starts spared)."""
    with train.WarmPool() as pool, pool.active():
        by_keywords = train.fit(seeded_tiny_model, tiny_partitions(), rounds=3, batch_size=8,
                                worker_class=STRAGGLERS["sync"])
        idle = {ray_internals.actor_id(a) for a in pool.idle_actors()}
        started: list[str] = []

        def sink(kind, event):
            if kind == "train_start":
                started.extend(ray_internals.actor_id(a) for a in event["actors"])

        config = TrainConfig(rounds=3, batch_size=8, worker_class=STRAGGLERS["sync"])
        with progress.reporting_to(sink):
            by_config = train.fit(seeded_tiny_model, tiny_partitions(), config=config)
    assert set(started) == idle and len(idle) == 2
    assert [ray_internals.actor_states(i)["ActorClassName"] for i in started] == ["StragglingWorker", "StragglingWorker"]
    assert [h["round"] for h in by_config.history] == [1, 2, 3]
    for got, expected in zip(by_config.weights, by_keywords.weights, strict=True):
        np.testing.assert_array_equal(got, expected)
