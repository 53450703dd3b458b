"""Beyond one machine: a two-node Ray cluster (``ray.cluster_utils.Cluster``, two raylets of one
CPU each, 127.0.0.1 only, token authentication on) runs a training cell and a registered model
function with workers on both nodes (each predictor scoring batches where it runs, and reused
from the warm pool on its node), and each training worker reads its partition from the files on
its own node: the data servers are descriptions of what to read, not objects, and Ray's object
store never holds a copy of the data.

The cluster is a Ray of its own, so it runs in a subprocess (the test run keeps its one Ray),
in a process group and temp dir of its own, stopped by killing that group.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from test_cluster import stop_group

TEST_PARQUET = Path(__file__).resolve().parent.parent / "sample_data" / "mnist" / "test.parquet"

SCRIPT = '''
load parquet.`PARQUET` as mnist;
-- %%
--%python
--%input=mnist
--%output=model
import json

import ray
from pyjava.api.mlsql import RayContext
from tensorflow.keras import layers, models, optimizers

from mlsql_ray import train
from mlsql_ray.cluster import ray_internals

rc = RayContext.connect(globals(), None)
servers = rc.data_servers()


def create():
    network = models.Sequential([layers.Input((784,)), layers.Dense(10, activation="softmax")])
    network.compile(optimizer=optimizers.Adam(0.005), loss="categorical_crossentropy", metrics=["accuracy"])
    return network


result = train.fit(create, servers, rounds=1, batch_size=32, scale=1 / 255, one_hot=10)
store_bytes, _ = ray_internals.object_store_usage(ray.get_runtime_context().gcs_address)
with open("SEEN", "w") as f:
    json.dump([{"rows": s.num_rows, "plan": type(s.plan).__name__, "worker_samples": w["samples"],
                "store_bytes": store_bytes} for s, w in zip(servers, result.history[-1]["workers"])], f)
rc.build_result(result.model_table())
-- %%
save overwrite model as delta.`ai_model.digits`;
register tf.`ai_model.digits` as digit where scale="1/255" and output="argmax" and workers="2";
select digit(image) as p, label from mnist as scored;
unregister tf.`digit`;
register tf.`ai_model.digits` as again where scale="1/255" and output="argmax" and workers="2";
select again(image) as p, label from mnist as scored_again;
'''

DRIVER = r'''
import json
import socket
import sys
import time

import ray
from ray.cluster_utils import Cluster

from mlsql_ray import Session
from mlsql_ray.cluster import ray_internals

out, warehouse, script = sys.argv[1:4]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def node_args() -> dict:
    """One CPU on 127.0.0.1, every agent port fixed: left to chance, a raylet waits for its agents
    to report theirs and, on a busy machine, gives up."""
    ports = ("metrics_export_port", "metrics_agent_port", "dashboard_agent_listen_port", "runtime_env_agent_port")
    return {"num_cpus": 1, "node_ip_address": "127.0.0.1", **{name: free_port() for name in ports}}


def start_cluster() -> Cluster:
    for attempt in range(3):  # Ray's 30 s start-up wait can run out on a loaded machine
        cluster = Cluster()
        try:
            cluster.add_node(include_dashboard=False, **node_args())
            cluster.add_node(**node_args())
            cluster.wait_for_nodes()
            return cluster
        except Exception as exc:  # noqa: BLE001 - Ray raises a bare Exception for this
            cluster.shutdown()
            if "timed out during startup" not in str(exc) or attempt == 2:
                raise


# every raylet on 127.0.0.1 only, its dashboard agent minimal even with ray[default] installed
with ray_internals.single_machine_mode(), ray_internals.minimal_dashboard_agent():
    cluster = start_cluster()
    ray.init(address=cluster.address, log_to_driver=False)
try:
    with Session(warehouse=warehouse) as session:
        session.execute(open(script).read())
        scored = session.table("scored").to_pylist()
        scored_again = session.table("scored_again").to_pylist()
        actors = [{"id": a["ActorID"], "class": a["ActorClassName"], "node": a["Address"]["NodeID"]}
                  for a in ray_internals.actor_states().values()]
        predictors = {a["id"] for a in actors if a["class"] == "Predictor"}
        deadline = time.monotonic() + 60
        while True:  # Ray reports task events about once a second
            batches = [t for t in ray_internals.task_placements() if t["name"] == "Predictor.predict"]
            if {t["actor"] for t in batches} >= predictors or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    with open(out, "w") as f:
        json.dump({"nodes": [n["NodeID"] for n in ray.nodes() if n["Alive"]], "actors": actors, "scored": scored,
                   "scored_again": scored_again, "batches": batches}, f)
finally:
    ray.shutdown()
    cluster.shutdown()
'''


@pytest.mark.slow  # starts a two-node Ray of its own
def test_workers_on_two_nodes_read_their_partitions_themselves(tmp_path: Path):
    seen, out = tmp_path / "seen.json", tmp_path / "report.json"
    script = tmp_path / "two_nodes.mlsql"
    script.write_text(SCRIPT.replace("PARQUET", str(TEST_PARQUET)).replace("SEEN", str(seen)))
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    temp_dir = tempfile.mkdtemp(prefix="mlsqlray-", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "MLSQL_RAY_ADDRESS")}
    env.update(RAY_AUTH_MODE="token", RAY_TMPDIR=temp_dir)  # its address file stays in its own temp dir
    process = subprocess.Popen([sys.executable, str(driver), str(out), str(tmp_path / "warehouse"), str(script)],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    try:
        output, _ = process.communicate(timeout=300)
    finally:
        stop_group(process)
        shutil.rmtree(temp_dir, ignore_errors=True)
    assert process.returncode == 0, output[-5000:]
    report, servers = json.loads(out.read_text()), json.loads(seen.read_text())
    source = pq.read_table(TEST_PARQUET)

    assert len(report["nodes"]) == 2
    # one training worker per node, each trained on exactly its partition's rows ...
    workers = [a["node"] for a in report["actors"] if a["class"] == "Worker"]
    assert sorted(workers) == sorted(report["nodes"]), report["actors"]
    assert [s["worker_samples"] for s in servers] == [s["rows"] for s in servers] == [1000, 1000]
    # ... which it read from the files where it runs: the handles are descriptions of what to
    # read, and the object store (of both nodes) held not even half a partition (0.8 MB each);
    # what it holds is the run's weights
    assert {s["plan"] for s in servers} == {"FileRows"}
    assert servers[0]["store_bytes"] < source.nbytes / 4, servers
    # the registered function's two actors are one on each node (pinned there: Ray would put a
    # zero-CPU actor on a random node), and each scored batches of rows where it runs
    predictors = {a["id"]: a["node"] for a in report["actors"] if a["class"] == "Predictor"}
    assert sorted(predictors.values()) == sorted(report["nodes"]), report["actors"]
    assert {t["actor"] for t in report["batches"]} == set(predictors), report["batches"]
    assert all(t["node"] == predictors[t["actor"]] for t in report["batches"]), report["batches"]
    assert [r["label"] for r in report["scored"]] == source.column("label").to_pylist()
    # registered again, the function took the same two actors from the warm pool (no third one
    # above), each for the node it is on
    assert report["scored_again"] == report["scored"]
    accuracy = sum(r["p"] == r["label"] for r in report["scored"]) / len(report["scored"])
    assert accuracy > 0.5  # one epoch of a linear model on 2 000 images: far above chance (0.1)
