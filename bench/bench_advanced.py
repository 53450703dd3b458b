"""Issue 8's benchmark: resume after a kill, a 4-trial search, async vs sync with a straggler.

    .venv/bin/python bench/bench_advanced.py

1. A 7-round run with a checkpoint every round is killed (SIGKILL of its driver process) during
   round 3, then resumed: rounds of training lost = rounds trained before the kill beyond the last
   checkpoint (target <= 1).
2. A 4-trial search (learning rate x batch size) on sample MNIST, 3 rounds each, scored on the
   held-out images, against the default settings (the compiled rate, batch 128).
3. The seed model, 7 rounds, worker 1 slowed 3x: async parameter servers vs synchronous averaging
   (targets: async >= 0.85 held-out accuracy and finishes sooner), each run on a just-started
   cluster, the two modes alternating --repeats times; medians, since start-up on 2 cores varies
   by seconds from one run to the next.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = Path(__file__).resolve().parent.parent
TRAIN = ROOT / "sample_data" / "mnist" / "train.parquet"
TEST = ROOT / "sample_data" / "mnist" / "test.parquet"

DRIVER = textwrap.dedent("""
    import sys, time
    import ray, pyarrow.parquet as pq
    sys.path.insert(0, {bench!r})
    from mlsql_ray.cluster.link import RayLink
    RayLink({address!r}).ensure()
    from mlsql_ray import train
    import bench_advanced, ray.cloudpickle
    ray.cloudpickle.register_pickle_by_value(bench_advanced)  # workers cannot import bench/
    from bench_advanced import create_tf_model, servers_of
    train.fit(create_tf_model, servers_of(ray, pq.read_table({train!r})), rounds=7, batch_size=128,
              scale=1 / 255, one_hot=10, checkpoints=train.Checkpoints("bench.ckpt", warehouse={warehouse!r}),
              on_round=lambda e: print(f"ROUND {{e['round']}} {{time.time()}}", flush=True))
""")


def create_tf_model():
    from tensorflow.keras import layers, models

    network = models.Sequential([layers.Input((784,)), layers.Dense(512, activation="relu"), layers.Dense(10, activation="softmax")])
    network.compile(optimizer="sgd", loss="categorical_crossentropy", metrics=["accuracy"])
    return network


def servers_of(ray, table):
    from mlsql_ray.cells.context import DataServer

    half = table.num_rows // 2
    return [DataServer(ray.put(table.slice(0, half).combine_chunks()), 0, half),
            DataServer(ray.put(table.slice(half).combine_chunks()), 1, table.num_rows - half)]


def accuracy(result, test) -> float:
    x, y = test
    return float((result.model.predict(x, verbose=0).argmax(axis=1) == y).mean())


def resume_after_kill(ray, servers, warehouse: str) -> str:
    from mlsql_ray import train

    checkpoints = train.Checkpoints("bench.ckpt", warehouse=warehouse)
    script = DRIVER.format(bench=str(Path(__file__).parent), address=ray.get_runtime_context().gcs_address,
                           train=str(TRAIN), warehouse=warehouse)
    driver = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, start_new_session=True)
    rounds_done, round_times = 0, []
    for line in driver.stdout:
        if line.startswith("ROUND"):
            rounds_done = int(line.split()[1])
            round_times.append(float(line.split()[2]))
            if rounds_done == 2:
                break
    while 2 not in checkpoints.rounds():
        time.sleep(0.05)
    round_seconds = round_times[1] - round_times[0]
    time.sleep(max(0.0, round_times[1] + round_seconds / 2 - time.time()))  # halfway through round 3
    os.killpg(driver.pid, signal.SIGKILL)
    killed_at = 2 + (time.time() - round_times[1]) / round_seconds
    driver.wait()
    saved = checkpoints.rounds()[-1]
    started = time.perf_counter()
    result = train.fit(create_tf_model, servers, rounds=7, batch_size=128, scale=1 / 255, one_hot=10,
                       checkpoints=checkpoints, resume=True)
    resumed_s = time.perf_counter() - started
    trained_after = len([h for h in result.history if h["round"] > saved])
    lost = killed_at - saved
    return (f"killed at round {killed_at:.2f} (last checkpoint: round {saved}); resumed run trained rounds "
            f"{saved + 1}..7 ({trained_after} rounds, {resumed_s:.1f} s incl. starting workers); rounds of work lost: "
            f"{lost:.1f} (target <= 1); one round takes {round_seconds:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="sync/async runs of part 3 each (medians)")
    args = parser.parse_args()
    import pyarrow.parquet as pq

    from mlsql_ray import train
    from mlsql_ray.cluster.link import local_cpus, start_local_ray
    import ray

    sys.path.insert(0, str(ROOT / "tests"))
    from training_helpers import STRAGGLERS  # a test's worker classes: worker 1 slowed 3x

    start_local_ray(num_cpus=min(2, local_cpus()), logging_level="ERROR")
    servers = servers_of(ray, pq.read_table(TRAIN))
    test_table = pq.read_table(TEST)
    test = train.Columns(scale=1 / 255)(test_table)
    with tempfile.TemporaryDirectory() as warehouse:
        print("1.", resume_after_kill(ray, servers, warehouse))

    started = time.perf_counter()
    found = train.search(create_tf_model, servers, {"learning_rate": [0.01, 0.05], "batch_size": [64, 128]},
                         rounds=3, validation=test_table, prepare=train.Columns(scale=1 / 255, one_hot=10),
                         metric="val_accuracy")
    search_s = time.perf_counter() - started
    default = train.fit(create_tf_model, servers, rounds=3, batch_size=128, scale=1 / 255, one_hot=10)
    print(f"2. 4-trial search: {search_s:.0f} s on 2 CPUs; trials:")
    for row in found.table.to_pylist():
        print(f"   lr {row['learning_rate']}, batch {row['batch_size']}: val_accuracy {row['val_accuracy']:.4f}, "
              f"{row['rounds_run']} rounds, {row['status']}")
    print(f"   best {found.best_config} val_accuracy {found.best_metrics['val_accuracy']:.4f} vs default settings "
          f"{accuracy(default, test):.4f}")

    runs: dict[str, list[tuple[float, float, float]]] = {"sync": [], "async": []}
    for _ in range(args.repeats):
        for mode in ("sync", "async"):
            ray.shutdown()  # every run gets a just-started cluster (outside the timing), as the others did
            start_local_ray(num_cpus=min(2, local_cpus()), logging_level="ERROR")
            servers = servers_of(ray, pq.read_table(TRAIN))
            started = time.perf_counter()
            result = train.fit(create_tf_model, servers, rounds=7, batch_size=128, scale=1 / 255, one_hot=10,
                               mode=mode, worker_class=STRAGGLERS[mode])
            wall = time.perf_counter() - started
            training = wall - result.startup_seconds
            runs[mode].append((wall, training, accuracy(result, test)))
            extra = (f", steps per worker {result.history[-1]['worker_steps']}, pushes dropped as stale "
                     f"{result.history[-1]['dropped_pushes']}" if mode == "async" else "")
            print(f"3. {mode:5s} with worker 1 slowed 3x: {wall:.1f} s (after start-up {training:.1f} s), "
                  f"held-out accuracy {runs[mode][-1][2]:.4f}{extra}", flush=True)
    for mode, measured in runs.items():
        print(f"   {mode:5s} median of {len(measured)}: {statistics.median(m[0] for m in measured):.1f} s "
              f"({statistics.median(m[1] for m in measured):.1f} s after start-up), accuracy "
              f"{statistics.median(m[2] for m in measured):.4f}")
    ray.shutdown()


if __name__ == "__main__":
    main()
