"""Issue 41, part 4: what reads a Daft select outside Daft (a Python cell's input, a ``train``'s
workers) reads its partitions where Daft's Ray workers computed them, the driver holding none.

Daft's runner is chosen once per process (the differential test picks its in-process one), so
each check runs in a fresh Python process that joins the test run's Ray.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pyarrow as pa
import pyarrow.parquet as pq

CELL_FEED = textwrap.dedent('''
    import json, sys
    from mlsql_ray import Session
    from mlsql_ray.engine.catalog import Deferred

    warehouse, address, data = sys.argv[1:4]
    SCRIPT = f"""
    load parquet.`{data}/facts` as facts;
    load parquet.`{data}/names.parquet` as names;
    select f.k, nm.name, f.v * 2 as v2 from facts f join names nm on f.k = nm.k where f.v > 3 as joined;
    select k from facts where v < 0 as nothing;
    """
    EMPTY = """--%python
    --%input=nothing
    --%output=counted
    from pyjava.api.mlsql import RayContext
    rc = RayContext.connect(globals(), None)
    rc.build_result([{"servers": len(rc.data_servers()), "rows": sum(s.read().num_rows for s in rc.data_servers())}])
    """
    CELL = """--%python
    --%input=joined
    --%output=seen
    import ray
    from pyjava.api.mlsql import RayContext
    rc = RayContext.connect(globals(), None)

    @ray.remote
    def read(server):
        return [dict(row, refs=[r.hex() for r in server.plan.refs]) for row in server.read().to_pylist()]

    rc.build_result([row for rows in ray.get([read.remote(s) for s in rc.data_servers()]) for row in rows])
    """
    out = {{}}
    for engine in ("duckdb", "daft"):
        with Session(warehouse=f"{{warehouse}}/{{engine}}", sql_engine=engine, ray_address=address) as session:
            session.execute(SCRIPT)
            session.execute(CELL)
            session.execute(EMPTY)
            seen = session.table("seen").to_pylist()
            entry = session.catalog.entry("joined")
            blocks = entry.data.blocks() if isinstance(entry.data, Deferred) else []
            out[engine] = {{
                "rows": sorted(json.dumps([r["k"], r["name"], r["v2"]]) for r in seen),
                "fed_refs": sorted({{ref for r in seen for ref in r["refs"]}}),
                "computed_here": not isinstance(entry.data, Deferred),
                "daft_blocks": sorted(ref.hex() for ref, _ in blocks),
                "empty": session.table("counted").to_pylist(),
            }}
    print(json.dumps(out))
''').replace("{{", "{").replace("}}", "}")


def _facts(folder):
    (folder / "facts").mkdir(parents=True)
    for part in range(3):  # three files: Daft's scan makes several partitions
        ks = list(range(part * 50, part * 50 + 50))
        pq.write_table(pa.table({"k": [k % 40 for k in ks], "v": ks}), folder / "facts" / f"part-{part}.parquet")
    pq.write_table(pa.table({"k": list(range(40)), "name": [f"n{k}" for k in range(40)]}), folder / "names.parquet")


def _run(program: str, *args, timeout: float = 600) -> dict:
    done = subprocess.run([sys.executable, "-c", program, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_cell_reads_a_daft_selects_partitions_where_daft_put_them(ray_address, tmp_path):
    """The cell's workers see DuckDB's rows; what they read are the object refs of Daft's own
    partitions (made Arrow on its workers), and the driver never computed the table. A select without rows
    is one empty partition, as on DuckDB."""
    _facts(tmp_path / "data")
    out = _run(CELL_FEED, tmp_path / "wh", ray_address, tmp_path / "data")
    duck, on_daft = out["duckdb"], out["daft"]
    assert len(duck["rows"]) == 146 and on_daft["rows"] == duck["rows"]
    assert not on_daft["computed_here"]
    assert len(on_daft["daft_blocks"]) > 1 and set(on_daft["fed_refs"]) <= set(on_daft["daft_blocks"])
    assert len(on_daft["fed_refs"]) > 1
    assert on_daft["empty"] == duck["empty"] == [{"servers": 1, "rows": 0}]  # no row: one empty partition


TRAIN_FEED = textwrap.dedent('''
    import json, sys
    from mlsql_ray import Session
    from mlsql_ray.engine.catalog import Deferred

    warehouse, address, points = sys.argv[1:4]
    with Session(warehouse=warehouse, sql_engine="daft", ray_address=address) as session:
        session.execute(f"load parquet.`{points}` as raw;")
        session.execute("select features, label from raw where id % 8 != 7 as kept;")
        session.execute('train kept as KerasClassifier.`db.k` where featuresCol="features" and layers="8" '
                        'and epochs="12" and batchSize="16" and learningRate="0.2" and workers="2" as res;')
        result = {r["name"]: r["value"] for r in session.table("res").to_pylist()}
        entry = session.catalog.entry("kept")
        session.execute("set sql_engine='duckdb' where type='conf';")
        session.execute("predict raw as KerasClassifier.`db.k` as scored;")
        scored = session.table("scored").to_pylist()
    print(json.dumps({"result": result, "computed_here": not isinstance(entry.data, Deferred),
                      "blocks": len(entry.data.blocks()) if isinstance(entry.data, Deferred) else 0,
                      "accuracy": sum(r["prediction"] == r["label"] for r in scored) / len(scored)}))
''')


def test_a_train_reads_a_daft_selects_partitions_on_its_workers(ray_address, tmp_path):
    """``train … as KerasClassifier`` over a Daft select: described (rows, labels, checks) by
    queries where Daft's partitions are, its two workers fed those partitions; the driver never
    computed the table, and the model learnt (two separable classes)."""
    import numpy as np

    rng = np.random.default_rng(3)
    xy = rng.random((160, 2))
    points = tmp_path / "points.parquet"
    pq.write_table(pa.table({"features": pa.array(list(xy), pa.list_(pa.float64())),
                             "label": np.where(xy[:, 1] > xy[:, 0], 5.0, 2.0), "id": np.arange(160)}), points)
    out = _run(TRAIN_FEED, tmp_path / "wh", ray_address, points)
    assert out["result"]["status"] == "success", out["result"]
    assert not out["computed_here"] and out["blocks"] >= 1
    assert out["accuracy"] > 0.9


PREVIEWS = textwrap.dedent('''
    import json, sys
    from mlsql_ray import Session
    from mlsql_ray.engine.catalog import Deferred
    from mlsql_ray.frontend.present import present_result

    warehouse, address, data = sys.argv[1:4]
    with Session(warehouse=warehouse, sql_engine="daft", ray_address=address) as session:
        results = session.execute(f"load parquet.`{data}/facts` as facts;\\n"
                                  "select k, v from facts where v > 3 order by v as big;", previews=True)
        views = [present_result(r, session.catalog).table for r in results]
        print(json.dumps({"shown": [v.table.to_pylist() for v in views], "more": [v.more for v in views],
                          "computed_here": [not isinstance(session.catalog.entry(n).data, Deferred)
                                            for n in ("facts", "big")]}))
''')


def test_previews_fetch_only_the_rows_shown(ray_address, tmp_path):
    """The kernel's and the CLI's previews of a Daft load and select: 20 rows shown, more said,
    and neither table computed whole in the driver (each stays Daft's lazy plan)."""
    _facts(tmp_path / "data")
    out = _run(PREVIEWS, tmp_path / "wh", ray_address, tmp_path / "data")
    loaded, selected = out["shown"]
    assert len(loaded) == 20 and out["more"] == [True, True]
    assert selected == [{"k": v % 40, "v": v} for v in range(4, 24)]
    assert out["computed_here"] == [False, False]
