"""Issue 41's proof beyond one machine: a Daft session on a two-node Ray
(``ray.cluster_utils.Cluster``, one CPU and a temp folder each, 127.0.0.1 only) with its data and
warehouse on the moto S3 server (tests/s3_server.py).

    .venv/bin/python bench/bench_daft_cluster.py [--scale K] [--files F] [--store-mib M] [--join-mib J]

1. SSB: Byzer's 13 scripts over SSB's tables scaled K times (lineorder's rows copied with new
   order keys; every table in F parquet files on S3), run by a DuckDB session and by a Daft
   session: the same answers; Daft's scans ran on both nodes (Ray's task records). The Daft
   session saves a result as a Delta table on S3, read back by polars (``read_delta``) in a
   process of its own.
2. Per-node memory (with ``--join-mib``): two tables of J MiB each in Arrow memory, on S3, joined
   by Daft (a hash join: both sides shuffled) and aggregated, each node's object store M MiB:
   sizes, Ray's spill figures and the wall time.
3. Node loss: a Daft save into an existing Delta table, one node killed (``cluster.remove_node``,
   its raylet's processes) halfway: what the statement did (its answer, or its error and how
   long it took), and the table's version and rows afterwards.

Everything runs in a subprocess (a Ray of its own, in a process group of its own, stopped by
killing that group); ``tests/test_daft_cluster.py`` runs the same driver small.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path.insert(0, str(TESTS))

import s3_server as s3  # noqa: E402 - the tests' S3 server and two-node cluster, not copies
from test_cluster import stop_group  # noqa: E402
from test_two_nodes import START_CLUSTER  # noqa: E402

SSB = TESTS / "fixtures" / "ssb"
SSB_TABLES = ("lineorder", "dates", "part", "supplier", "customer")

WIDE = """select LO_ORDERKEY, LO_LINENUMBER, LO_REVENUE, LO_SUPPLYCOST, D_YEAR, P_BRAND, S_NATION
from lineorder join dates on LO_ORDERDATE = D_DATEKEY join part on LO_PARTKEY = P_PARTKEY
join supplier on LO_SUPPKEY = S_SUPPKEY"""


def saves() -> dict[str, str]:
    """The node-loss step's statements (the last SSB script's tables loaded: all but customer): a first save
    (Daft's workers import their Delta writer), the whole join saved (timed: the version that must
    stay), the join without 1992 saved while a node dies, and DuckDB's answer for that one."""
    wide = WIDE.replace("\n", " ")
    save = "save overwrite wide as delta.`ssb.wide`;"
    return {"warm": f"{wide} where D_YEAR = 1994 as wide;\n{save}", "before": f"{wide} as wide;\n{save}",
            "killed": f"{wide} where D_YEAR > 1992 as wide;\n{save}",
            "expected": f"select count(*) as n, sum(LO_REVENUE) as revenue from ({wide} where D_YEAR > 1992) as wide_expected;"}

DRIVER = r'''
import json
import os
import socket
import subprocess
import sys
import threading
import time
import traceback

import ray
from ray.cluster_utils import Cluster

from mlsql_ray import MLSQLError, Session
from mlsql_ray.cluster import ray_internals

started = time.perf_counter()
config = json.load(open(sys.argv[1]))
report = {"steps": []}


def write():
    with open(config["out"], "w") as f:
        json.dump(report, f, default=str)


def step(name):
    report["steps"].append(name)
    report.setdefault("seconds", []).append(round(time.perf_counter() - started, 1))
    print(time.strftime("%H:%M:%S"), name, flush=True)
    write()


def fragments():
    """Daft's plan fragments (its RaySwordfishActor's tasks, named by their operators) and their nodes."""
    time.sleep(3)  # Ray reports task events about once a second
    actors = {a["ActorID"]: a["ActorClassName"] for a in ray_internals.actor_states().values()}
    return [t for t in ray_internals.task_placements() if actors.get(t["actor"]) == "RaySwordfishActor"]


def rows(session, name):
    return [list(r.values()) for r in session.table(name).to_pylist()]


def polars_read(uri, sql):
    """``sql`` over the Delta table at ``uri``, read by polars in a process of its own (and its version)."""
    code = ("import json, sys, polars as pl, deltalake\n"
            "uri, sql = sys.argv[1:3]\n"
            "ctx = pl.SQLContext(t=pl.read_delta(uri).lazy())\n"
            "print(json.dumps({'version': deltalake.DeltaTable(uri).version(),"
            " 'rows': ctx.execute(sql).collect().rows()}, default=str))\n")
    done = subprocess.run([sys.executable, "-c", code, uri, sql], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout)


''' + START_CLUSTER + r'''
os.makedirs(os.path.join(os.environ["RAY_TMPDIR"], "ray"), exist_ok=True)
with ray_internals.single_machine_mode(), ray_internals.minimal_dashboard_agent():
    cluster = start_cluster(object_store_memory=config["store_bytes"])
    ray.init(address=cluster.address, log_to_driver=False)
gcs = ray.get_runtime_context().gcs_address
try:
    import daft

    report["nodes"] = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
    report["head"] = cluster.head_node.node_id
    step("cluster")
    warehouse = config["warehouse"]
    duck = Session(warehouse=f"{warehouse}/duckdb")
    on_daft = Session(warehouse=f"{warehouse}/daft", sql_engine="daft")
    # 1. SSB on both engines
    answers, seconds = {"duckdb": {}, "daft": {}}, {"duckdb": 0.0, "daft": 0.0}
    for name, text, final in config["ssb"]:
        for engine, session in (("duckdb", duck), ("daft", on_daft)):
            start = time.perf_counter()
            session.execute(text, name)
            answers[engine][name] = rows(session, final)
            seconds[engine] += time.perf_counter() - start
    report["ssb"] = {"answers": answers, "seconds": seconds}
    saved = config["ssb"][-1][2]
    on_daft.execute(f"save overwrite {saved} as delta.`ssb.{saved}`;")
    report["ssb"]["saved"] = {"script": config["ssb"][-1][0], **polars_read(f"{warehouse}/daft/ssb/{saved}", "select * from t")}
    report["ssb"]["fragments"] = fragments()
    step("ssb")

    # 2. a join bigger than the object stores
    if config["join"]:
        before = ray_internals.store_stats(gcs)
        daft.set_execution_config(broadcast_join_size_bytes_threshold=1024)  # a hash join: both sides shuffled
        start = time.perf_counter()
        on_daft.execute(config["join"])
        joined = rows(on_daft, "joined")
        report["join"] = {"seconds": time.perf_counter() - start, "rows": joined, "before": before,
                          "after": ray_internals.store_stats(gcs), "fragments": fragments(),
                          "summary": ray_internals.memory_summary(gcs)}
        step("join")

    # 3. a node lost in the middle of a save into an existing Delta table
    target = f"{warehouse}/daft/ssb/wide"
    check = "select count(*) as n, sum(LO_REVENUE) as revenue from t"
    on_daft.execute(config["saves"]["warm"])  # Daft's workers import their Delta writer
    start = time.perf_counter()
    on_daft.execute(config["saves"]["before"])
    kill = {"before_seconds": time.perf_counter() - start, "before": polars_read(target, check)}
    duck.execute(config["saves"]["expected"])
    kill["expected"] = rows(duck, "wide_expected")
    victim = next(iter(cluster.worker_nodes))
    delay = kill["before_seconds"] * config["kill_at"]

    def remove():
        time.sleep(delay)
        kill["killed_after"] = time.perf_counter() - start
        cluster.remove_node(victim, allow_graceful=False)  # its raylet and workers, SIGKILLed

    killer = threading.Thread(target=remove, daemon=True)
    step("killing")
    start = time.perf_counter()
    killer.start()
    try:
        result = on_daft.execute(config["saves"]["killed"])[-1]
        kill["outcome"] = {"ok": result.message}
    except MLSQLError as exc:
        kill["outcome"] = {"error": str(exc), "type": type(exc).__name__}
    except BaseException as exc:  # noqa: BLE001 - what the user would see, reported
        kill["outcome"] = {"error": str(exc), "type": type(exc).__module__ + "." + type(exc).__name__,
                           "traceback": traceback.format_exc()}
    kill["seconds"] = time.perf_counter() - start
    killer.join()
    kill["after"] = polars_read(target, check)
    deadline = time.monotonic() + 60
    while len(kill.setdefault("alive", report["nodes"])) > 1 and time.monotonic() < deadline:
        time.sleep(0.5)  # the GCS marks the node dead when its heartbeats stop
        kill["alive"] = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
    step("killed")
    start = time.perf_counter()
    try:  # the session after the loss: the same select on the node left
        on_daft.execute(config["saves"]["expected"])
        kill["next"] = {"rows": rows(on_daft, "wide_expected")}
    except Exception as exc:  # noqa: BLE001 - reported
        kill["next"] = {"error": f"{type(exc).__name__}: {exc}"}
    kill["next"]["seconds"] = time.perf_counter() - start
    report["kill"] = kill
    step("done")
finally:
    write()
    ray.shutdown()
    cluster.shutdown()
'''


def scaled_ssb(folder: Path, scale: int, files: int) -> None:
    """SSB's tables in ``folder``: lineorder's rows ``scale`` times (each copy's order keys moved
    past the last), the others as they are; each table in ``files`` parquet files."""
    import duckdb

    con = duckdb.connect()
    for table in SSB_TABLES:
        source = f"read_parquet('{SSB / 'data' / table}/*.parquet')"
        if table == "lineorder":
            source = (f"(SELECT * REPLACE (LO_ORDERKEY + copy * 10000000 AS LO_ORDERKEY) "
                      f"FROM {source}, range({scale}) AS copies(copy))")
        (folder / table).mkdir(parents=True)
        con.execute(f"CREATE TABLE {table} AS SELECT *, row_number() OVER () % {files} AS part_of FROM {source}")
        for i in range(files):
            con.execute(f"COPY (SELECT * EXCLUDE (part_of) FROM {table} WHERE part_of = {i}) "
                        f"TO '{folder / table / f'part-{i}.parquet'}' (FORMAT parquet)")


def join_tables(folder: Path, mib: int, files: int) -> int:
    """Two tables of about ``mib`` MiB each in Arrow memory (an id, a number and a 100-byte
    string per row), every id on both sides; returns the rows of each."""
    import duckdb

    rows = mib * 2**20 // (8 + 8 + 100 + 4)
    con = duckdb.connect()
    for name, key in (("left_side", "range"), ("right_side", f"({rows} - 1 - range)")):
        (folder / name).mkdir(parents=True)
        for i in range(files):
            con.execute(f"COPY (SELECT {key}::BIGINT AS id, (range % 97)::BIGINT AS v, "
                        f"repeat(chr((65 + range % 26)::INT), 60) || md5(range::VARCHAR) AS s "
                        f"FROM range({i * rows // files}, {(i + 1) * rows // files})) "
                        f"TO '{folder / name / f'part-{i}.parquet'}' (FORMAT parquet)")
    return rows


JOIN_SELECT = """select count(*) as n, sum(l.v + r.v) as total, max(l.s) as left_max, max(r.s) as right_max,
min(r.s) as right_min from left_side l join right_side r on l.id = r.id"""
JOIN = f"""load parquet.`BASE/left_side` as left_side;
load parquet.`BASE/right_side` as right_side;
{JOIN_SELECT} as joined;"""


def join_by_duckdb(folder: Path) -> list[list]:
    """The join's answer by DuckDB alone, over the same files."""
    import duckdb

    con = duckdb.connect()
    for name in ("left_side", "right_side"):
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{folder / name}/*.parquet')")
    return [list(row) for row in con.sql(JOIN_SELECT).fetchall()]


def upload(server: s3.Server, folder: Path, prefix: str) -> int:
    """Every file under ``folder`` to ``s3://BUCKET/prefix/...``; returns the bytes sent."""
    client, sent = server.client(), 0
    for path in sorted(folder.rglob("*.parquet")):
        client.upload_file(str(path), s3.BUCKET, f"{prefix}/{path.relative_to(folder)}")
        sent += path.stat().st_size
    return sent


def ssb_scripts(base: str, scale: int, only: list[str] | None = None) -> list[tuple[str, str, str]]:
    """(name, text, final table) of Byzer's SSB scripts, their ``/ssb/TABLE/file`` loads made
    loads of the folder ``base/TABLE`` (every file of the table), the revenues their ``!assert``s
    expect ``scale`` times Byzer's (lineorder's rows are there ``scale`` times)."""
    from mlsql_ray import parse
    from mlsql_ray.lang import ast

    scripts = []
    for path in sorted((SSB / "scripts").glob("*.byzer")):
        if only and path.stem not in only:
            continue
        text = re.sub(r"`/ssb/(\w+)/[^`]*`", lambda m: f"`{base}/{m.group(1)}`", path.read_text())
        text = re.sub(r"(:REVENUE == )(\d+)", lambda m: f"{m.group(1)}{int(m.group(2)) * scale}", text)
        final = [s.table for s in parse(text) if isinstance(s, ast.Select)][-1]
        scripts.append((path.name, text, final))
    return scripts


def run(server: s3.Server, work: Path, prefix: str, *, scale: int, files: int, store_mib: int, join_mib: int,
        kill_at: float = 0.5, only: list[str] | None = None, timeout: float = 3600,
        ray_env: dict[str, str] | None = None) -> tuple[dict, str]:
    """Make the data, upload it under ``prefix``, run DRIVER (``ray_env``: Ray's settings in its
    environment); (its report, its output)."""
    data = work / "data"
    scaled_ssb(data / "ssb", scale, files)
    if join_mib:
        join_tables(data / "join", join_mib, files)
    sent = upload(server, data, prefix)
    expected = join_by_duckdb(data / "join") if join_mib else None
    shutil.rmtree(data)
    base = f"s3://{s3.BUCKET}/{prefix}"
    config = {
        "out": str(work / "report.json"), "warehouse": f"{base}/warehouse", "store_bytes": store_mib * 2**20,
        "ssb": ssb_scripts(f"{base}/ssb", scale, only), "kill_at": kill_at,
        "join": JOIN.replace("BASE", f"{base}/join") if join_mib else None,
        "saves": saves(),
    }
    (work / "config.json").write_text(json.dumps(config))
    driver = work / "driver.py"
    driver.write_text(DRIVER)
    temp_dir = tempfile.mkdtemp(prefix="mlsqlray-", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "MLSQL_RAY_ADDRESS")}
    env.update(RAY_AUTH_MODE="token", RAY_TMPDIR=temp_dir, DAFT_PROGRESS_BAR="0", **server.env, **(ray_env or {}))
    process = subprocess.Popen([sys.executable, str(driver), str(work / "config.json")], env=env, cwd=work,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        output = "(timed out)"
    finally:
        stop_group(process)
        shutil.rmtree(temp_dir, ignore_errors=True)
    report = json.loads((work / "report.json").read_text()) if (work / "report.json").exists() else {}
    report.update(returncode=process.returncode, uploaded_bytes=sent, join_by_duckdb=expected)
    return report, output


def same_rows(a: list, b: list) -> bool:
    """The same rows in any order (numbers compared to 9 significant digits)."""
    def key(row):
        return json.dumps([float(f"{v:.9g}") if isinstance(v, float) else v for v in row], default=str)

    return sorted(map(key, a)) == sorted(map(key, b))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=int, default=10, help="copies of SSB's lineorder (60 175 rows each)")
    parser.add_argument("--files", type=int, default=8, help="parquet files per table")
    parser.add_argument("--store-mib", type=int, default=150, help="each node's object store")
    parser.add_argument("--join-mib", type=int, default=225, help="each join input's Arrow size (0: no join)")
    parser.add_argument("--kill-at", type=float, default=0.5, help="when the node dies, as a share of the first save's time")
    args = parser.parse_args()
    server = s3.start()
    work = Path(tempfile.mkdtemp(prefix="bench-daft-cluster-"))
    try:
        started = time.perf_counter()
        report, output = run(server, work, "bench", scale=args.scale, files=args.files, store_mib=args.store_mib,
                             join_mib=args.join_mib, kill_at=args.kill_at)
        print(output[-4000:] if report.get("returncode") else "", end="")
        print(f"S3: {report['uploaded_bytes'] / 2**20:,.1f} MiB of parquet uploaded; two nodes, object store "
              f"{args.store_mib} MiB each; total {time.perf_counter() - started:,.0f} s")
        summarize(report, args)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


def summarize(report: dict, args) -> None:
    nodes = set(report.get("nodes", []))
    ssb = report.get("ssb")
    if ssb:
        names = list(ssb["answers"]["duckdb"])
        same = [n for n in names if same_rows(ssb["answers"]["duckdb"][n], ssb["answers"]["daft"][n])]
        scans = {t["node"] for t in ssb["fragments"] if "Scan" in t["name"]}
        print(f"SSB x{args.scale} ({60175 * args.scale:,} lineorder rows, {args.files} files per table): "
              f"{len(same)} of {len(names)} queries give DuckDB's answers; DuckDB {ssb['seconds']['duckdb']:.1f} s, "
              f"Daft {ssb['seconds']['daft']:.1f} s; Daft's scans on {len(scans & nodes)} of {len(nodes)} nodes")
        saved = ssb["saved"]
        print(f"  {saved['script']}'s answer saved as Delta on S3 (version {saved['version']}); read back by polars, "
              f"DuckDB's answer: {same_rows(saved['rows'], ssb['answers']['duckdb'][saved['script']])}")
    join = report.get("join")
    if join:
        before, after = join["before"], join["after"]
        spilled = (after["spilled_bytes_total"] - before["spilled_bytes_total"]) / 2**20
        restored = (after["restored_bytes_total"] - before["restored_bytes_total"]) / 2**20
        nodes_joining = {t["node"] for t in join["fragments"] if "HashJoin" in t["name"]}
        print(f"join: 2 x {args.join_mib} MiB in Arrow (= {2 * args.join_mib / args.store_mib:.1f}x a node's "
              f"{args.store_mib} MiB store): {join['seconds']:.1f} s, {join['rows'][0][0]:,} rows joined, DuckDB's answer: "
              f"{same_rows(join['rows'], report['join_by_duckdb'])}; spilled {spilled:,.0f} MiB "
              f"({after['spilled_objects_total'] - before['spilled_objects_total']} objects), restored "
              f"{restored:,.0f} MiB; hash join on {len(nodes_joining & nodes)} of {len(nodes)} nodes")
    kill = report.get("kill")
    if kill:
        outcome = kill["outcome"]
        said = f"succeeded: {outcome['ok']}" if "ok" in outcome else f"failed: {outcome['type']}: {outcome['error']}"
        print(f"node loss: the whole join saved in {kill['before_seconds']:.1f} s; in the next save a node was killed "
              f"{kill['killed_after']:.1f} s in; the statement {said} ({kill['seconds']:.1f} s); the table before "
              f"{kill['before']}, after {kill['after']}; that save's rows by DuckDB {kill['expected']}; then the same "
              f"select on the {len(kill['alive'])} node left: {kill['next']}")
    print(f"driver exit status {report['returncode']}; steps {list(zip(report.get('steps', []), report.get('seconds', [])))}")


if __name__ == "__main__":
    main()
