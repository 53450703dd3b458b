"""Issue 16's and 26's feed targets: the driver's peak RSS grows by at most 200 MB from a small
table to 2 GiB when Ray workers read it: through a cell's ``data_servers()`` (issue 16), and for
``train … as KerasClassifier`` from SQL (issue 26, ``--train``).

    .venv/bin/python bench/bench_feed_memory.py [--gib 2] [--train]

Writes a parquet file of ``id``, ``label`` (id % 10) and ``features`` (a list of 64 float32 per
row) holding GIB of Arrow data, and a small one of the same shape; runs the same ``mlsql-ray run``
script over each: a ``--%python`` cell whose input is the load, 2 partitions, each read by a Ray
task that sums its rows; with ``--train``, a ``train`` of a KerasClassifier (2 workers, one
epoch of a small network) on the load. The peak resident memory of the ``mlsql-ray run``
process is ``ru_maxrss`` of a parent that ran only it; the growth from the small file to the big
one is what the data costs the driver. Ray is started first (the cluster, not the job); its
workers' memory is theirs, not the driver's.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
WIDTH = 64  # float32 features per row
ROW_BYTES = 8 + 8 + 4 + WIDTH * 4  # id, label, the list's offset, its values
CHUNK = 500_000

SCRIPT = """load parquet.`{path}` as t;
-- %%
--%python
--%input=t
--%output=seen
--%num_partitions=2
import ray
from pyjava.api.mlsql import RayContext

rc = RayContext.connect(globals(), None)


@ray.remote(num_cpus=1)
def read(server):
    part = server.read()
    return {{"rows": part.num_rows, "bytes": part.nbytes}}


rc.build_result(ray.get([read.remote(s) for s in rc.data_servers()]))
-- %%
select sum(rows) as rows, sum(bytes) as bytes from seen as total;
"""

TRAIN_SCRIPT = """load parquet.`{path}` as t;
train t as KerasClassifier.`db.k` where featuresCol="features" and layers="16" and epochs="1"
    and batchSize="4096" and workers="2" as r;
select value from r where name = "status" as status;
"""

PEAK_OF_CHILD = ("import resource, subprocess, sys; code = subprocess.call(sys.argv[2:]); "
                 "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)); "
                 "sys.exit(code)")


def write_features(path: Path, rows: int) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([("id", pa.int64()), ("label", pa.int64()), ("features", pa.list_(pa.float32()))])
    rng = np.random.default_rng(0)
    with pq.ParquetWriter(path, schema, compression="none") as writer:
        for start in range(0, rows, CHUNK):
            n = min(rows, start + CHUNK) - start
            values = pa.array(rng.random(n * WIDTH, dtype=np.float32))
            features = pa.ListArray.from_arrays(pa.array(np.arange(0, n * WIDTH + 1, WIDTH, dtype=np.int32)), values)
            ids = np.arange(start, start + n, dtype=np.int64)
            writer.write_table(pa.table({"id": ids, "label": ids % 10, "features": features}, schema=schema))


def peak_of_run(script: Path, warehouse: Path, env: dict) -> tuple[int, str]:
    peak_file = warehouse.with_suffix(".peak")
    done = subprocess.run([sys.executable, "-c", PEAK_OF_CHILD, str(peak_file), sys.executable, "-m", "mlsql_ray",
                           "run", str(script), "--warehouse", str(warehouse)], capture_output=True, text=True, env=env)
    if done.returncode:
        raise SystemExit(done.stdout + done.stderr)
    return int(peak_file.read_text()) * 1024, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gib", type=float, default=2.0)
    parser.add_argument("--train", action="store_true", help="train a KerasClassifier from SQL instead of a cell")
    args = parser.parse_args()

    import ray

    from mlsql_ray.config import RAY_ADDRESS_ENV

    big_rows = int(args.gib * 2**30 // ROW_BYTES)
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        context = ray.init(num_cpus=2, include_dashboard=False)
        env = {**os.environ, RAY_ADDRESS_ENV: context.address_info["gcs_address"]}
        try:
            peaks = {}
            for label, rows in (("small", CHUNK), ("big", big_rows)):
                data = tmp_path / f"{label}.parquet"
                write_features(data, rows)
                script = tmp_path / f"{label}.mlsql"
                script.write_text((TRAIN_SCRIPT if args.train else SCRIPT).format(path=data))
                peaks[label], output = peak_of_run(script, tmp_path / label, env)
                data.unlink()
                print(f"{label}: {rows:,} rows ({rows * ROW_BYTES / 2**30:.2f} GiB in Arrow), "
                      f"driver peak RSS {peaks[label] / 2**20:.0f} MiB; {'train status' if args.train else 'rows, bytes read by the workers'}: "
                      f"{output.strip().splitlines()[-2].split()}")
        finally:
            ray.shutdown()
    growth = (peaks["big"] - peaks["small"]) / 2**20
    print(f"driver peak RSS growth for {args.gib:g} GiB more: {growth:.0f} MiB (target ≤ 200 MB)")


if __name__ == "__main__":
    main()
