"""Warm workers (mlsql_ray.cluster.warm) on the test run's real Ray (2 CPUs): a second run of the same
shape reuses the first one's actors, each run still builds its own model, and idle actors go on
close, on interrupt, when another job needs their CPUs, and when found dead. A model function's
actors (which ask for no CPU, so go only where they are pinned) are reused only on their node."""

from __future__ import annotations

import os
import signal
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import ray.cloudpickle

from mlsql_ray import progress, train
from mlsql_ray.cluster import ray_internals, warm
from mlsql_ray.models import rows_from_model_file
from mlsql_ray.ml.serving import Predictor, start_predictors
from mlsql_ray.cluster.link import stop_actors

from conftest import SAMPLE_MNIST
from training_helpers import eventually, tiny_partitions

ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import test modules

# Every test here starts Ray actors (training workers, pooled predictors) and most train: seconds
# to a minute each, so the whole file is in the slow tier.
pytestmark = pytest.mark.slow


def seeded_tiny_model():
    """A 4-in, 3-class softmax model with fixed initial weights (seed 3)."""
    import keras

    keras.utils.set_random_seed(3)
    network = keras.Sequential([keras.layers.Input((4,)), keras.layers.Dense(3, activation="softmax")])
    network.compile(optimizer=keras.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return network


def fit_recording_actors(**options) -> tuple[train.TrainResult, list[str]]:
    """A short fit on tiny data, and the ids of the worker actors it trained on."""
    seen: list[str] = []

    def sink(kind, event):
        if kind == "train_start":
            seen.extend(ray_internals.actor_id(a) for a in event["actors"])

    with progress.reporting_to(sink):
        result = train.fit(seeded_tiny_model, tiny_partitions(), rounds=2, batch_size=8, **options)
    return result, seen


def ids(actors) -> set[str]:
    return {ray_internals.actor_id(a) for a in actors}


def dead(actor_ids) -> bool:
    return all(ray_internals.actor_states(i).get("State") == "DEAD" for i in actor_ids)


@pytest.fixture(scope="module")
def three_fits_in_one_pool(ray_runtime, mnist_servers) -> SimpleNamespace:
    """Three fits of one shape in one pool, what was seen along the way kept for the tests below:
    the first on fresh actors (the pool starts empty: a cold run), the second on the first one's,
    the third after one of them was killed (SIGKILL) while idle; then the data-server fits of
    test_a_second_fit_on_the_same_data_servers_... on the actors the third left idle, before the
    pool closes. One sequence for four tests: every fresh worker imports TensorFlow (seconds
    apiece), and the later cases start where the earlier ones end."""
    seen = SimpleNamespace()
    with train.WarmPool() as pool, pool.active():
        seen.cold, seen.cold_actors = fit_recording_actors()
        seen.idle_after_cold = ids(pool.idle_actors())
        seen.warm, seen.warm_actors = fit_recording_actors()
        seen.idle_after_warm = ids(pool.idle_actors())
        victim = pool.idle_actors()[0]
        seen.victim = ray_internals.actor_id(victim)
        os.kill(ray_runtime.get(victim.pid.remote()), signal.SIGKILL)
        seen.victim_died = eventually(lambda: dead([seen.victim]))
        seen.after_death, seen.after_death_actors = fit_recording_actors()
        seen.servers = fits_on_data_servers(pool, mnist_servers)
    seen.all_dead_after_close = eventually(lambda: dead(set(seen.cold_actors) | set(seen.after_death_actors)))
    return seen


def test_a_second_fit_of_the_same_shape_runs_on_the_first_ones_actors(three_fits_in_one_pool):
    seen = three_fits_in_one_pool
    assert seen.idle_after_cold == set(seen.cold_actors)
    assert seen.warm_actors == seen.cold_actors  # worker N again, in the same order
    assert seen.idle_after_warm == set(seen.cold_actors)
    assert seen.all_dead_after_close


def fits_on_data_servers(pool, servers) -> SimpleNamespace:
    """Two fits on the same data servers, then one on other data (the same servers, swapped), in
    ``pool`` (active): which actors ran them, and the partition arrays each worker held after each."""
    def partitions(actors) -> list[int]:
        return ray.get([a.__ray_call__.remote(lambda worker: id(worker.x)) for a in actors])

    def fit(servers) -> None:
        train.fit(small_mnist_model, servers, rounds=1, steps_per_round=1, batch_size=32, scale=1 / 255, one_hot=10)

    seen = SimpleNamespace()
    fit(servers)
    actors = pool.idle_actors()
    seen.first_actors, seen.first = ids(actors), partitions(actors)
    fit(servers)
    seen.second_actors, seen.second = ids(pool.idle_actors()), partitions(actors)
    fit(servers[::-1])
    seen.other_data = partitions(pool.idle_actors())
    return seen


def test_a_second_fit_on_the_same_data_servers_keeps_each_workers_partition(three_fits_in_one_pool):
    """Worker N of the second run is worker N of the first, so the rows it read stay in place
    (the same arrays, not read again); a run on other data reads its own. (On the actors the
    fixture's fits left idle: what is kept is what the last run read, whoever started them.)"""
    seen = three_fits_in_one_pool.servers
    assert len(seen.first_actors) == 2
    assert seen.second_actors == seen.first_actors and seen.second == seen.first
    assert all(now != before for now, before in zip(seen.other_data, seen.first))


def small_mnist_model():
    import keras

    network = keras.Sequential([keras.layers.Input((784,)), keras.layers.Dense(10, activation="softmax")])
    network.compile(optimizer="sgd", loss="categorical_crossentropy")
    return network


def test_the_same_seed_gives_the_same_weights_on_warm_and_cold_actors(three_fits_in_one_pool):
    """Nothing of a run survives in a reused actor: the cold run and the warm one after it train
    from the same initial weights to the same weights."""
    cold, warm = three_fits_in_one_pool.cold, three_fits_in_one_pool.warm
    assert set(three_fits_in_one_pool.warm_actors) == set(three_fits_in_one_pool.cold_actors)
    assert len(warm.weights) == len(cold.weights)
    for got, expected in zip(warm.weights, cold.weights):
        np.testing.assert_array_equal(got, expected)
    assert not np.array_equal(cold.weights[0], seeded_tiny_model().get_weights()[0]), "training moved nothing"


def test_closing_the_session_stops_the_actors_its_cells_kept(ray_session):
    cell = """--%python
from mlsql_ray import train
import numpy as np

def model():
    import keras
    net = keras.Sequential([keras.layers.Input((4,)), keras.layers.Dense(3, activation="softmax")])
    net.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    return net

rng = np.random.default_rng(0)
data = [(rng.random((40, 4), dtype=np.float32), rng.integers(0, 3, 40)) for _ in range(2)]
train.fit(model, data, rounds=1, batch_size=8)
"""
    ray_session.execute(cell)
    kept = ids(ray_session.workers.idle_actors())
    assert len(kept) == 2 and not dead(kept)
    ray_session.execute(cell)
    assert ids(ray_session.workers.idle_actors()) == kept
    ray_session.close()
    assert dead(kept)


def test_an_interrupted_fit_takes_its_actors_and_the_idle_ones_with_it(ray_runtime):
    def interrupt(entry):
        raise KeyboardInterrupt

    with train.WarmPool() as pool, pool.active():
        _, first_actors = fit_recording_actors(cpus_per_worker=0.5)  # 1 CPU in all, left idle
        idle = ids(pool.idle_actors())
        assert idle == set(first_actors)
        with pytest.raises(KeyboardInterrupt):  # another shape, with room beside the idle ones
            fit_recording_actors(cpus_per_worker=0.25, on_round=interrupt)
        assert pool.idle_actors() == []
    assert dead(idle)
    assert eventually(lambda: not [a for a in ray_internals.actor_states().values()
                                   if a.get("State") != "DEAD" and "Worker" in a.get("ActorClassName", "")])


def test_another_job_gets_the_cpus_idle_actors_hold(ray_runtime, run_cli, ray_address, tmp_path):
    """Idle workers hold CPUs of the test Ray (2 in all). Another process's job, a fit of another
    shape, and a Ray task of ours that need them all run: none waits on them. Three fits for the
    three cases: each fit's actors are idle when the next case needs CPUs they hold."""
    ray = ray_runtime
    script = tmp_path / "job.mlsql"
    script.write_text("""--%python
import ray
from pyjava.api.mlsql import RayContext
RayContext.connect(globals(), None)

@ray.remote(num_cpus=1)
def one():
    return 1

assert sum(ray.get([one.remote() for _ in range(2)])) == 2
""")
    with train.WarmPool() as pool, pool.active():
        _, actors = fit_recording_actors()  # two idle 1-CPU workers: every CPU
        assert ids(pool.idle_actors()) == set(actors) and ray.available_resources().get("CPU", 0) < 1
        done = run_cli("run", str(script), "--warehouse", str(tmp_path / "wh"), ray_address=ray_address, timeout=240)
        assert done.returncode == 0, done.stderr[-3000:]
        assert dead(actors)

        _, actors = fit_recording_actors()
        other, halves = fit_recording_actors(cpus_per_worker=0.5)  # another shape: released before asking
        assert other.history and eventually(lambda: dead(actors))

        @ray.remote(num_cpus=2)
        def both_cpus():
            return "ran"

        # the other shape's two idle 0.5-CPU workers hold one CPU: the task needs both
        assert ids(pool.idle_actors()) == set(halves) and ray.available_resources().get("CPU", 0) < 2
        assert ray.get(both_cpus.remote(), timeout=120) == "ran"  # the watcher saw it waiting
        assert pool.idle_actors() == [] and eventually(lambda: dead(halves))


def test_a_pooled_actor_that_died_is_replaced_not_reused(three_fits_in_one_pool):
    seen = three_fits_in_one_pool
    assert seen.victim_died
    assert seen.victim not in seen.after_death_actors
    assert len(set(seen.after_death_actors) & set(seen.cold_actors)) == 1  # the survivor was reused
    assert all(entry["retries"] == 0 for entry in seen.after_death.history)  # no training failure counted


def test_sql_train_runs_its_groups_on_the_last_trains_hosts(ray_session):
    session = ray_session
    session.execute(f"load parquet.`{SAMPLE_MNIST / 'train.parquet'}` as mnist; select * from mnist limit 600 as small;")
    statement = ('train small as RandomForest.`db.rf` where featuresCol="image" and numTrees="5" '
                 'and `fitParam.0.maxDepth`="3" and `fitParam.1.maxDepth`="6" as res;')
    session.execute(statement)  # fitted here (no warm host on this one-machine Ray), hosts started after
    session.workers.settle()
    hosts = ids(session.workers.idle_actors())
    assert len(hosts) == 2
    session.execute(statement)
    assert ids(session.workers.idle_actors()) == hosts
    statuses = [r["value"] for r in session.table("res").to_pylist() if r["name"] == "status"]
    assert statuses == ["success", "success"]
    session.close()
    assert dead(hosts)


def test_sessions_given_one_pool_share_its_actors_and_leave_it_to_its_owner(ray_runtime, tmp_path):
    """``Session(workers=pool)``: closing the session hands its actors to the caller's pool, the next
    session's train runs on them, and they stop when the owner releases the pool."""
    from mlsql_ray import Session

    statement = ('train small as RandomForest.`db.rf` where featuresCol="image" and numTrees="5" '
                 'and `fitParam.0.maxDepth`="3" and `fitParam.1.maxDepth`="6";')
    load = f"load parquet.`{SAMPLE_MNIST / 'train.parquet'}` as mnist; select * from mnist limit 200 as small;"
    with warm.WarmPool() as pool:
        with Session(warehouse=tmp_path / "first", workers=pool) as first:
            first.execute(load + statement)
        pool.settle()  # the hosts started for the next train, once its groups were fitted here
        hosts = ids(pool.idle_actors())
        assert len(hosts) == 2 and not dead(hosts)
        with Session(warehouse=tmp_path / "second", workers=pool) as second:
            second.execute(load + statement)
        assert ids(pool.idle_actors()) == hosts
    assert dead(hosts)


class Pinger:
    """The least a pooled actor is: one that answers the pool's ping."""

    def pid(self) -> int:
        return os.getpid()


def gone_node() -> str:
    """A node id Ray does not know: what a node that died looks like to its scheduler."""
    return os.urandom(28).hex()


def test_pooled_predictors_are_taken_only_for_the_node_they_run_on(ray_runtime):
    here = ray_runtime.get_runtime_context().get_node_id()
    shape = warm.Shape("test.Pinger")
    with train.WarmPool() as pool:
        actor = ray_runtime.remote(Pinger).options(num_cpus=0).remote()
        ray_runtime.get(actor.pid.remote())  # up, as an actor that served is when it is given back:
        pool.give(shape, [actor])            # one still starting has no node yet (CI saw take_on miss it)
        assert pool.take_on(shape, [gone_node()]) == [None]
        assert ids(pool.idle_actors()) == ids([actor])  # still idle, for a run that wants it where it is
        taken, missing = pool.take_on(shape, [here, here])
        assert ids([taken]) == ids([actor]) and missing is None
        pool.give(shape, [taken])
        assert ids(pool.take_on(shape, [None])) == ids([actor])  # None: any node (a one-node cluster)


def test_a_predictor_pinned_to_a_node_that_died_starts_on_a_live_one(ray_runtime, tmp_path):
    """Pinned (hard node affinity), an actor whose node died after the nodes were listed fails at
    once as unschedulable; its replacement loads the model on a live node."""
    path = tmp_path / "tiny.keras"
    seeded_tiny_model().save(path)
    rows = ray_runtime.put(rows_from_model_file(path.read_bytes()))
    actors, widths = start_predictors(ray_runtime, Predictor, 1, [gone_node()], [None], rows, False)
    try:
        assert widths == [4]
        assert ray_internals.actor_node(actors[0]) == ray_runtime.get_runtime_context().get_node_id()
    finally:
        stop_actors(ray_runtime, actors)


def test_a_second_async_fit_runs_on_the_first_ones_workers_and_shards(ray_runtime):
    """Asynchronous training keeps its workers and parameter shards too; the second run starts
    from its own model's initial weights, as the first, cold one (the pool starts empty) did (one
    worker: no race between pushes)."""
    options = dict(mode="async", steps_per_push=2, num_shards=1)
    one_partition = tiny_partitions()[:1]
    with train.WarmPool() as pool, pool.active():
        cold = train.fit(seeded_tiny_model, one_partition, rounds=2, batch_size=8, **options)
        kept = ids(pool.idle_actors())
        warm = train.fit(seeded_tiny_model, one_partition, rounds=2, batch_size=8, **options)
        assert ids(pool.idle_actors()) == kept and len(kept) == 2  # the worker and the shard, reused
    assert eventually(lambda: dead(kept))
    assert len(warm.weights) == len(cold.weights)
    for got, expected in zip(warm.weights, cold.weights):
        np.testing.assert_allclose(got, expected, rtol=1e-6)
