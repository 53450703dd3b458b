"""The kernel under stress (issue 7, item 5): one real kernel process driven by jupyter_client.

* 200 cells in a row (selects, small Python cells that do not touch Ray, ``!python conf``
  resets): every reply right, and the kernel's resident memory after them bounded (see
  ``GROWTH_BOUND_MB``); the figures give RSS at start, after warm-up and after the 200 cells.
* Python cells that put their input into Ray (``--%input``, on the test run's Ray through
  ``MLSQL_RAY_ADDRESS``), each followed by a ``!python conf`` reset: afterwards the kernel holds
  no more object references than before and the object store holds no more objects.
* A cell that allocates past its ``memoryLimit`` (and one that asks for 10 TB with no limit)
  fails with a clean MemoryError reply; the same kernel process answers the next cell, and the
  limit is gone after the cell (the same allocation then succeeds).
"""

from __future__ import annotations

import time

import pytest

from mlsql_ray.cluster import ray_internals

from conftest import SAMPLE_MNIST
from kernel_helpers import Kernel, checkout_kernelspec

MNIST = (SAMPLE_MNIST / "test.parquet").as_posix()
TIMEOUT = 60
CELLS = 200
# Bound on RSS growth over the 200 cells, after a warm-up that ran one cell of each kind (the
# engine, DuckDB, sqlglot and Ray client are loaded by then). The cells define no new names (they
# reuse five result names), so nothing should accumulate; 64 MB leaves room for allocator
# arenas, DuckDB's buffer cache and sqlglot's 512-entry translation cache, while a leak of a
# third of a megabyte per cell (one small result table kept each time) would exceed it.
GROWTH_BOUND_MB = 64


@pytest.fixture(scope="module")
def kernelspec(tmp_path_factory):
    with checkout_kernelspec(tmp_path_factory.mktemp("jupyter")) as spec:
        yield spec


@pytest.fixture(scope="module")
def kernel(kernelspec, ray_runtime, tmp_path_factory):
    work = tmp_path_factory.mktemp("stress-kernel")
    address = ray_runtime.get_runtime_context().gcs_address
    k = Kernel(work, work / "warehouse", timeout=TIMEOUT, MLSQL_RAY_ADDRESS=address)
    yield k
    k.close()


def stress_cell(i: int) -> tuple[str, str | None]:
    """Cell ``i`` of the 200 and the stdout it must print (None: not checked)."""
    if i % 10 == 9:
        return f'!python conf "runIn=driver";\n!python conf "k{i % 3}=v{i}";', None
    if i % 3 == 1:
        n = 100 + i
        return f"--%python\nvalues = [x * x for x in range({n})]\nprint(sum(values))", f"{sum(x * x for x in range(n))}\n{DONE}"
    return (f"select label, count(*) as n, {i} as cell from mnist where label < {1 + i % 9} "
            f"group by label order by label as sel{i % 5};"), None


DONE = "python cell done\n"  # what the kernel says after a Python cell without a result
RAY_CELL = """--%python
--%input=digits
import ray
from pyjava.api.mlsql import RayContext
ray_context = RayContext.connect(globals(), None)
servers = ray_context.data_servers()
print(sum(RayContext.to_arrow([s]).num_rows for s in servers))
"""
REFS_CELL = """--%python
import gc
from mlsql_ray.cluster import ray_internals
gc.collect()
print(ray_internals.reference_count())
"""


def settled_refs(kernel) -> int:
    """The kernel's object reference count once it stops changing: a cell's references are let
    go asynchronously after it ends, so one reading can still count the last cell's."""
    last = None
    for _ in range(20):
        count = int(kernel.ok(REFS_CELL).split()[0])
        if count == last:
            return count
        last = count
        time.sleep(0.25)
    return last


def object_store(ray) -> tuple[int, int]:
    """(bytes used, objects) in the test run's object store."""
    return ray_internals.object_store_usage(ray.get_runtime_context().gcs_address)


@pytest.mark.slow
def test_200_cells_in_a_row_keep_the_kernel_right_and_its_memory_bounded(kernel, figures):
    at_start = kernel.rss_mb()
    kernel.ok(f"load parquet.`{MNIST}` as mnist;")
    for i in range(10):  # warm-up: every kind of cell once or more
        code, expected = stress_cell(i)
        out = kernel.ok(code)
        assert expected is None or out == expected
    warm = kernel.rss_mb()
    pid = kernel.process.pid
    started = time.monotonic()
    for i in range(10, 10 + CELLS):
        code, expected = stress_cell(i)
        out = kernel.ok(code)
        assert expected is None or out == expected, (i, out, expected)
    elapsed = time.monotonic() - started
    after = kernel.rss_mb()
    assert kernel.process.pid == pid and kernel.km.is_alive()
    figures["kernel: RSS at start / after warm-up / after 200 cells (MB)"] = f"{at_start:.0f} / {warm:.0f} / {after:.0f}"
    figures["kernel: RSS growth over the 200 cells (MB, bound)"] = f"{after - warm:.1f} (bound {GROWTH_BOUND_MB})"
    figures["kernel: 200 cells took (s)"] = round(elapsed, 1)
    assert after - warm <= GROWTH_BOUND_MB, (warm, after)


@pytest.mark.slow  # waits for Ray's object store to drain
def test_no_ray_object_outlives_its_cell_across_conf_resets(kernel, ray_runtime, figures):
    # ordered: computed in the driver, so its partitions are objects in the store (a plain select
    # over parquet is read by the workers themselves and puts nothing there)
    kernel.ok(f"load parquet.`{MNIST}` as mnist;\nselect image, label from mnist order by label as digits;")
    assert kernel.ok(RAY_CELL) == "2000\n" + DONE  # connects the kernel to the test run's Ray
    refs_before = settled_refs(kernel)
    store_before = object_store(ray_runtime)
    for round_number in range(5):
        kernel.ok(f'!python conf "num_partitions={1 + round_number % 2}";')
        assert kernel.ok(RAY_CELL) == "2000\n" + DONE
        kernel.ok(f'!python conf "num_partitions={2 - round_number % 2}";')  # and back
    refs_after = settled_refs(kernel)
    deadline = time.monotonic() + 20  # the store frees an object once its owner's release arrives
    while (store_after := object_store(ray_runtime))[1] > store_before[1] and time.monotonic() < deadline:
        time.sleep(0.5)
    # The measurements see a leak when there is one: a cell that hides its servers in a module
    # keeps their object alive (one batch, both partitions' rows), until a later cell lets go of it.
    kernel.ok(RAY_CELL + "import sys\nsys.modules['__main__'].kept = servers\n")
    assert int(kernel.ok(REFS_CELL).split()[0]) >= refs_before + 1
    assert object_store(ray_runtime)[1] >= store_before[1] + 1
    kernel.ok("--%python\nimport sys\ndel sys.modules['__main__'].kept\n")
    assert settled_refs(kernel) <= refs_before
    figures["kernel: object refs held by the kernel before / after 5 Ray cells with conf resets"] = f"{refs_before} / {refs_after}"
    figures["kernel: object store objects before / after"] = f"{store_before[1]} / {store_after[1]}"
    assert refs_after <= refs_before, (refs_before, refs_after)
    assert store_after[1] <= store_before[1], (store_before, store_after)
    assert store_after[0] <= store_before[0] + 2**20, (store_before, store_after)


def test_a_cell_past_its_memory_limit_fails_cleanly_and_the_kernel_lives(kernel, figures):
    pid = kernel.process.pid
    reply, _ = kernel.execute("--%python\n--%memoryLimit=200\nblock = bytearray(400 * 2**20)\nprint('allocated')")
    assert reply["status"] == "error"
    assert "MemoryError (past the cell's memoryLimit of 200 MB)" in reply["evalue"], reply["evalue"]
    assert "line 3" in reply["evalue"]
    reply, _ = kernel.execute("--%python\nhuge = bytearray(10**13)")  # 10 TB, no limit set: refused by the OS
    assert reply["status"] == "error" and "MemoryError" in reply["evalue"], reply["evalue"]
    assert kernel.km.is_alive() and kernel.process.pid == pid
    assert kernel.ok("--%python\nblock = bytearray(400 * 2**20)\nprint(len(block) // 2**20)") == "400\n" + DONE  # the limit went with its cell
    assert kernel.ok("select 1 as one as still_here;") == ""
    kernel.ok('!python conf "memoryLimit=lots";')
    reply, _ = kernel.execute("--%python\nx = 1")
    assert reply["status"] == "error" and "memoryLimit is a number of megabytes" in reply["evalue"], reply["evalue"]
    kernel.ok('!python conf "memoryLimit=";')
    assert kernel.ok("--%python\nprint('fine')") == "fine\n" + DONE
    figures["kernel: memoryLimit=200 cell allocating 400 MB"] = "MemoryError reply, kernel alive (same pid)"
