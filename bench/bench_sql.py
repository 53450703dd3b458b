"""Issue 2's benchmark: the cost of running a small MLSQL job, and of MLSQL's select over raw DuckDB.

    .venv/bin/python bench/bench_sql.py [--runs N]

(a) the whole ``mlsql-ray run bench/sql_job.mlsql`` process (load parquet → filter + group by →
    save Delta), median wall time over N runs; and which heavy modules it imported.
(b) the select alone through ``Session`` (sqlglot translation + DuckDB + registering the result,
    then reading it with ``session.table``: a batch select computes nothing until read)
    against the same query run by DuckDB directly over the same Arrow table, median of N.
Targets: (a) ≤ 1.5 s with neither ray nor tensorflow imported; (b) ratio ≤ 1.1.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
JOB = HERE / "sql_job.mlsql"
TRAIN = HERE.parent / "sample_data" / "mnist" / "train.parquet"

SPARK_SELECT = """select label, count(*) as images, avg(image[300]) as center_pixel
from mnist where image[300] > 0 group by label order by label"""

PROBE = """
import sys
from mlsql_ray.frontend.cli import main
code = main(["run", sys.argv[1], "--warehouse", sys.argv[2]])
heavy = sorted(m for m in ("ray", "tensorflow", "keras", "torch") if m in sys.modules)
print("HEAVY=" + ",".join(heavy), file=sys.stderr)
sys.exit(code)
"""


def whole_run(runs: int) -> tuple[float, str]:
    times, heavy = [], ""
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(runs):
            start = time.perf_counter()
            done = subprocess.run([sys.executable, "-c", PROBE, str(JOB), tmp], capture_output=True, text=True)
            times.append(time.perf_counter() - start)
            if done.returncode != 0:
                raise SystemExit(f"the job failed:\n{done.stderr}")
            heavy = done.stderr.strip().rpartition("HEAVY=")[2]
    return statistics.median(times), heavy


def select_overhead(runs: int) -> tuple[float, float]:
    import duckdb
    import pyarrow.parquet as pq

    from mlsql_ray import Session
    from mlsql_ray.engine.sql import to_duckdb

    table = pq.read_table(TRAIN)
    raw = duckdb.connect()
    raw.register("mnist", table)
    with tempfile.TemporaryDirectory() as tmp, Session(warehouse=tmp) as session:
        session.catalog.add_arrow("mnist", table, "bench")
        duck_sql = to_duckdb(SPARK_SELECT, schemas=session.catalog.schemas(["mnist"]))  # as the session translates it
        mlsql = f"{SPARK_SELECT}\nas digits;"
        raw_times, ours = [], []
        for _ in range(runs):
            start = time.perf_counter()
            expected = raw.sql(duck_sql).to_arrow_table()
            raw_times.append(time.perf_counter() - start)
            start = time.perf_counter()
            session.execute(mlsql)
            ours_table = session.table("digits")
            ours.append(time.perf_counter() - start)
        assert ours_table.equals(expected), "MLSQL and DuckDB disagree"
    return statistics.median(ours), statistics.median(raw_times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    wall, heavy = whole_run(args.runs)
    ours, raw = select_overhead(max(args.runs, 30))
    print(f"(a) mlsql-ray run {JOB.name}: {wall:.2f} s median of {args.runs} runs (target <= 1.5 s); "
          f"heavy modules imported: {heavy or 'none'}")
    print(f"(b) select via Session: {ours * 1000:.1f} ms, raw DuckDB: {raw * 1000:.1f} ms, "
          f"ratio {ours / raw:.2f} (target <= 1.1)")


if __name__ == "__main__":
    main()
