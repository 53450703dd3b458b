"""Beyond one run: checkpoints and resume after a real kill, retention, validation and early
stopping, a Tune search, and the asynchronous parameter-server mode."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import MNIST_ROUNDS, ROOT, SAMPLE_MNIST
from mlsql_ray.cluster import ray_internals
from mlsql_ray import train
from mlsql_ray.train.async_ps import ParameterShard, shard_layout
from training_helpers import (STRAGGLERS, alive_actors, eventually, held_out_accuracy, mnist_model, seeded_mnist_model,
                              tiny_model, tiny_partitions)


# Training actors cost a TensorFlow import apiece (seconds, more on a busy machine): of the tiny-model
# tests that start them, the fast tier (-m "not slow") keeps test_checkpoints_keep_the_last_n.
starts_workers = pytest.mark.slow


# -- checkpoints --------------------------------------------------------------------------------

KILLED_RUN = textwrap.dedent("""
    import sys
    import ray
    sys.path.insert(0, {tests!r})
    from mlsql_ray.cluster.link import RayLink
    RayLink({address!r}).ensure()  # joins the test's loopback-only Ray the way sessions do
    from mlsql_ray import train
    from training_helpers import seeded_mnist_model, servers_from
    servers = servers_from(ray, {train_path!r})
    train.fit(seeded_mnist_model, servers, rounds={rounds}, batch_size=128, scale=1 / 255, one_hot=10,
              checkpoints=train.Checkpoints("ckpt.run", warehouse={warehouse!r}))
""")


def test_a_killed_run_resumes_from_its_last_checkpoint(ray_runtime, mnist_servers, mnist_test, mnist_trained, warehouse,
                                                       warm_workers):
    """The run is the shared ``mnist_trained`` one (same model, seed, data and rounds), killed and
    resumed: it must end as good as that run did uninterrupted. The resumed run leaves its workers
    in the module's warm pool, for the tiny runs below (resuming is about checkpoints, not actors);
    the killed driver's workers die with it."""
    before = {a["ActorID"] for a in alive_actors()}
    checkpoints = train.Checkpoints("ckpt.run", warehouse=warehouse)
    script = KILLED_RUN.format(tests=str(ROOT / "tests"), address=ray_runtime.get_runtime_context().gcs_address,
                               train_path=str(SAMPLE_MNIST / "train.parquet"), warehouse=str(warehouse),
                               rounds=MNIST_ROUNDS)
    driver = subprocess.Popen([sys.executable, "-c", script], start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert eventually(lambda: 2 in checkpoints.rounds() or driver.poll() is not None, 420), "no checkpoint of round 2"
        assert driver.poll() is None, driver.stderr.read()
        os.killpg(driver.pid, signal.SIGKILL)  # the driver dies mid-run, as a crashed kernel would
        driver.wait(30)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
    saved = checkpoints.rounds()
    assert 2 <= saved[-1] < MNIST_ROUNDS
    resumed = train.fit(seeded_mnist_model, mnist_servers, rounds=MNIST_ROUNDS, batch_size=128, scale=1 / 255, one_hot=10,
                        checkpoints=checkpoints, resume=True)
    assert resumed.history[saved[-1]]["resumed_from_checkpoint"] == saved[-1]
    assert [h["round"] for h in resumed.history] == list(range(1, MNIST_ROUNDS + 1))
    assert abs(held_out_accuracy(resumed, mnist_test) - held_out_accuracy(mnist_trained, mnist_test)) <= 0.01
    pooled = {ray_internals.actor_id(a) for a in warm_workers.idle_actors()}
    assert len(pooled) == 2  # the resumed run's two workers, kept
    assert eventually(lambda: not any("Worker" in a.get("ActorClassName", "") for a in alive_actors()
                                      if a["ActorID"] not in before | pooled))


def test_checkpoints_keep_the_last_n(warm_workers, warehouse):
    """One worker: what a checkpoint keeps does not depend on how many averaged it, and each worker
    is a process importing TensorFlow (a second one doubled this test's time; averaging over
    several workers is test_train.py's)."""
    checkpoints = train.Checkpoints("ckpt.tiny", warehouse=warehouse, every=1, keep=2)
    result = train.fit(tiny_model(), tiny_partitions()[:1], rounds=4, batch_size=8, checkpoints=checkpoints)
    assert checkpoints.rounds() == [3, 4]
    assert result.summary()["rounds"] == "4" and result.model_table().num_rows == len(result.model_rows()) > 0
    latest = checkpoints.latest()
    assert latest["round"] == 4 and [h["round"] for h in latest["history"]] == [1, 2, 3, 4]
    from deltalake import DeltaTable

    assert set(DeltaTable(str(checkpoints.path)).to_pyarrow_table().column_names) == {"round", "start", "offset", "value"}


@starts_workers
def test_checkpoint_every_k_rounds(warm_workers, warehouse):
    checkpoints = train.Checkpoints("ckpt.every", warehouse=warehouse, every=2, keep=5)
    train.fit(tiny_model(), tiny_partitions(), rounds=5, batch_size=8, checkpoints=checkpoints)
    assert checkpoints.rounds() == [2, 4, 5]  # every second round, and always the last


# -- validation and early stopping --------------------------------------------------------------

@starts_workers
def test_validation_metrics_each_round_and_early_stop(warm_workers):
    x, y = tiny_partitions()[0]
    # learning rate 0: the validation loss can never improve, so patience 1 stops after round 2
    result = train.fit(tiny_model(0.0), tiny_partitions(), rounds=6, batch_size=8, validation=(x, y),
                       early_stopping=("val_loss", 1))
    assert [h["round"] for h in result.history] == [1, 2]
    assert result.history[-1]["stopped_early"] is True
    assert all("val_loss" in h and "val_accuracy" in h for h in result.history)


@starts_workers
def test_early_stopping_on_an_unknown_metric_says_what_is_there(warm_workers):
    with pytest.raises(train.TrainingError, match=r"early_stopping watches 'val_loss' but rounds report accuracy, loss \(pass validation="):
        train.fit(tiny_model(), tiny_partitions(), rounds=2, batch_size=8, early_stopping=("val_loss", 1))


# -- search -----------------------------------------------------------------------------------

@starts_workers
def test_a_small_search_end_to_end(ray_runtime):
    """Two trials, the first two of a 2 x 2 grid (``num_samples``): a one-worker and a two-worker
    trial, each its own Tune trial and placement group. Every trial starts TensorFlow workers, so
    two prove the search end to end as well as the whole grid did, in half the time."""
    before = {a["ActorID"] for a in alive_actors()}
    result = train.search(tiny_model(), tiny_partitions(), {"learning_rate": [0.5, 0.0], "workers": [1, 2]},
                          num_samples=2, rounds=3, metric="accuracy", batch_size=8)
    rows = result.table.to_pylist()
    assert len(rows) == 2
    assert {(r["learning_rate"], r["workers"]) for r in rows} == {(0.5, 1), (0.5, 2)}  # the grid's order
    assert all(r["status"] in ("finished", "stopped early") and r["rounds_run"] >= 1 for r in rows)
    best = max((r for r in rows if r["status"] == "finished"), key=lambda r: r["accuracy"])
    assert result.best_metrics["accuracy"] == pytest.approx(best["accuracy"])
    assert len(result.best_model_rows()) >= 1
    assert eventually(lambda: {a["ActorID"] for a in alive_actors()} <= before)


def test_a_search_that_cannot_fit_is_refused(ray_runtime):
    with pytest.raises(train.TrainingError, match=r"needs 2 workers x 2 CPU = 4 CPUs but the cluster has 2"):
        train.search(tiny_model(), tiny_partitions(), {"learning_rate": [0.1]}, cpus_per_worker=2)


# -- asynchronous parameter servers -------------------------------------------------------------

def test_a_parameter_shard_applies_fresh_pushes_and_drops_stale_ones():
    shard = ParameterShard()
    shard.load([np.ones(3, np.float32)])
    assert shard.push([np.full(3, -0.5, np.float32)], version=0, max_staleness=1)
    assert shard.push([np.full(3, -0.25, np.float32)], version=0, max_staleness=1)  # 1 update old: allowed
    assert not shard.push([np.full(3, 9.0, np.float32)], version=0, max_staleness=1)  # 2 old: dropped
    version, received, weights = shard.pull()
    assert version == 2 and received == 3 and shard.stats()["dropped"] == 1
    np.testing.assert_allclose(weights[0], [0.25, 0.25, 0.25])


def test_shard_layout_balances_values():
    layout = shard_layout([784 * 512, 512, 512 * 10, 10], 2)
    assert sorted(i for shard in layout for i in shard) == [0, 1, 2, 3]
    assert layout[0] == [0]  # the big kernel alone on one shard


@starts_workers
def test_async_workers_push_their_changes_until_the_budget_is_spent(ray_runtime):
    """On a tiny model: every step is counted, the shards apply the pushes, and with a 3x
    straggler the fast worker takes more of the shared budget."""
    partitions = tiny_partitions()
    result = train.fit(tiny_model(), partitions, rounds=4, batch_size=8, mode="async", steps_per_push=2,
                       max_staleness=8, worker_class=STRAGGLERS["async"])
    steps = result.history[-1]["worker_steps"]
    assert sum(steps) >= 4 * 10  # 4 epochs of 2 x 40 rows in batches of 8
    assert steps[0] > steps[1]
    assert [h["round"] for h in result.history] == [1, 2, 3, 4]
    assert {"loss", "accuracy"} <= set(result.history[-1])
    last = result.history[-1]
    assert last["applied_pushes"] + last["dropped_pushes"] == sum(steps) // 2 and last["applied_pushes"] > 0


def test_async_training_reaches_085_on_mnist_and_leaves_nothing(ray_runtime, mnist_servers, mnist_test):
    before = {a["ActorID"] for a in alive_actors()}
    result = train.fit(mnist_model, mnist_servers, rounds=7, batch_size=128, scale=1 / 255, one_hot=10, mode="async")
    assert held_out_accuracy(result, mnist_test) >= 0.85
    assert [h["round"] for h in result.history] == list(range(1, 8))
    assert sum(result.history[-1]["worker_steps"]) >= 7 * 63
    assert eventually(lambda: {a["ActorID"] for a in alive_actors()} <= before)
