"""Issue 41, part 5 (the local half): a Daft session's selects over a two-node Ray
(``ray.cluster_utils.Cluster``, two raylets of one CPU each, a temp folder each, 127.0.0.1 only)
give the DuckDB session's answers for a global GROUP BY, a big-to-big JOIN, ORDER BY … LIMIT and
COUNT(DISTINCT), and Daft's work ran on both nodes (Ray's task records: its scans and its hash join). The data is on a local
folder both raylets of this machine see (object storage: issue 41's S3 part).

The cluster is a Ray of its own, so it runs in a subprocess with a fresh Daft runner, in a process
group and temp dir of its own, stopped by killing that group.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from test_cluster import stop_group
from test_two_nodes import START_CLUSTER

ROWS, FILES = 400_000, 8

SCRIPT = '''
load parquet.`DATA/facts` as facts;
load parquet.`DATA/others` as others;
select g, count(*) as n, sum(v) as total, min(v) as lo, max(v) as hi from facts group by g as grouped;
select o.c, count(*) as n, sum(f.v) as total, max(o.w) as top from facts f join others o on f.id = o.id
  group by o.c as joined;
select id, v from facts order by v desc, id limit 15 as ranked;
select count(distinct v) as d, count(distinct g) as groups from facts as distinct_values;
'''
ANSWERS = ("grouped", "joined", "ranked", "distinct_values")

DRIVER = r'''
import json
import os
import socket
import sys
import time

import ray
from ray.cluster_utils import Cluster

from mlsql_ray import Session
from mlsql_ray.cluster import ray_internals

out, warehouse, script = sys.argv[1:4]
ANSWERS = json.loads(sys.argv[4])


''' + START_CLUSTER + r'''
os.makedirs(os.path.join(os.environ["RAY_TMPDIR"], "ray"), exist_ok=True)
with ray_internals.single_machine_mode(), ray_internals.minimal_dashboard_agent():
    cluster = start_cluster()
    ray.init(address=cluster.address, log_to_driver=False)
try:
    import daft

    # both sides of the join are big here, but smaller than Daft's broadcast threshold (10 MiB):
    # lowered, the join is a hash join, both sides shuffled between the nodes
    daft.set_execution_config(broadcast_join_size_bytes_threshold=1024)
    answers = {}
    for engine in ("duckdb", "daft"):
        with Session(warehouse=f"{warehouse}/{engine}", sql_engine=engine) as session:
            session.execute(open(script).read())
            answers[engine] = {name: session.table(name).to_pylist() for name in ANSWERS}
    time.sleep(3)  # Ray reports task events about once a second
    actors = {a["ActorID"]: {"class": a["ActorClassName"], "node": a["Address"]["NodeID"]}
              for a in ray_internals.actor_states().values()}
    tasks = [dict(t, actor_class=actors.get(t["actor"], {}).get("class", "")) for t in ray_internals.task_placements()]
    with open(out, "w") as f:
        json.dump({"nodes": [n["NodeID"] for n in ray.nodes() if n["Alive"]], "answers": answers,
                   "tasks": tasks, "actors": list(actors.values())}, f)
finally:
    ray.shutdown()
    cluster.shutdown()
'''


def _data(folder: Path) -> None:
    """Two tables of ROWS rows in FILES parquet files each, joined on ``id`` (every id on both sides)."""
    ids = np.arange(ROWS, dtype=np.int64)
    shuffled = np.random.default_rng(41).permutation(ids)
    for name, table in (("facts", pa.table({"id": ids, "g": ids % 50, "v": (ids * 7919) % 100_003})),
                        ("others", pa.table({"id": shuffled, "c": shuffled % 7, "w": (shuffled * 31) % 1_000}))):
        (folder / name).mkdir(parents=True)
        for i in range(FILES):
            pq.write_table(table.slice(i * ROWS // FILES, ROWS // FILES), folder / name / f"part-{i}.parquet")


def _rows(rows: list[dict]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True) for r in rows)


@pytest.mark.slow  # starts a two-node Ray of its own
def test_daft_selects_on_two_nodes_give_duckdbs_answers(tmp_path: Path):
    _data(tmp_path / "data")
    script, out, driver = tmp_path / "script.mlsql", tmp_path / "report.json", tmp_path / "driver.py"
    script.write_text(SCRIPT.replace("DATA", str(tmp_path / "data")))
    driver.write_text(DRIVER)
    temp_dir = tempfile.mkdtemp(prefix="mlsqlray-", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "MLSQL_RAY_ADDRESS")}
    env.update(RAY_AUTH_MODE="token", RAY_TMPDIR=temp_dir, DAFT_PROGRESS_BAR="0")
    process = subprocess.Popen([sys.executable, str(driver), str(out), str(tmp_path / "wh"), str(script),
                                json.dumps(ANSWERS)], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=900)
    finally:
        stop_group(process)
        shutil.rmtree(temp_dir, ignore_errors=True)
    assert process.returncode == 0, output[-5000:]
    report = json.loads(out.read_text())
    nodes = sorted(report["nodes"])
    assert len(nodes) == 2
    duck, on_daft = report["answers"]["duckdb"], report["answers"]["daft"]
    assert len(duck["grouped"]) == 50 and len(duck["joined"]) == 7 and len(duck["ranked"]) == 15
    assert on_daft["ranked"] == duck["ranked"]  # ordered
    for name in ("grouped", "joined", "distinct_values"):
        assert _rows(on_daft[name]) == _rows(duck[name]), name
    # Daft's plan fragments (its RaySwordfishActor's tasks, named by their operators) ran on both
    # nodes: the scans of the files, and the hash join over the shuffled sides
    fragments = [t for t in report["tasks"] if t["actor_class"] == "RaySwordfishActor" and "." not in t["name"]]
    for operator in ("PhysicalScan", "HashJoin"):
        assert {t["node"] for t in fragments if operator in t["name"]} == set(nodes), (operator, fragments)
