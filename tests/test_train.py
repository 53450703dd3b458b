"""mlsql_ray.train on a real local Ray: averaging math, common start, learning-rate scaling, MNIST
accuracy, dead workers replaced (or not, past max_failures), no actor left, models through Delta."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

from mlsql_ray import MLSQLError, progress, train

from conftest import MNIST_ROUNDS

from training_helpers import Fate, alive_actors, eventually, fated_model, held_out_accuracy, tiny_model, tiny_partitions


def alive_workers(ray) -> list[dict]:
    return alive_actors("Worker")


# -- averaging, pure --------------------------------------------------------------------------

def test_average_weights_by_sample_count():
    a = [np.array([[1.0, 2.0]], dtype=np.float32), np.array([0.0], dtype=np.float32)]
    b = [np.array([[3.0, 6.0]], dtype=np.float32), np.array([4.0], dtype=np.float32)]
    out = train.average([a, b], [1, 3])
    np.testing.assert_allclose(out[0], [[2.5, 5.0]])
    np.testing.assert_allclose(out[1], [3.0])
    assert out[0].dtype == np.float32


def test_average_equal_counts_is_the_mean_and_integer_state_keeps_worker_zero():
    a = [np.array([1.0, 1.0]), np.array(7, dtype=np.int64)]
    b = [np.array([3.0, 5.0]), np.array(9, dtype=np.int64)]
    out = train.average([a, b], [10, 10])
    np.testing.assert_allclose(out[0], [2.0, 3.0])
    assert out[1] == 7


def test_average_refuses_mismatched_inputs():
    with pytest.raises(ValueError, match="2 weight sets but 1"):
        train.average([[np.ones(1)], [np.ones(1)]], [1])
    with pytest.raises(ValueError, match="more than zero"):
        train.average([[np.ones(1)]], [0])


def test_matrix_is_vectorised_and_checks_lengths():
    import pyarrow as pa

    col = pa.array([[1, 2, 3], [4, 5, 6]], pa.list_(pa.uint8()))
    np.testing.assert_array_equal(train.matrix(col), [[1, 2, 3], [4, 5, 6]])
    with pytest.raises(MLSQLError, match="different lengths"):
        train.matrix(pa.array([[1, 2], [3]]))


def test_columns_scale_one_hot_and_name_a_missing_column():
    """The default partition → (x, y) of every training (``Columns``), without Ray: the fast tier's
    reach into train/data.py."""
    import pyarrow as pa

    table = pa.table({"image": pa.array([[0, 255], [255, 0]], pa.list_(pa.uint8())), "label": [1, 0]})
    x, y = train.Columns(scale=1 / 255, one_hot=2)(table)
    np.testing.assert_array_equal(x, [[0.0, 1.0], [1.0, 0.0]])
    np.testing.assert_array_equal(y, [[0, 1], [1, 0]])
    with pytest.raises(ValueError, match="no column 'pixels'"):
        train.Columns(features="pixels")(table)


# -- on Ray --------------------------------------------------------------------------------

@pytest.mark.slow
def test_workers_start_from_worker_zeros_weights(ray_runtime, tmp_path: Path):
    """With a learning rate of 0 nothing moves, so the result is the common start itself: it must
    be one worker's own random initialisation, not a blend of two different ones."""

    def recording_model():
        import numpy as np

        network = tiny_model(0.0)()
        np.save(tmp_path / f"init-{os.getpid()}.npy", network.get_weights()[0])
        return network

    result = train.fit(recording_model, tiny_partitions(), rounds=1, batch_size=8, scale_learning_rate=False)
    inits = [np.load(p) for p in sorted(tmp_path.glob("init-*.npy"))]
    assert len(inits) == 2
    assert not np.allclose(inits[0], inits[1]), "workers built identical random weights; the test proves nothing"
    assert any(np.array_equal(result.weights[0], init) for init in inits)
    assert alive_workers(ray_runtime) == []


def test_two_workers_reach_085_on_mnist_and_leave_no_actor(ray_runtime, mnist_trained, mnist_test):
    """The test run's shared MNIST run (conftest's ``mnist_trained``: the seed's model, two workers,
    5 rounds), not a run of its own: an MNIST fit is the suite's dearest step. Its workers are gone
    (alone, this test runs it in its setup)."""
    accuracy = held_out_accuracy(mnist_trained, mnist_test)
    assert accuracy >= 0.85, f"test accuracy {accuracy:.3f}"
    history = mnist_trained.history
    assert [h["round"] for h in history] == list(range(1, MNIST_ROUNDS + 1))
    assert history[-1]["loss"] < history[0]["loss"]
    assert alive_workers(ray_runtime) == []


# -- worker deaths: tiny models, real kills (SIGKILL of the actor's process, or ray.kill) ---------

def workers_started_since(before: set[str]) -> dict[str, dict]:
    from mlsql_ray.cluster import ray_internals

    return {i: a for i, a in ray_internals.actor_states().items() if i not in before and "Worker" in a.get("ActorClassName", "")}


def all_dead(before: set[str]) -> int:
    """How many worker actors were started since ``before``; fails unless Ray reports every one dead."""
    started = workers_started_since(before)
    assert started and all(a["State"] == "DEAD" for a in started.values()), {i: a["State"] for i, a in started.items()}
    return len(started)


def kill_before_round(ray, target_round: int, worker: int):
    """A progress sink that kills worker ``worker`` with ``ray.kill`` as round ``target_round - 1``
    is reported and waits until Ray reports it dead, so round ``target_round`` is the one to lose it."""
    from mlsql_ray.cluster import ray_internals

    actors = []

    def sink(kind, event):
        if kind == "train_start":
            actors[:] = event["actors"]
        elif kind == "train_round" and event["round"] == target_round - 1:
            victim = actors[worker]
            ray.kill(victim, no_restart=True)
            assert eventually(lambda: ray_internals.actor_states(ray_internals.actor_id(victim)).get("State") == "DEAD")

    return sink


def fate(tmp_path: Path, name: str, kill_at: set[int]) -> Fate:
    """A ``Fate`` counting in a folder of its own: one per run of a test."""
    (tmp_path / name).mkdir()
    return Fate(tmp_path / name, kill_at)


# Each supervision test below runs its two cases in one warm pool: the second case (past
# max_failures) takes the first one's two live workers (a TensorFlow start spared apiece), and a
# warm worker builds its model, trains and dies exactly as a fresh one does (the model is built
# by every run's setup). Replacements are always fresh actors.

@pytest.mark.slow
def test_learning_rate_is_scaled_by_worker_count(ray_runtime, warm_workers):
    """Progress events and ``on_round``, not actors: the run's two workers stay in the module's warm
    pool for the next tests (the learning-rate step's two runs, then the first case of the
    killed-while-starting test: a pair of TensorFlow starts spared each)."""
    seen, history = [], []
    with progress.reporting_to(lambda kind, event: seen.append((kind, event))):
        result = train.fit(tiny_model(0.01), tiny_partitions(), rounds=2, batch_size=8, on_round=history.append)
    assert history == result.history and [h["round"] for h in history] == [1, 2]
    kinds = [k for k, _ in seen]
    assert kinds == ["train_start", "train_round", "train_round", "train_end"]
    rounds = [e for k, e in seen if k == "train_round"]
    assert [r["round"] for r in rounds] == [1, 2]
    assert all(len(r["workers"]) == 2 and r["workers"][0]["samples"] == 40 for r in rounds)


@pytest.mark.slow
def test_two_synchronous_workers_step_with_twice_the_learning_rate(ray_runtime, warm_workers):
    """Synchronous training multiplies the optimizer's learning rate by the number of workers
    (``train.fit``'s ``scale_learning_rate``, on by default): checked by what one SGD step does to a
    weight, through the public ``train.fit`` only (issue 24, item 9; was test_train_lr_scaling.py,
    whose two runs started a pair of workers of their own: here they take the module's warm pair).

    The model is one weight w (a bias-free Dense(1), w = 1 at the start), mean squared error, plain
    SGD at 0.1; each worker holds the same two rows x = 1, 2 with target 0 and takes one step of one
    batch: the gradient is 2·w·mean(x²) = 5, so the averaged weight after the round is 1 - 5·rate.
    With 2 workers, scaled: 1 - 5·0.2 = 0; not scaled: 1 - 5·0.1 = 0.5."""
    rows = (np.array([[1.0], [2.0]], dtype=np.float32), np.array([0.0, 0.0], dtype=np.float32))

    def one_weight_model():
        from tensorflow.keras import layers, models, optimizers

        network = models.Sequential([layers.Input((1,)), layers.Dense(1, use_bias=False, kernel_initializer="ones")])
        network.compile(optimizer=optimizers.SGD(0.1), loss="mse")
        return network

    def weight_after_one_step(**options) -> float:
        result = train.fit(one_weight_model, [rows, rows], rounds=1, batch_size=2, **options)
        [kernel] = result.model.get_weights()
        return float(kernel[0, 0])

    scaled = weight_after_one_step()
    unscaled = weight_after_one_step(scale_learning_rate=False)
    assert unscaled == pytest.approx(0.5, abs=1e-6)
    assert scaled == pytest.approx(0.0, abs=1e-6)


@pytest.mark.slow
def test_a_worker_killed_while_starting_is_replaced_or_named(ray_runtime, tmp_path, warm_workers):
    """The first model built kills its process (in the worker's setup, as the run starts): within
    max_failures=1 a replacement takes its place and training finishes; past it (max_failures=0),
    a TrainingError. The first case starts on the two workers the learning-rate tests left in the
    module's pool (run alone, on two fresh ones)."""
    from mlsql_ray.cluster import ray_internals

    pool = warm_workers
    before = set(workers_started_since(set()))
    warm = {ray_internals.actor_id(a) for a in pool.idle_actors()}
    fresh = 2 - len(warm)  # the workers the first case has to start (0 after the learning-rate tests)
    model = fated_model(tiny_model(), fate(tmp_path, "within", {1}))
    result = train.fit(model, tiny_partitions(), rounds=2, batch_size=8, max_failures=1)
    assert [h["round"] for h in result.history] == [1, 2]
    assert len(workers_started_since(before)) == fresh + 1 and len(pool.idle_actors()) == 2  # and one replacement
    model = fated_model(tiny_model(), fate(tmp_path, "past", {1}))
    with pytest.raises(train.TrainingError) as caught:
        train.fit(model, tiny_partitions(), rounds=2, batch_size=8, max_failures=0)
    assert re.search(r"training worker [01] died while starting \(ActorDiedError: The actor is dead because its "
                     r"worker process has died\.\); 1 failures is more than max_failures=0", caught.value.message), caught.value.message
    assert pool.idle_actors() == []
    assert all_dead(before) == fresh + 1  # the second run started none
    assert all(ray_internals.actor_states(i).get("State") == "DEAD" for i in warm)  # the warm two as well


@pytest.mark.slow
def test_a_second_death_during_the_retry_is_counted(ray_runtime, tmp_path):
    """Worker 1 is killed before round 2, and its replacement (the third model built) dies in its
    setup: two deaths in one round. max_failures=2 retries the round twice and finishes;
    max_failures=1 stops with the worker named."""
    before = set(workers_started_since(set()))
    with train.WarmPool() as pool, pool.active():
        model = fated_model(tiny_model(), fate(tmp_path, "within", {3}))
        with progress.reporting_to(kill_before_round(ray_runtime, 2, worker=1)):
            result = train.fit(model, tiny_partitions(), rounds=3, batch_size=8, max_failures=2)
        assert [h["retries"] for h in result.history] == [0, 2, 0]
        assert len(workers_started_since(before)) == 4 and len(pool.idle_actors()) == 2
        model = fated_model(tiny_model(), fate(tmp_path, "past", {3}))
        with progress.reporting_to(kill_before_round(ray_runtime, 2, worker=1)), \
                pytest.raises(train.TrainingError, match=r"training worker 1 died in round 2 \(ActorDiedError: .*\); "
                                                         r"2 failures is more than max_failures=1"):
            train.fit(model, tiny_partitions(), rounds=3, batch_size=8, max_failures=1)
    assert all_dead(before) == 5  # the second run's one replacement


@pytest.mark.slow
def test_worker_zeros_own_calls_are_supervised_too(ray_runtime, tmp_path):
    """Worker 0 alone evaluates: killed in its first evaluation, it is replaced and the evaluation
    retried; a failing evaluation (features of the wrong width) is a TrainingError naming it. The
    second run takes the first one's two live workers from a warm pool (each a TensorFlow import
    spared) and, failing, stops them: three workers started in all, every one dead at the end."""
    before = set(workers_started_since(set()))
    x, y = tiny_partitions()[0]
    model = fated_model(tiny_model(), Fate(tmp_path, {1}), at="evaluate")
    with train.WarmPool() as pool, pool.active():
        result = train.fit(model, tiny_partitions(), rounds=2, batch_size=8, validation=(x, y), max_failures=1)
        assert all("val_loss" in h for h in result.history)
        assert len(workers_started_since(before)) == 3 and len(pool.idle_actors()) == 2  # two, one replacement
        with pytest.raises(train.TrainingError, match=r"training worker 0 failed while evaluating round 1: ValueError"):
            train.fit(tiny_model(), tiny_partitions(), rounds=2, batch_size=8, validation=(np.ones((8, 5), np.float32), y[:8]))
        assert pool.idle_actors() == []
    assert all_dead(before) == 3
    assert alive_workers(ray_runtime) == []


@pytest.mark.slow
def test_an_async_worker_killed_mid_run_is_replaced_or_named(ray_runtime, tmp_path):
    """The fifth local step of the run kills its worker's process: within max_failures=1 a
    replacement joins in and every push is still counted; past it (max_failures=0), a TrainingError."""
    before = set(workers_started_since(set()))
    options = dict(rounds=4, batch_size=8, mode="async", steps_per_push=2)
    with train.WarmPool() as pool, pool.active():
        model = fated_model(tiny_model(), fate(tmp_path, "within", {5}), at="train_on_batch")
        result = train.fit(model, tiny_partitions(), max_failures=1, **options)
        assert [h["round"] for h in result.history] == [1, 2, 3, 4]
        assert sum(h["retries"] for h in result.history) == 1
        last = result.history[-1]
        assert last["applied_pushes"] + last["dropped_pushes"] == sum(last["worker_steps"]) // 2 >= 20
        assert len(workers_started_since(before)) == 3
        model = fated_model(tiny_model(), fate(tmp_path, "past", {5}), at="train_on_batch")
        with pytest.raises(train.TrainingError, match=r"training worker [01] died in round \d \(ActorDiedError: The "
                                                      r"actor is dead because its worker process has died\.\); 1 failures"):
            train.fit(model, tiny_partitions(), max_failures=0, **options)
        assert pool.idle_actors() == []
    assert all_dead(before) == 3  # the second run started none
    assert alive_actors("ParameterShard") == []


@pytest.mark.slow
def test_a_dead_parameter_shard_ends_async_training_with_its_name(ray_runtime):
    """A shard holds its part of the weights alone: SIGKILLed as training starts, it cannot be
    replaced, and the error says which shard and why."""
    import signal

    before = set(workers_started_since(set()))

    def kill_the_shards(kind, event):
        if kind == "train_start":
            shards = alive_actors("ParameterShard")
            for shard in shards:
                os.kill(shard["Pid"], signal.SIGKILL)
            assert shards and eventually(lambda: not alive_actors("ParameterShard"))

    with progress.reporting_to(kill_the_shards), pytest.raises(train.TrainingError) as caught:
        train.fit(tiny_model(), tiny_partitions(), rounds=4, batch_size=8, mode="async", steps_per_push=2)
    assert re.fullmatch(r"parameter shard 0 died in round 1 \(ActorDiedError: The actor is dead because its worker "
                        r"process has died\.\); the weights it held are lost, so asynchronous training cannot go on",
                        caught.value.message), caught.value.message
    assert all_dead(before) == 2


# A --%python cell whose training loses a worker past max_failures=0 (clear error, nothing saved, the
# model table kept, no actor left) is reliability/test_worker_death.py's
# test_with_max_failures_0_a_dead_worker_stops_training_and_the_model_table_keeps_its_version: it
# checks all this test checked (its assertions moved there), and one such session run is enough.


def test_model_rows_through_delta_give_the_same_predictions(ray_session, mnist_trained, mnist_test, warehouse):
    import pyarrow as pa

    from mlsql_ray.models import load_model
    from mlsql_ray.storage.rows import FILE_SCHEMA

    ray_session.catalog.add_arrow("m", pa.Table.from_pylist(mnist_trained.model_rows(), schema=FILE_SCHEMA), "test")
    ray_session.execute("save overwrite m as delta.`ai_model.roundtrip`;")
    loaded = load_model("ai_model.roundtrip", warehouse=warehouse)
    x, _ = mnist_test
    np.testing.assert_allclose(loaded.predict(x[:200], verbose=0), mnist_trained.model.predict(x[:200], verbose=0), rtol=1e-5, atol=1e-6)


def test_too_many_workers_for_the_cluster_is_refused_not_a_hang(ray_runtime):
    """Refused up front, from the cluster's resources: no worker actor was ever started to wait for
    CPUs that never come (bench/bench_fail_fast.py times the refusal)."""
    from mlsql_ray.cluster import ray_internals

    def workers_ever() -> int:  # alive or dead
        return sum("Worker" in a.get("ActorClassName", "") for a in ray_internals.actor_states().values())

    before = workers_ever()
    cpus = int(ray_runtime.cluster_resources()["CPU"])
    with pytest.raises(train.TrainingError, match=rf"{2 * cpus} workers x 1(\.0)? CPU = {2 * cpus} CPUs, but the Ray cluster has {cpus}"):
        train.fit(tiny_model(0.0), tiny_partitions() * cpus, rounds=1, cpus_per_worker=1)
    assert workers_ever() == before


@pytest.mark.slow
def test_a_worker_whose_code_fails_names_itself(ray_runtime):
    def bad_prepare(table):
        raise ValueError("no pixels here")

    import pyarrow as pa

    with pytest.raises(train.TrainingError, match="worker 0 failed while starting.*no pixels here"):
        train.fit(tiny_model(0.0), [pa.table({"a": [1]}), pa.table({"a": [2]})], prepare=bad_prepare)
    assert alive_workers(ray_runtime) == []
