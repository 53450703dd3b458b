"""Object storage figures (issue 26) against a local S3 server (moto's server mode, as the tests
start it: tests/s3_server.py).

1. ``load parquet.`s3://…``` of a big parquet file, scanned whole through a session (every column
   touched), vs pyarrow's own dataset read of it (``to_table``) from the same server.
2. ``select → save delta`` of the same data to a warehouse on S3 vs to a local warehouse.
3. 4 processes × 5 ``save append`` to one S3 Delta table (made first) at once: versions and rows.

Usage: python bench/bench_s3.py [MILLION_ROWS]   (default 10: a ~130 MiB parquet file)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.dataset as ds  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import s3_server  # noqa: E402


def best(work, runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    millions = float(sys.argv[1]) if len(sys.argv) > 1 else 10
    rows = int(millions * 1_000_000)
    server = s3_server.start()
    os.environ.update(server.env)
    from mlsql_ray import Session
    from mlsql_ray.objectstore import resolve

    try:
        with tempfile.TemporaryDirectory() as folder:
            local = Path(folder) / "big.parquet"
            ids = pa.array(range(rows), pa.int64())
            noise = pa.array(np.random.default_rng(0).random(rows))  # incompressible: the size is real
            pq.write_table(pa.table({"id": ids, "x": noise,
                                     "s": pa.compute.cast(pa.compute.bit_wise_and(ids, 1023), pa.string())}),
                           local, row_group_size=1_000_000)
            size = local.stat().st_size
            uri = f"s3://{s3_server.BUCKET}/bench/big.parquet"
            store = resolve(uri)
            pa.fs.copy_files(str(local), store.key, destination_filesystem=store.filesystem())
            print(f"{rows:,} rows, parquet {size / 2**20:.0f} MiB on the S3 server")

            pyarrow_s = best(lambda: ds.dataset(store.key, filesystem=store.filesystem(), format="parquet").to_table())
            with Session(warehouse=f"s3://{s3_server.BUCKET}/bench-wh") as session:
                scan = (f"load parquet.`{uri}` as big; "
                        "select count(*) as n, sum(id) as i, sum(x) as x, max(length(s)) as s from big as out;")
                session_s = best(lambda: session.execute(scan)[-1].table)  # a select runs when its rows are asked for
                print(f"1. whole scan: pyarrow dataset {pyarrow_s:.2f} s, session load+scan {session_s:.2f} s "
                      f"-> session speed {pyarrow_s / session_s:.2f}x pyarrow's (target >= 0.8x)")
                save = f"load parquet.`{local}` as src; select * from src as t; save overwrite t as delta.`db.big`;"
                s3_save = best(lambda: session.execute(save), runs=2)
            with Session(warehouse=Path(folder) / "wh") as session:
                local_save = best(lambda: session.execute(save), runs=2)
            print(f"2. select -> save delta: S3 warehouse {s3_save:.2f} s, local warehouse {local_save:.2f} s "
                  f"-> {s3_save / local_save:.2f}x local (target <= 1.3x)")
            # the server's floor: deltalake's own write of the same table, and one PUT of the file's bytes
            from deltalake import write_deltalake

            table = pq.read_table(local)
            direct_s3 = best(lambda: write_deltalake(f"s3://{s3_server.BUCKET}/bench-direct/big", table,
                                                     mode="overwrite"), runs=2)
            direct_local = best(lambda: write_deltalake(str(Path(folder) / "direct"), table, mode="overwrite"), runs=2)
            body = local.read_bytes()
            put = best(lambda: server.client().put_object(Bucket=s3_server.BUCKET, Key="bench/put", Body=body), runs=2)
            del table, body
            print(f"   deltalake's own write_deltalake: S3 {direct_s3:.2f} s, local {direct_local:.2f} s "
                  f"-> {direct_s3 / direct_local:.2f}x; one PUT of the parquet file's bytes: {put:.2f} s")

            script = Path(folder) / "append.mlsql"
            script.write_text("".join(f"select cast(${{w}} as int) as w, {i} as i as t{i};\n"
                                      f"save append t{i} as delta.`db.shared`;\n" for i in range(5)))
            warehouse = f"s3://{s3_server.BUCKET}/bench-concurrent"
            with Session(warehouse=warehouse) as session:  # version 0: creating a table at once from
                # several writers conflicts (each would write its metadata); one of them is told so
                session.execute("select -1 as w, -1 as i as t; save overwrite t as delta.`db.shared`;")
            start = time.perf_counter()
            writers = [subprocess.Popen([sys.executable, "-m", "mlsql_ray", "run", str(script), "--warehouse",
                                         warehouse, "--set", f"w={w}"], stdout=subprocess.DEVNULL)
                       for w in range(4)]
            codes = [w.wait() for w in writers]
            took = time.perf_counter() - start
            with Session(warehouse=warehouse) as session:
                got = session.execute("load delta.`db.shared` as s; select count(*) as n, "
                                      "count(distinct w * 10 + i) as d from s as out;")[-1].table.to_pylist()[0]
                version = session.execute("!delta info db.shared;")[-1].table.to_pydict()
                version = dict(zip(version["key"], version["value"]))["version"]
            print(f"3. 4 processes x 5 appends: exit codes {codes}, {got['n']} rows ({got['d']} distinct), "
                  f"latest version {version} (20 appends after version 0: 21 rows, version 20), {took:.1f} s")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
