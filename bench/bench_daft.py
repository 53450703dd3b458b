"""Issue 41's driver-memory benchmark: ``load parquet → join + GROUP BY → save delta`` through
``mlsql-ray run --sql-engine duckdb`` and ``--sql-engine daft`` (an embedded Ray), same data.

    .venv/bin/python bench/bench_daft.py [--rows N] [--files F] [--keep DIR]
    .venv/bin/python bench/bench_daft.py --s3-gib G [--files F] [--object-store-mib M]

Generates N fact rows (default 5 million) in F parquet files (default 8) and a 1 000-row dimension
with DuckDB into a temporary folder, then runs the job once per engine, each in a fresh process,
measuring the driver's peak resident memory (psutil, polled every 10 ms; the process itself, not
the Ray workers Daft computes in) and its wall time (Ray's start included for Daft). The saved
tables are read back and compared (same rows). The temporary folder is deleted afterwards.

With ``--s3-gib G``, issue 41's target instead: a Daft select → save over G GiB (default 4) of
parquet on the S3 server grows the driver's peak RSS by ≤ 300 MB. It starts moto's S3 server
(tests/s3_server.py: it spools objects over 5 MiB to its temporary files, not to its memory), writes
F parquet files (default 32) of an id and four random doubles (incompressible: the bytes are real)
to it from several threads (pyarrow's S3 filesystem), then, in a fresh process on a local Ray of 2
CPUs with an object store of M MiB (default 2048; Ray spills beyond it), runs ``load parquet.`s3://…```
→ a filter, a projection and a computed column → ``save overwrite … as delta.`` with the warehouse
on the same server. That process reports its own baseline (its RSS after Ray and Daft started and
ran a first Daft job) and its peak during the script (the kernel's high-water mark, ``VmHWM``,
reset after the baseline), and the script's wall time; the saved table's rows are counted from its
Delta log by another process and compared with the rows the filter keeps.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
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


S3_SCRIPT = """load parquet.`{data}` as big;
select id, x * 2 + y as v, z from big where id % 2 = 0 as picked;
save overwrite picked as delta.`bench.picked`;
"""
RAY_CPUS = 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--files", type=int, help="parquet files (default 8; with --s3-gib 32)")
    parser.add_argument("--keep", type=Path, help="use (and keep) this folder instead of a temporary one")
    parser.add_argument("--s3-gib", type=float, help="measure issue 41's S3 target over this many GiB of parquet")
    parser.add_argument("--object-store-mib", type=int, default=2048, help="the Ray object store (with --s3-gib)")
    parser.add_argument("--s3-driver", nargs=2, metavar=("DATA", "WAREHOUSE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.s3_driver:
        return s3_driver(*args.s3_driver, args.object_store_mib)
    if args.s3_gib:
        return s3_target(args.s3_gib, args.files or 32, args.object_store_mib)
    args.files = args.files or 8
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


# -- issue 41's S3 target ---------------------------------------------------------------------------

def s3_target(gib: float, files: int, object_store_mib: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    import s3_server  # the tests' S3 server

    server = s3_server.start()
    watch = _PeakRss(server.process.pid)
    try:
        data = f"s3://{s3_server.BUCKET}/bench-daft/data"
        start = time.perf_counter()
        rows, size = _write_s3_parquet(server, data, gib * 2**30, files)
        print(f"{rows:,} rows in {files} parquet files, {size / 2**30:.2f} GiB on the S3 server, "
              f"written in {time.perf_counter() - start:.1f} s; load average {_load()}")
        warehouse = f"s3://{s3_server.BUCKET}/bench-daft/wh"
        env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "MLSQL_RAY_ADDRESS")}
        env.update(server.env, DAFT_PROGRESS_BAR="0")
        start = time.perf_counter()
        done = subprocess.run([sys.executable, __file__, "--s3-driver", data, warehouse,
                               "--object-store-mib", str(object_store_mib)],
                              env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            sys.exit(f"the Daft driver failed:\n{done.stdout}\n{done.stderr}")
        got = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"Daft driver (local Ray, {RAY_CPUS} CPUs, object store {object_store_mib} MiB), "
              f"{time.perf_counter() - start:.1f} s with Ray's start; script {got['seconds']:.1f} s:")
        print(f"  baseline RSS after Ray and Daft started {got['baseline'] / 2**20:.0f} MiB "
              f"(peak before it {got['startup_peak'] / 2**20:.0f} MiB); peak during the script "
              f"{got['peak'] / 2**20:.0f} MiB; growth {(got['peak'] - got['baseline']) / 2**20:+.0f} MiB "
              f"(target <= 300 MB = {300e6 / 2**20:.0f} MiB)")
        print(f"  {got['message']}")
        saved, version = _delta_rows(f"{warehouse}/bench/picked", env)
        expected = (rows + 1) // 2  # ids 0..rows-1, the even ones
        print(f"  the Delta log (read by another process): version {version}, {saved:,} rows "
              f"(expected {expected:,}); S3 server's peak RSS {watch.peak / 2**20:.0f} MiB; load average {_load()}")
        if saved != expected:
            sys.exit("the saved table does not have the rows the filter keeps")
    finally:
        watch.stop()
        server.stop()


def _write_s3_parquet(server, data: str, total_bytes: float, files: int) -> tuple[int, int]:
    """``files`` parquet files under ``data`` with, together, at least ``total_bytes`` of random doubles
    (ids 0..rows-1 in order), written from several threads; (rows, bytes stored)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyarrow import fs

    store = fs.S3FileSystem(endpoint_override=server.endpoint, access_key=server.env["AWS_ACCESS_KEY_ID"],
                            secret_key=server.env["AWS_SECRET_ACCESS_KEY"], region=server.env["AWS_REGION"])
    per_file = int(total_bytes / files / 32) + 1  # four doubles a row
    key = data.removeprefix("s3://")

    def write(i: int) -> int:
        random = np.random.default_rng(i).random((4, per_file))
        table = pa.table({"id": np.arange(i * per_file, (i + 1) * per_file, dtype=np.int64),
                          **{name: random[n] for n, name in enumerate("xyzw")}})
        pq.write_table(table, f"{key}/part-{i:03d}.parquet", filesystem=store, row_group_size=1 << 20)
        return store.get_file_info(f"{key}/part-{i:03d}.parquet").size

    with ThreadPoolExecutor(4) as pool:
        size = sum(pool.map(write, range(files)))
    return per_file * files, size


def s3_driver(data: str, warehouse: str, object_store_mib: int) -> None:
    """The measured process: a Daft session on a local Ray; its figures as one JSON line."""
    from mlsql_ray import Session
    from mlsql_ray.cluster.link import start_local_ray

    start_local_ray(num_cpus=RAY_CPUS, object_store_memory=object_store_mib * 2**20, log_to_driver=True)
    with Session(warehouse=warehouse, sql_engine="daft") as session:
        session.execute("select 1 as one as warm;")  # Ray, Daft and a first Daft job: the fixed cost
        baseline, startup_peak = _status("VmRSS"), _status("VmHWM")
        Path("/proc/self/clear_refs").write_text("5")  # the high-water mark starts again from here
        start = time.perf_counter()
        results = session.execute(S3_SCRIPT.format(data=data))
        seconds = time.perf_counter() - start
        peak = _status("VmHWM")
    print(json.dumps({"baseline": baseline, "startup_peak": startup_peak, "peak": peak, "seconds": seconds,
                      "message": results[-1].message}))


def _status(field: str) -> int:
    """A memory figure of this process from /proc/self/status, in bytes."""
    line = next(l for l in Path("/proc/self/status").read_text().splitlines() if l.startswith(field + ":"))
    return int(line.split()[1]) * 1024


def _delta_rows(uri: str, env: dict) -> tuple[int, int]:
    """(rows, version) of a Delta table from its log's add actions, read by another process."""
    code = ("import sys; from deltalake import DeltaTable; t = DeltaTable(sys.argv[1]); "
            "print(sum(t.get_add_actions(flatten=True).column('num_records').to_pylist()), t.version())")
    out = subprocess.run([sys.executable, "-c", code, uri], env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"reading the Delta log of {uri} failed:\n{out.stderr}")
    rows, version = out.stdout.split()
    return int(rows), int(version)


def _load() -> str:
    return " ".join(f"{v:.1f}" for v in os.getloadavg())


class _PeakRss:
    """The peak RSS of a process (and its children), sampled every 0.2 s on a thread."""

    def __init__(self, pid: int):
        import psutil

        self.process, self.peak, self._done = psutil.Process(pid), 0, threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        import psutil

        while not self._done.wait(0.2):
            try:
                self.peak = max(self.peak, sum(p.memory_info().rss for p in [self.process, *self.process.children(True)]))
            except psutil.Error:
                pass

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


if __name__ == "__main__":
    main()
