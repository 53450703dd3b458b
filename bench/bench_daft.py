"""Issue 41's driver-memory benchmark: ``load parquet → join + GROUP BY → save delta`` through
``mlsql-ray run --sql-engine duckdb`` and ``--sql-engine daft`` (an embedded Ray), same data.

    .venv/bin/python bench/bench_daft.py [--rows N] [--files F] [--keep DIR]

Generates N fact rows (default 5 million) in F parquet files (default 8) and a 1 000-row dimension
with DuckDB into a temporary folder, then runs the job once per engine, each in a fresh process,
measuring the driver's peak resident memory (psutil, polled every 10 ms; the process itself, not
the Ray workers Daft computes in) and its wall time (Ray's start included for Daft). The saved
tables are read back and compared (same rows). The temporary folder is deleted afterwards.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

from bench_stream import measure  # this folder is first on the path of a script run from it

GENERATE = """COPY (SELECT range AS id, (range % 1000)::BIGINT AS k, random() AS x,
    'row ' || (range % 100000)::VARCHAR AS s FROM range({start}, {stop})) TO '{path}' (FORMAT parquet)"""
DIMENSION = """COPY (SELECT range::BIGINT AS k, 'group ' || (range % 37)::VARCHAR AS name
    FROM range(1000)) TO '{path}' (FORMAT parquet)"""
SCRIPT = """load parquet.`{data}/facts` as facts;
load parquet.`{data}/dims.parquet` as dims;
select f.id, f.x, f.s, d.name from facts f join dims d on f.k = d.k where f.id % 5 <> 0 as joined;
select name, count(*) as n, sum(x) as total, max(id) as last_id from joined group by name as grouped;
save overwrite joined as delta.`bench.joined`;
save overwrite grouped as delta.`bench.grouped`;
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--keep", type=Path, help="use (and keep) this folder instead of a temporary one")
    args = parser.parse_args()
    import duckdb
    import pyarrow.dataset as ds

    folder = args.keep or Path(tempfile.mkdtemp(prefix="mlsql-bench-daft-"))
    data = folder / "data"
    try:
        if not (data / "dims.parquet").exists():
            (data / "facts").mkdir(parents=True, exist_ok=True)
            con = duckdb.connect()
            for i in range(args.files):
                start, stop = i * args.rows // args.files, (i + 1) * args.rows // args.files
                con.execute(GENERATE.format(start=start, stop=stop, path=data / "facts" / f"part-{i}.parquet"))
            con.execute(DIMENSION.format(path=data / "dims.parquet"))
        facts = ds.dataset(data / "facts")
        arrow_mib = sum(f.metadata.num_rows for f in facts.get_fragments()) * \
            facts.head(10_000).nbytes / 10_000 / 2**20
        script = folder / "job.mlsql"
        script.write_text(SCRIPT.format(data=data))
        env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "MLSQL_RAY_ADDRESS")}
        env["DAFT_PROGRESS_BAR"] = "0"
        print(f"{args.rows:,} fact rows in {args.files} files: {arrow_mib:,.0f} MiB in Arrow memory")
        figures = {}
        for engine in ("duckdb", "daft"):
            warehouse = folder / f"wh-{engine}"
            shutil.rmtree(warehouse, ignore_errors=True)
            seconds, peak = measure([sys.executable, "-m", "mlsql_ray", "run", str(script), "--sql-engine", engine,
                                     "--warehouse", str(warehouse)], env)
            figures[engine] = (seconds, peak)
            print(f"{engine:>6}: {seconds:6.1f} s, driver peak RSS {peak / 2**20:6.0f} MiB")
        from deltalake import DeltaTable

        def grouped(engine: str) -> list:
            table = DeltaTable(str(folder / f"wh-{engine}" / "bench" / "grouped")).to_pyarrow_table()
            return sorted((r["name"], r["n"], round(r["total"], 6), r["last_id"]) for r in table.to_pylist())

        rows = {e: DeltaTable(str(folder / f"wh-{e}" / "bench" / "joined")).to_pyarrow_dataset().count_rows()
                for e in figures}
        same = grouped("duckdb") == grouped("daft") and rows["duckdb"] == rows["daft"]
        (d_s, d_rss), (f_s, f_rss) = figures["duckdb"], figures["daft"]
        print(f"daft/duckdb: time {f_s / d_s:.2f}x, driver peak RSS {f_rss / d_rss:.2f}x; "
              f"joined rows {rows['daft']:,}; same answers: {same}")
        if not same:
            sys.exit("the engines' saved tables differ")
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
