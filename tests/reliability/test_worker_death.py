"""Worker death during training (issue 7, item 2), on the test run's real Ray.

The seed's MNIST model trains 5 rounds on two actors twice with the same settings and the
same seeded initial weights: undisturbed (the test run's shared ``mnist_trained`` run, the suite's
biggest single cost, so it happens once), and disturbed twice in one run: worker 1 killed by
``ray.kill`` in round 2, then worker 0's process killed by ``SIGKILL`` (its pid from the actor's
own ``pid()`` method) in round 4 (one disturbed run for both ways of dying: a run costs half a
minute). The disturbed run must retry one round per death, finish all 5 rounds, and end within 1
point of test accuracy of the undisturbed run (2 000 test images: 1 point is 20 images); every
actor started (the replacements too) must be dead afterwards and its process gone.

With ``max_failures=0`` through a Session: a ``--%python`` cell whose training loses a worker
fails with a clear error, the save after it never runs, the model table saved before keeps
its version and its bytes (and still loads as a model; ``!delta history`` shows that one version),
and no worker actor is left (test_train.py had a second such session run of its own; its checks
are this one's now).
"""

from __future__ import annotations

import os
import signal
import sys
import threading

import numpy as np
import psutil
import pytest
import ray.cloudpickle
from deltalake import DeltaTable

from mlsql_ray import MLSQLError, progress, train
from mlsql_ray.cluster import ray_internals
from mlsql_ray.models import load_model

from conftest import MNIST_ROUNDS, SAMPLE_MNIST
from training_helpers import eventually, held_out_accuracy, seeded_mnist_model

# Ray workers cannot import this module: its functions travel by value.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

ROUNDS = MNIST_ROUNDS  # mnist_trained's
KILL_ROUND = 3
KILL_DELAY_S = 0.3  # after round KILL_ROUND - 1 ends: inside round KILL_ROUND's local training
TOLERANCE = 0.01  # one point of accuracy, as the issue asks
def worker_actors() -> dict[str, dict]:
    return {actor_id: info for actor_id, info in ray_internals.actor_states().items() if "Worker" in info.get("ActorClassName", "")}


def running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def fit_watched(ray, mnist_servers, sink):
    """Train, ``sink`` seeing the progress; then check that every Worker actor this run started is
    dead and its process gone. Returns (result, the pids of all actors it started)."""
    before = set(worker_actors())
    with progress.reporting_to(sink):
        result = train.fit(seeded_mnist_model, mnist_servers, rounds=ROUNDS, batch_size=128, scale=1 / 255, one_hot=10)
    started = {i: a for i, a in worker_actors().items() if i not in before}
    assert started and all(a["State"] == "DEAD" for a in started.values()), {i: a["State"] for i, a in started.items()}
    pids = {a["Pid"] for a in started.values() if a.get("Pid")}
    assert eventually(lambda: not any(running(pid) for pid in pids), 30), [p for p in pids if running(p)]
    return result, pids, len(started)


@pytest.fixture(scope="module")
def undisturbed(mnist_trained, mnist_test):
    """The run the disturbed ones are compared with: conftest's ``mnist_trained``, the same model,
    seeded initial weights (``seeded_mnist_model``), data, rounds and batch size as theirs."""
    assert [h["retries"] for h in mnist_trained.history] == [0] * ROUNDS
    return held_out_accuracy(mnist_trained, mnist_test), mnist_trained


class Killer:
    """A progress sink that kills worker ``victim`` during round ``at_round`` (``delay`` after
    the previous round is reported; 0: at once, before the round starts): with ``ray.kill`` on its
    handle, or with SIGKILL to the pid its ``pid()`` method reported."""

    def __init__(self, ray, how: str, victim: int = 1, delay: float = KILL_DELAY_S, at_round: int = KILL_ROUND):
        self.ray, self.how, self.victim, self.delay, self.at_round = ray, how, victim, delay, at_round
        self.pids: list[int] = []
        self.actors = None
        self.killed_at_round = None
        self.ended = False
        self.killed_while_training = None

    def __call__(self, kind: str, event: dict) -> None:
        if kind == "train_start":
            self.actors = event["actors"]
            self.pids = self.ray.get([actor.pid.remote() for actor in self.actors])
        elif kind == "train_round" and event["round"] == self.at_round - 1 and self.killed_at_round is None:
            self.killed_at_round = self.at_round
            if self.delay:
                threading.Timer(self.delay, self.kill).start()
            else:  # before round at_round asks anything of the victim: that round finds it dead
                self.kill()
        elif kind == "train_end":
            self.ended = True

    def kill(self) -> None:
        self.killed_while_training = not self.ended
        if self.how == "ray.kill":
            self.ray.kill(self.actors[self.victim], no_restart=True)
        else:
            os.kill(self.pids[self.victim], signal.SIGKILL)


def test_workers_killed_mid_round_cost_no_accuracy_and_leave_nothing(ray_runtime, mnist_servers, mnist_test, undisturbed,
                                                                      figures):
    killers = [Killer(ray_runtime, "ray.kill", victim=1, at_round=2), Killer(ray_runtime, "SIGKILL", victim=0, at_round=4)]

    def both(kind: str, event: dict) -> None:
        for killer in killers:
            killer(kind, event)

    result, pids, actors = fit_watched(ray_runtime, mnist_servers, both)
    assert all(k.killed_at_round == k.at_round and k.killed_while_training for k in killers)
    assert len(result.history) == ROUNDS
    # a death is found by the first call to the dead worker after the kill: the round it was killed
    # in, or, when the kill lands as that round's results are already in, the next one
    retried = [h["round"] for h in result.history for _ in range(h["retries"])]
    assert len(retried) == 2 and retried[0] in (2, 3) and retried[1] in (4, 5), result.history
    assert actors == 4  # two at the start, one replacement per death
    for killer in killers:
        victim_pid = killer.pids[killer.victim]
        assert victim_pid in pids and not running(victim_pid)
    base, _ = undisturbed
    disturbed = held_out_accuracy(result, mnist_test)
    figures["training: undisturbed test accuracy (5 rounds)"] = round(base, 4)
    figures["training: accuracy with worker 1 killed by ray.kill in round 2 and worker 0 by SIGKILL in round 4"] = round(disturbed, 4)
    figures["training: actors started / processes left after the disturbed run"] = f"{actors} / 0"
    assert abs(disturbed - base) <= TOLERANCE, (disturbed, base)


def test_with_max_failures_0_a_dead_worker_stops_training_and_the_model_table_keeps_its_version(
        ray_session, undisturbed, warehouse, mnist_test, figures):
    session = ray_session
    _, kept_result = undisturbed
    session.catalog.add_arrow("previous_model", kept_result.model_table(), "test")
    session.execute("save overwrite previous_model as delta.`ai_model.kept`;")
    path = warehouse / "ai_model" / "kept"
    before = DeltaTable(str(path))
    before_version, before_rows = before.version(), before.to_pyarrow_table().sort_by("start")
    session.execute("load parquet.`%s` as mnist;" % (SAMPLE_MNIST / "train.parquet"))
    script = """--%python
--%input=mnist
--%output=mnist_model
--%num_partitions=2
from pyjava.api.mlsql import RayContext
from mlsql_ray import train

def seed_model():
    from tensorflow.keras import layers, models
    network = models.Sequential([layers.Input((784,)), layers.Dense(512, activation="relu"), layers.Dense(10, activation="softmax")])
    network.compile(optimizer="sgd", loss="categorical_crossentropy", metrics=["accuracy"])
    return network

ray_context = RayContext.connect(globals(), None)
result = train.fit(seed_model, ray_context.data_servers(), rounds=4, batch_size=128, scale=1 / 255, one_hot=10,
                   max_failures=0)
ray_context.build_result(result.model_rows())
-- %%
save overwrite mnist_model as delta.`ai_model.kept`;
"""
    killer = Killer(ray, "ray.kill", victim=0, delay=0)  # a round of 4 000 rows can end within KILL_DELAY_S
    started_before = set(worker_actors())
    with progress.reporting_to(killer), pytest.raises(MLSQLError) as caught:
        session.execute(script)
    message = caught.value.message
    assert killer.killed_while_training
    assert f"training worker 0 died in round {KILL_ROUND} (ActorDiedError" in message and "max_failures=0" in message, message
    assert "mnist_model" not in session.catalog
    after = DeltaTable(str(path))
    assert after.version() == before_version == 0
    assert after.to_pyarrow_table().sort_by("start").equals(before_rows)
    assert [h["version"] for h in after.history()] == [0]
    assert session.execute("!delta history ai_model.kept;")[0].table.column("version").to_pylist() == [0]
    x, _ = mnist_test
    np.testing.assert_allclose(load_model("ai_model.kept", warehouse=warehouse).predict(x[:100], verbose=0),
                               kept_result.model.predict(x[:100], verbose=0), rtol=1e-5, atol=1e-6)
    started = {i: a for i, a in worker_actors().items() if i not in started_before}
    assert len(started) == 2 and all(a["State"] == "DEAD" for a in started.values())
    assert [a for a in worker_actors().values() if a["State"] != "DEAD"] == []  # no worker left at all
    assert eventually(lambda: not any(running(a["Pid"]) for a in started.values() if a.get("Pid")), 30)
    figures["training with max_failures=0: model table version before/after the failed run"] = f"{before_version}/{after.version()}"
