"""Issue 41, part 5, small: bench/bench_daft_cluster.py's driver on a two-node Ray with the data
and the warehouse on the moto S3 server. One of Byzer's SSB scripts (four parquet files per
table) gives the DuckDB session's answers on Daft, Daft's scans ran on both nodes, a result saved as
a Delta table on S3 is read back by polars; a join of two 2 MiB tables as a hash join (both sides
shuffled between the nodes, its fragments on both) gives DuckDB's answer over the same files; then one node is killed halfway through a save into an
existing Delta table: the statement succeeds with the right rows or fails with one MLSQLError, and
then the table keeps its version (the second test: that error's words, from the errors Ray raises). The full scale, the join bigger than the object stores and the
figures are the benchmark's (bench/README.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from bench_daft_cluster import run, same_rows  # noqa: E402 - the benchmark's driver, run small here

FAST_NODE_DEATH = {"RAY_health_check_period_ms": "500", "RAY_health_check_timeout_ms": "500",
                   "RAY_health_check_failure_threshold": "3"}


@pytest.mark.slow  # starts a two-node Ray of its own
def test_daft_on_two_nodes_over_s3_keeps_a_delta_version_when_a_node_dies(tmp_path: Path, s3_server):
    # the GCS declares a silent node dead after 3 missed health checks 0.5 s apart (Ray's defaults: 5
    # missed, 3 s apart), so that the killed node's loss reaches the statement within seconds
    report, output = run(s3_server, tmp_path, "daft-cluster", scale=2, files=4, store_mib=100, join_mib=2,
                         only=["ssb_query04"], timeout=600, ray_env=FAST_NODE_DEATH)
    print(dict(zip(report.get("steps", []), report.get("seconds", []))))
    assert report["returncode"] == 0 and report["steps"][-1] == "done", output[-5000:]
    nodes = set(report["nodes"])
    assert len(nodes) == 2
    ssb = report["ssb"]
    assert list(ssb["answers"]["daft"]) == ["ssb_query04.byzer"]
    for name, expected in ssb["answers"]["duckdb"].items():
        assert expected and same_rows(ssb["answers"]["daft"][name], expected), name
    assert {t["node"] for t in ssb["fragments"] if "Scan" in t["name"]} == nodes, ssb["fragments"]
    assert ssb["saved"]["version"] == 0 and same_rows(ssb["saved"]["rows"], ssb["answers"]["duckdb"]["ssb_query04.byzer"])

    join = report["join"]
    assert join["rows"] == report["join_by_duckdb"] and join["rows"][0][0] > 0, (join["rows"], report["join_by_duckdb"])
    assert {t["node"] for t in join["fragments"] if "HashJoin" in t["name"]} == nodes, join["fragments"]

    kill = report["kill"]
    assert len(kill["alive"]) == 1 and kill["killed_after"] < kill["seconds"] + 5, kill
    (n, revenue), = kill["expected"]
    before, after = kill["before"], kill["after"]
    assert before["rows"] != kill["expected"]  # the killed save would change the table
    if "ok" in kill["outcome"]:  # retried: the new version, with DuckDB's answer
        assert kill["outcome"]["ok"].startswith(f"saved {n} rows of wide"), kill["outcome"]
        assert after == {"version": before["version"] + 1, "rows": [[n, revenue]]}
    else:  # failed: one MLSQLError saying so, and the table as it was
        assert kill["outcome"]["type"] == "MLSQLError", kill["outcome"]
        assert "node" in kill["outcome"]["error"], kill["outcome"]
        assert after == before
    assert kill["next"]["rows"] == kill["expected"], kill["next"]  # the session goes on, on the node left


def test_a_partition_lost_with_its_node_is_one_mlsql_error_saying_so():
    """The benchmark's failing outcome, as Daft's Ray runner raises it (a task error around a task
    error around Ray's object loss): one MLSQLError naming the loss, not Daft's traceback; an error
    that is no loss stays Daft's (the refusal's words)."""
    from ray.core.generated.common_pb2 import ErrorType
    from ray.exceptions import ObjectReconstructionFailedError, RayTaskError

    from mlsql_ray import MLSQLError
    from mlsql_ray.engine.daft.frames import _running

    lost = ObjectReconstructionFailedError("e8df2c7a", ErrorType.OBJECT_UNRECONSTRUCTABLE_RETRIES_DISABLED)
    inner = RayTaskError("HashJoin->RepartitionWrite", "traceback of the join", lost).as_instanceof_cause()
    outer = RayTaskError("RemoteFlotillaRunner.get_next_partition", "traceback of the runner", inner)

    def run():
        raise outer.as_instanceof_cause()

    with pytest.raises(MLSQLError) as raised:
        _running(run)
    message = str(raised.value)
    assert message.startswith("a Ray node (or a worker) died while Daft ran this") and "committed nothing" in message
    assert "ObjectReconstructionFailedError: Failed to retrieve object e8df2c7a" in message
    assert "traceback of" not in message and "\n" not in message

    def fails():
        raise RayTaskError("HashJoin", "traceback", ValueError("a bad cast")).as_instanceof_cause()

    with pytest.raises(MLSQLError, match="Daft failed running this .*--sql-engine duckdb"):
        _running(fails)
