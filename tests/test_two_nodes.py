"""Beyond one machine (issue 26 item 5): a two-node Ray cluster (``ray.cluster_utils.Cluster``,
two raylets of one CPU each, each with a temp folder of its own, 127.0.0.1 only, token
authentication on) whose warehouse and data are on an S3 server (moto, tests/s3_server.py): no
local path reaches a worker. A training cell and a SQL ``train … as KerasClassifier`` run with a
worker on each node, and each worker reads its partition from S3 itself: the data servers are
descriptions of the S3 files to read, not objects, and Ray's object store never holds a copy of
the data. Both models are saved to the S3 warehouse, ``register``ed from there and scored by
predictors on both nodes (each scoring batches where it runs; the cell's reused from the warm
pool on its node).

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

import s3_server as s3
from test_cluster import stop_group

TEST_PARQUET = Path(__file__).resolve().parent.parent / "sample_data" / "mnist" / "test.parquet"
PREFIX = "two-nodes"  # of the test bucket: the data and the warehouse

# run in two parts: the object store is measured after the SQL train, before any model is loaded
TRAINING = '''
load parquet.`MNIST` as mnist;
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


def pieces(plan):
    return [(type(p).__name__, getattr(p.filesystem, "base_fs", p.filesystem).type_name, [f.path for f in p.fragments],
             [p.start, p.stop]) for p in getattr(plan, "pieces", ())]


result = train.fit(create, servers, rounds=1, batch_size=32, scale=1 / 255, one_hot=10)
store_bytes, _ = ray_internals.object_store_usage(ray.get_runtime_context().gcs_address)
with open("SEEN", "w") as f:
    json.dump([{"rows": s.num_rows, "plan": type(s.plan).__name__, "pieces": pieces(s.plan),
                "worker_samples": w["samples"], "store_bytes": store_bytes}
               for s, w in zip(servers, result.history[-1]["workers"])], f)
rc.build_result(result.model_table())
-- %%
save overwrite model as delta.`ai_model.digits`;
train mnist as KerasClassifier.`ai_model.sql_digits` where featuresCol="image" and labelCol="label" and layers="16"
    and epochs="1" and batchSize="32" and learningRate="0.1" and scale="1/255" and workers="2" as trained;
'''

SCORING = '''
register tf.`ai_model.digits` as digit where scale="1/255" and output="argmax" and workers="2";
select digit(image) as p, label from mnist as scored;
unregister tf.`digit`;
register tf.`ai_model.digits` as again where scale="1/255" and output="argmax" and workers="2";
select again(image) as p, label from mnist as scored_again;
register KerasClassifier.`ai_model.sql_digits` as sql_digit where workers="2";
select sql_digit(image) as p, label from mnist as sql_scored;
'''

#: the two-node cluster's start, for the drivers of this test and bench/bench_daft_cluster.py
START_CLUSTER = r'''def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def node_args(index: int) -> dict:
    """One CPU on 127.0.0.1, a temp folder of its own, every agent port fixed: left to chance, a
    raylet waits for its agents to report theirs and, on a busy machine, gives up."""
    ports = ("metrics_export_port", "metrics_agent_port", "dashboard_agent_listen_port", "runtime_env_agent_port")
    return {"num_cpus": 1, "node_ip_address": "127.0.0.1", "temp_dir": os.path.join(os.environ["RAY_TMPDIR"], f"n{index}"),
            **{name: free_port() for name in ports}}


def start_cluster(**options) -> Cluster:
    """Two nodes, each with ``options`` too (e.g. ``object_store_memory``)."""
    for attempt in range(5):  # Ray's 30 s start-up wait (fixed) can run out on a loaded machine
        cluster = Cluster()
        try:
            cluster.add_node(include_dashboard=False, **node_args(0), **options)
            cluster.add_node(**node_args(1), **options)
            cluster.wait_for_nodes()
            return cluster
        except Exception as exc:  # noqa: BLE001 - Ray raises a bare Exception for this
            cluster.shutdown()
            if "timed out during startup" not in str(exc) or attempt == 4:
                raise

'''

DRIVER = r'''
import json
import os
import socket
import sys
import time

import ray
from ray.cluster_utils import Cluster

from mlsql_ray import Session
from mlsql_ray.cells.partitions import FileRows
from mlsql_ray.cluster import ray_internals

out, warehouse, training, scoring = sys.argv[1:5]


''' + START_CLUSTER + r'''
def fed(worker):
    """What a warm training worker read last: its node, the files of its partition, its rows."""
    key = getattr(worker, "source_key", None)
    if key is None:
        return None
    plans = [p for p in key[0] if isinstance(p, FileRows)]
    pieces = [(type(p).__name__, getattr(p.filesystem, "base_fs", p.filesystem).type_name, [f.path for f in p.fragments],
               [p.start, p.stop]) for plan in plans for p in plan.pieces]
    return {"node": ray.get_runtime_context().get_node_id(), "plans": [type(p).__name__ for p in key[0]],
            "prepare": type(key[1]).__name__, "pieces": pieces, "rows": len(worker.x)}


# the cluster's address file goes to Ray's default temp folder, which no node has made now
os.makedirs(os.path.join(os.environ["RAY_TMPDIR"], "ray"), exist_ok=True)
# every raylet on 127.0.0.1 only, its dashboard agent minimal even with ray[default] installed
with ray_internals.single_machine_mode(), ray_internals.minimal_dashboard_agent():
    cluster = start_cluster()
    ray.init(address=cluster.address, log_to_driver=False)
try:
    gcs = ray.get_runtime_context().gcs_address
    with Session(warehouse=warehouse) as session:
        session.execute(open(training).read())
        trained = {r["name"]: r["value"] for r in session.table("trained").to_pylist()}
        store_bytes, _ = ray_internals.object_store_usage(gcs)
        workers = [w for w in ray.get([a.__ray_call__.remote(fed) for a in session.workers.idle_actors()]) if w]
        session.execute(open(scoring).read())
        tables = {name: session.table(name).to_pylist() for name in ("scored", "scored_again", "sql_scored")}
        functions = {name: [ray_internals.actor_id(a) for a in f.actors]
                     for name, f in session.model_functions.functions.items()}
        actors = [{"id": a["ActorID"], "class": a["ActorClassName"], "node": a["Address"]["NodeID"]}
                  for a in ray_internals.actor_states().values()]
        predictors = {i for ids in functions.values() for i in ids}
        deadline = time.monotonic() + 60
        while True:  # Ray reports task events about once a second
            tasks = ray_internals.task_placements()
            batches = [t for t in tasks if t["name"] == "Predictor.predict"]
            if {t["actor"] for t in batches} >= predictors or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    with open(out, "w") as f:
        json.dump({"nodes": [n["NodeID"] for n in ray.nodes() if n["Alive"]], "actors": actors, **tables,
                   "trained": trained, "store_bytes": store_bytes, "workers": workers, "functions": functions,
                   "batches": batches, "setups": [t for t in tasks if t["name"] == "Worker.setup"]}, f)
finally:
    ray.shutdown()
    cluster.shutdown()
'''


@pytest.mark.slow  # starts a two-node Ray of its own
def test_workers_on_two_nodes_read_their_partitions_from_s3(tmp_path: Path, s3_server):
    seen, out = tmp_path / "seen.json", tmp_path / "report.json"
    data_key = f"{PREFIX}/data/mnist/test.parquet"
    s3_server.client().upload_file(str(TEST_PARQUET), s3.BUCKET, data_key)
    training, scoring = tmp_path / "training.mlsql", tmp_path / "scoring.mlsql"
    training.write_text(TRAINING.replace("MNIST", f"s3://{s3.BUCKET}/{data_key}").replace("SEEN", str(seen)))
    scoring.write_text(SCORING)
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    temp_dir = tempfile.mkdtemp(prefix="mlsqlray-", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "MLSQL_RAY_ADDRESS")}
    env.update(RAY_AUTH_MODE="token", RAY_TMPDIR=temp_dir)  # its address file stays in its own temp dir
    env.update(s3_server.env)  # the driver's, and so its raylets' and workers': S3's address and keys
    warehouse = f"s3://{s3.BUCKET}/{PREFIX}/warehouse"
    process = subprocess.Popen([sys.executable, str(driver), str(out), warehouse, str(training), str(scoring)],
                               env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    try:
        output, _ = process.communicate(timeout=300)
    finally:
        stop_group(process)
        shutil.rmtree(temp_dir, ignore_errors=True)
    assert process.returncode == 0, output[-5000:]
    report, servers = json.loads(out.read_text()), json.loads(seen.read_text())
    source = pq.read_table(TEST_PARQUET)
    nodes = sorted(report["nodes"])
    assert len(nodes) == 2
    # each partition is one piece: a row range of the S3 file, the first half or the second
    halves = [[["FragmentRows", "s3", [f"{s3.BUCKET}/{data_key}"], rows]] for rows in ([0, 1000], [1000, 2000])]

    # the cell: one training worker per node, each trained on exactly its partition's rows ...
    workers = [a["node"] for a in report["actors"] if a["class"] == "Worker"]
    assert sorted(workers) == nodes, report["actors"]
    assert [s["worker_samples"] for s in servers] == [s["rows"] for s in servers] == [1000, 1000]
    # ... which it read from S3 where it runs: the handles are descriptions of the S3 file to
    # read, and the object store (of both nodes) held not even half a partition (0.8 MB each);
    # what it holds is the run's weights
    assert [(s["plan"], s["pieces"]) for s in servers] == [("FileRows", half) for half in halves], servers
    assert servers[0]["store_bytes"] < source.nbytes / 4, servers

    # the SQL train: its two workers (the cell's, warm) set up on both nodes (Ray's task records)
    # and each read its half of the table from S3 itself (what each warm worker holds)
    assert report["trained"]["status"] == "success", report["trained"]
    assert sorted(w["node"] for w in report["workers"]) == nodes, report["workers"]
    assert sorted((w["plans"], w["prepare"], w["pieces"], w["rows"]) for w in report["workers"]) == \
        [(["FileRows"], "LabelledRows", half, 1000) for half in halves], report["workers"]
    assert {t["node"] for t in report["setups"]} == set(nodes), report["setups"]
    assert report["store_bytes"] < source.nbytes / 4, report["store_bytes"]
    # both models are Delta tables in the S3 warehouse (listed through boto3)
    for table in ("digits", "sql_digits"):
        log = s3_server.keys(f"{PREFIX}/warehouse/ai_model/{table}/_delta_log/")
        assert any(key.endswith(".json") for key in log), (table, log)

    # each registered function's two actors are one on each node (pinned there: Ray would put a
    # zero-CPU actor on a random node), and each scored batches of rows where it runs
    nodes_of = {a["id"]: a["node"] for a in report["actors"]}
    assert set(report["functions"]) == {"again", "sql_digit"}
    for name, actors in report["functions"].items():
        assert sorted(nodes_of[a] for a in actors) == nodes, (name, report["actors"])
        assert {t["actor"] for t in report["batches"]} >= set(actors), (name, report["batches"])
    assert all(t["node"] == nodes_of[t["actor"]] for t in report["batches"]), report["batches"]
    labels = source.column("label").to_pylist()
    assert [r["label"] for r in report["scored"]] == [r["label"] for r in report["sql_scored"]] == labels
    # registered again, the cell's model took the same two actors from the warm pool (no third
    # predictor of its kind: two for the cell's model, two for the SQL one), each on its node
    assert report["scored_again"] == report["scored"]
    assert len([a for a in report["actors"] if a["class"] == "Predictor"]) == 4, report["actors"]
    for scored in ("scored", "sql_scored"):  # one epoch on 2 000 images: far above chance (0.1)
        assert sum(r["p"] == r["label"] for r in report[scored]) / len(labels) > 0.5, scored
