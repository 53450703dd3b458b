"""Issue 3's benchmark: reading a cell's input into a float32 matrix inside a Ray actor.

    .venv/bin/python bench/bench_cells.py [--runs N] [--ray-address ADDR]

The 8 000-row MNIST train table is the ``--%input`` of a real ``--%python`` cell; the cell hands
its data servers (the same partition set for every method) to one Ray actor, which reads them
into a 2-D float32 numpy array three ways:

(a) ``RayContext.collect_from`` dict rows, as the seed does: ``np.array([np.array(item["image"]) ...])``
(b) ``RayContext.to_arrow`` then a vectorised conversion of the list column
    (``RayContext.to_numpy(servers, "image", "float32")``); (b') is the same with pyarrow's own
    ``flatten().to_numpy(zero_copy_only=False)``, shown for comparison
(c) the memory limit: ``np.copy`` of the same bytes as a uint8 (8000, 784) array, then ``astype``

Each is timed inside the actor: "first" is the first call in the fresh actor (imports and all),
"typical" the median of the next N. Targets on the typical figures: (b) ≥ 50× faster than (a),
(b) within 3× of (c). MB/s counts the image bytes read (8000 × 784 uint8 = 6.3 MB).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TRAIN = HERE.parent / "sample_data" / "mnist" / "train.parquet"

CELL = '''--%python
--%input=mnist
--%output=figures
import statistics
import time

import numpy as np
import pyarrow as pa
import ray
from pyjava.api.mlsql import RayContext

ray_context = RayContext.connect(globals(), None)
servers = ray_context.data_servers()
RUNS = __RUNS__


def seed_way(servers):
    """(a) the seed's data_partition_creater: a dict per row, a list per image."""
    temp_data = [item for item in RayContext.collect_from(servers)]
    train_images = np.array([np.array(item["image"]) for item in temp_data])
    return train_images.reshape((len(temp_data), 28 * 28)).astype("float32")


def arrow_way(servers):
    """(b) Arrow straight from the object store, the list column's values as one buffer."""
    return RayContext.to_numpy(servers, "image", "float32")


def pyarrow_way(servers):
    """(b') the same with pyarrow's own conversion."""
    column = RayContext.to_arrow(servers).column("image").combine_chunks()
    values = column.flatten().to_numpy(zero_copy_only=False)
    return values.reshape(len(column), -1).astype("float32")


@ray.remote(num_cpus=1)
class Reader:
    def timed(self, way, servers, runs):
        times, result = [], None
        for _ in range(runs + 1):
            start = time.perf_counter()
            result = way(servers)
            times.append(time.perf_counter() - start)
        return times[0], statistics.median(times[1:]), float(result.sum(dtype="float64")), result.shape

    def memory_limit(self, servers, runs):
        """(c) the same bytes, already a uint8 matrix in this process: copy and convert."""
        source = np.ascontiguousarray(RayContext.to_numpy(servers, "image"))
        times, result = [], None
        for _ in range(runs + 1):
            start = time.perf_counter()
            result = np.copy(source).astype("float32")
            times.append(time.perf_counter() - start)
        return times[0], statistics.median(times[1:]), float(result.sum(dtype="float64")), result.shape


rows = []
# a fresh actor per method, so that each "first" figure is a first read in a new worker
for name, way, runs in (("a", seed_way, max(3, RUNS // 5)), ("b", arrow_way, RUNS), ("b'", pyarrow_way, RUNS)):
    reader = Reader.remote()
    first, typical, checksum, shape = ray.get(reader.timed.remote(way, servers, runs))
    rows.append({"method": name, "first_s": first, "typical_s": typical, "checksum": checksum, "rows": shape[0]})
    ray.kill(reader)
reader = Reader.remote()
first, typical, checksum, shape = ray.get(reader.memory_limit.remote(servers, RUNS))
rows.append({"method": "c", "first_s": first, "typical_s": typical, "checksum": checksum, "rows": shape[0]})
ray.kill(reader)
rows.append({"method": "servers", "first_s": 0.0, "typical_s": 0.0, "checksum": 0.0, "rows": len(servers)})
ray_context.build_result(rows)
'''

LABELS = {
    "a": "(a) collect_from dict rows (seed)",
    "b": "(b) to_arrow + to_numpy (vectorised)",
    "b'": "(b') to_arrow + pyarrow to_numpy",
    "c": "(c) np.copy + astype (memory limit)",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="timed repetitions after the first call")
    parser.add_argument("--ray-address", help="an existing Ray cluster (default: an embedded local Ray)")
    args = parser.parse_args(argv)

    from mlsql_ray import Session

    with tempfile.TemporaryDirectory() as warehouse, Session(warehouse=warehouse, ray_address=args.ray_address) as session:
        session.execute(f"load parquet.`{TRAIN}` as mnist;")
        session.execute(CELL.replace("__RUNS__", str(args.runs)))
        rows = {r["method"]: r for r in session.table("figures").to_pylist()}

    servers = rows.pop("servers")["rows"]
    n = rows["a"]["rows"]
    megabytes = n * 784 / 1e6
    checksums = {r["checksum"] for r in rows.values()}
    print(f"{n} rows in {servers} data servers, {megabytes:.1f} MB of uint8 pixels, read into float32 "
          f"({n}, 784) inside a Ray actor; median of {args.runs} runs after the first call")
    print(f"{'method':40} {'first':>9} {'typical':>9} {'rows/s':>12} {'MB/s':>9}")
    for key, label in LABELS.items():
        r = rows[key]
        t = r["typical_s"]
        print(f"{label:40} {r['first_s'] * 1e3:7.1f}ms {t * 1e3:7.2f}ms {n / t:12,.0f} {megabytes / t:9,.0f}")
    speedup = rows["a"]["typical_s"] / rows["b"]["typical_s"]
    to_limit = rows["b"]["typical_s"] / rows["c"]["typical_s"]
    first_speedup = rows["a"]["first_s"] / rows["b"]["first_s"]
    print(f"(a)/(b) = {speedup:.0f}x   (target >= 50x: {'met' if speedup >= 50 else 'MISSED'}); "
          f"first calls: {first_speedup:.0f}x")
    print(f"(b)/(c) = {to_limit:.2f}x  (target <= 3x: {'met' if to_limit <= 3 else 'MISSED'})")
    print(f"all methods read the same values: {'yes' if len(checksums) == 1 else 'NO ' + str(checksums)}")
    return 0 if speedup >= 50 and to_limit <= 3 and len(checksums) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
