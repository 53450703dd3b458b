"""Issue 16's streaming benchmark: ``load parquet → select (filter + projection + a computed
column) → save delta`` over a generated dataset bigger than a worker's share of memory.

    .venv/bin/python bench/bench_stream.py [--rows N] [--keep DIR]

Generates N rows (default 100 million, 3.85 GiB in Arrow memory) with DuckDB into a
temporary folder, then measures
(a) ``mlsql-ray run`` of the job: its peak resident memory (psutil, polled every 10 ms) and
    wall time;
(b) DuckDB's own ``COPY (same query) TO 'out.parquet'`` in a fresh Python process: wall time.
Targets: (a)'s peak RSS ≤ 15 % of the dataset's Arrow size; (a)'s wall time ≤ 1.3 × (b)'s.
The temporary folder is deleted afterwards.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

QUERY = "select id, x, y * 2 as y2, k, s from {table} where x < 0.9"
GENERATE = """COPY (SELECT range AS id, random() AS x, random() AS y, (range % 1000)::INTEGER AS k,
    'row ' || (range % 100000)::VARCHAR AS s FROM range({rows})) TO '{path}' (FORMAT parquet)"""
SCRIPT = """load parquet.`{path}` as t;
select id, x, y * 2 as y2, k, s from t where x < 0.9 as sel;
save overwrite sel as delta.`bench.streamed`;
"""
DUCKDB_COPY = """import duckdb
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")
con.execute("COPY ({query}) TO '{out}' (FORMAT parquet)")
"""


def arrow_bytes(path: Path) -> int:
    """The dataset's size in Arrow memory, from its first row group (all row groups are alike)."""
    import pyarrow.parquet as pq

    file = pq.ParquetFile(path)
    first = file.read_row_group(0)
    return int(first.nbytes / first.num_rows * file.metadata.num_rows)


def measure(command: list[str], env: dict | None = None) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of a subprocess (in ``env``, default this one's); fails loudly if it fails."""
    start = time.perf_counter()
    process = psutil.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    peak = 0
    while process.poll() is None:
        try:
            peak = max(peak, process.memory_info().rss)
        except psutil.Error:
            pass
        time.sleep(0.01)
    seconds = time.perf_counter() - start
    output = process.stdout.read().decode()
    if process.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{output}")
    return seconds, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument("--keep", type=Path, help="use (and keep) this folder instead of a temporary one")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="mlsql-bench-stream-"))
    folder.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(folder).free
    if free < args.rows * 150:  # the data, the Delta output and DuckDB's output, with room to spare
        sys.exit(f"{folder} has {free / 1e9:.1f} GB free; --rows {args.rows} needs about {args.rows * 150 / 1e9:.1f} GB")
    try:
        data = folder / "data.parquet"
        if not data.exists():
            import duckdb

            started = time.perf_counter()
            duckdb.connect().execute(GENERATE.format(rows=args.rows, path=data))
            print(f"generated {args.rows:,} rows in {time.perf_counter() - started:.0f} s")
        size = arrow_bytes(data)
        script = folder / "job.mlsql"
        script.write_text(SCRIPT.format(path=data))
        ours, peak = measure([sys.executable, "-m", "mlsql_ray", "run", str(script),
                              "--warehouse", str(folder / "warehouse")])
        copy = DUCKDB_COPY.format(query=QUERY.format(table=f"read_parquet('{data}')"), out=folder / "copy.parquet")
        duckdb_seconds, duckdb_peak = measure([sys.executable, "-c", copy])
        print(f"dataset: {args.rows:,} rows, {size / 2**30:.2f} GiB in Arrow memory, {data.stat().st_size / 2**30:.2f} GiB parquet")
        print(f"mlsql-ray run:       {ours:7.1f} s   peak RSS {peak / 2**20:7.0f} MiB = {peak / size:5.1%} of the dataset "
              f"(target ≤ 15 %: {'met' if peak <= 0.15 * size else 'NOT met'})")
        print(f"DuckDB COPY TO:      {duckdb_seconds:7.1f} s   peak RSS {duckdb_peak / 2**20:7.0f} MiB")
        print(f"wall time ratio:     {ours / duckdb_seconds:7.2f}x (target ≤ 1.3: {'met' if ours <= 1.3 * duckdb_seconds else 'NOT met'})")
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
