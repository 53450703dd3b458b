"""Selects are streamed from DuckDB into a save, and a Python cell's data servers are read by
Ray workers from the files themselves: the process never holds the table whole.

The guard against a regression to full materialisation: the same ``mlsql-ray run`` over a small
and a large parquet file (the large one holds 600 MB more in Arrow memory) must peak at nearly
the same resident memory; holding the select's result, handing deltalake a whole table, or
reading a cell's input into the driver, adds at least the data's size.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from mlsql_ray.config import RAY_ADDRESS_ENV

ROW_BYTES = 8 + 8 + 8 + 4  # id, x, y, k in Arrow memory
CHUNK = 1_000_000

SCRIPT = """load parquet.`{path}` as t;
select id, x, y * 2 as y2, k from t where x < 0.9 as sel;
save overwrite sel as delta.`db.out`;
"""


def write_numbers(path: Path, rows: int) -> None:
    """``rows`` rows of id, x (id % 10 / 10: nine in ten pass ``x < 0.9``), y and k, written a
    chunk at a time so this process stays small too."""
    schema = pa.schema([("id", pa.int64()), ("x", pa.float64()), ("y", pa.float64()), ("k", pa.int32())])
    with pq.ParquetWriter(path, schema, compression="none") as writer:
        for start in range(0, rows, CHUNK):
            ids = np.arange(start, min(rows, start + CHUNK), dtype=np.int64)
            writer.write_table(pa.table({"id": ids, "x": (ids % 10) / 10, "y": ids * 0.5, "k": (ids % 1000).astype(np.int32)},
                                        schema=schema))


PEAK_OF_CHILD = ("import resource, subprocess, sys; code = subprocess.call(sys.argv[2:]); "
                 "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)); "
                 "sys.exit(code)")


def peak_rss_of_run(script: Path, warehouse: Path, env: dict[str, str] | None = None) -> int:
    """Run ``mlsql-ray run script``; its peak resident memory in bytes, as the kernel counted it
    (``ru_maxrss`` of a fresh parent that ran only this process: polling RSS misses short peaks,
    so a small run's peak could be missed and a large run's caught)."""
    peak_file = warehouse.with_suffix(".peak")
    result = subprocess.run([sys.executable, "-c", PEAK_OF_CHILD, str(peak_file),
                             sys.executable, "-m", "mlsql_ray", "run", str(script), "--warehouse", str(warehouse)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    assert result.returncode == 0, result.stdout.decode()
    return int(peak_file.read_text()) * 1024


EXTRA_ROWS = 600 * 2**20 // ROW_BYTES
SIZES = {"small": CHUNK, "large": CHUNK + EXTRA_ROWS}


@pytest.fixture(scope="module")
def numbers(tmp_path_factory):
    """The small and the large parquet file (``SIZES``), written once for the module's tests:
    writing the large one takes seconds; deleted when the module ends (650 MB)."""
    folder = tmp_path_factory.mktemp("numbers")
    files = {label: folder / f"{label}.parquet" for label in SIZES}
    for label, path in files.items():
        write_numbers(path, SIZES[label])
    yield files
    for path in files.values():
        path.unlink()


@pytest.mark.slow
def test_saving_a_select_over_a_big_file_streams(tmp_path, numbers):
    peaks = {}
    for label, data in numbers.items():
        script = tmp_path / f"{label}.mlsql"
        script.write_text(SCRIPT.format(path=data))
        peaks[label] = peak_rss_of_run(script, tmp_path / label)
    saved = DeltaTable(str(tmp_path / "large" / "db" / "out"))
    assert sum(saved.get_add_actions(flatten=True).column("num_records").to_pylist()) == \
        SIZES["large"] - len(range(9, SIZES["large"], 10))  # all but x = 0.9
    growth = peaks["large"] - peaks["small"]
    assert growth < EXTRA_ROWS * ROW_BYTES / 2, f"peak RSS grew by {growth / 2**20:.0f} MB for 600 MB more data"


CELL_LOAD = """load parquet.`{path}` as t;
select id, x, y * 2 as y2 from t where x < 0.9 as sel;
"""

# a cell that reads its input ``{table}`` in two Ray tasks, and the save of what they saw
CELL_READING = """-- %%
--%python
--%input={table}
--%output=seen_{table}
--%num_partitions=2
import ray
from pyjava.api.mlsql import RayContext

rc = RayContext.connect(globals(), None)


@ray.remote(num_cpus=1)
def read(server):
    part = server.read()
    return {{"rows": part.num_rows, "ids": int(part.column("id").to_numpy().sum())}}


rc.build_result(ray.get([read.remote(s) for s in rc.data_servers()]))
-- %%
save overwrite seen_{table} as json.`{out}`;
"""


@pytest.mark.slow  # CLI runs whose cells read a file in Ray workers: a minute on the 2-core machine
def test_a_cells_file_input_is_read_by_the_workers_not_the_driver(tmp_path, ray_address, numbers):
    """A cell whose input is a parquet load, or a select over one, hands its workers what to read:
    the driver's peak memory does not grow with the data (today's main read it all in, then
    copied it into the object store). One run per file has a cell of each kind: either one
    reading its input in the driver would add the data's size to the run's peak."""
    import pyarrow.json as pj

    env = {**os.environ, RAY_ADDRESS_ENV: ray_address}
    peaks = {}
    for label, data in numbers.items():
        ids = np.arange(SIZES[label], dtype=np.int64)
        outs = {table: tmp_path / f"{label}-{table}-out" for table in ("t", "sel")}
        script = tmp_path / f"{label}.mlsql"
        script.write_text(CELL_LOAD.format(path=data)
                          + "".join(CELL_READING.format(table=table, out=out) for table, out in outs.items()))
        peaks[label] = peak_rss_of_run(script, tmp_path / label, env)
        for table, kept in (("t", ids), ("sel", ids[ids % 10 != 9])):
            seen = pa.concat_tables(pj.read_json(f) for f in sorted(outs[table].iterdir()))
            assert sorted(seen.column("rows").to_pylist()) != [0, 0]
            assert sum(seen.column("rows").to_pylist()) == len(kept)
            assert sum(seen.column("ids").to_pylist()) == int(kept.sum())
    growth = peaks["large"] - peaks["small"]
    assert growth < EXTRA_ROWS * ROW_BYTES / 10, f"peak RSS grew {growth / 2**20:.0f} MB for 600 MB more data"
