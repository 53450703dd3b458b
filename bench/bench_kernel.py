"""Issue 5's benchmark: what the Jupyter kernel costs on top of the library.

    .venv/bin/python bench/bench_kernel.py [--runs N]

(a) kernel start: from KernelManager.start_kernel() to the kernel_info_reply (what Jupyter waits
    for before a notebook can run), median of N fresh kernels; and which heavy modules the kernel
    process holds after start (checked with a --%python cell, which does not start Ray). Ray may be
    among them: since issue 27 the kernel starts its Ray in the background once it has answered
    (``MLSQL_KERNEL_RAY_AT_START``); TensorFlow, Keras and torch must not be.
(b) a one-statement select cell: execute_request to the status idle that ends it (reply and
    table output received), median of N, against ``Session.execute`` of the same statement with
    its preview computed, as the kernel shows it, in this process, median of N. The difference is
    the kernel's overhead (messages, rendering). Measured in a kernel started with
    ``MLSQL_KERNEL_RAY_AT_START=0`` (its own cost), and again in a default kernel whose Ray is
    starting in the background meanwhile (what the first cells of a notebook pay; not a target).
Targets: (a) ≤ 2 s with neither tensorflow nor keras nor torch imported; (b) overhead ≤ 100 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TRAIN = (HERE.parent / "sample_data" / "mnist" / "train.parquet").as_posix()
sys.path.insert(0, str(HERE.parent))

LOAD = f"load parquet.`{TRAIN}` as mnist;"
SELECT = """select label, count(*) as images, avg(image[300]) as center_pixel
from mnist where image[300] > 0 group by label order by label as digits;"""
HEAVY_CHECK = """--%python
import sys
print("HEAVY=" + ",".join(m for m in ("tensorflow", "keras", "torch") if m in sys.modules))
print("RAY=" + str("ray" in sys.modules))
"""


def kernelspec_here(tmp: Path) -> None:
    """Run this checkout's kernel with this Python, whatever else is installed."""
    from mlsql_ray.kernel.install import write_spec

    write_spec(tmp / "kernels" / "mlsql")
    os.environ["JUPYTER_PATH"] = os.pathsep.join(p for p in (str(tmp), os.environ.get("JUPYTER_PATH")) if p)


def run_cell(kc, code: str, timeout: float = 120) -> tuple[float, list[dict]]:
    start = time.perf_counter()
    msg_id = kc.execute(code)
    messages = []
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        messages.append(msg)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            elapsed = time.perf_counter() - start
            break
    reply = kc.get_shell_msg(timeout=timeout)
    if reply["content"]["status"] != "ok":
        raise SystemExit(f"cell failed: {reply['content'].get('evalue')}")
    return elapsed, messages


def kernel_start(runs: int, warehouse: str) -> tuple[float, list[float], str]:
    from jupyter_client import KernelManager

    times, heavy, ray = [], "?", "?"
    for i in range(runs):
        km = KernelManager(kernel_name="mlsql")
        start = time.perf_counter()
        km.start_kernel(env={**os.environ, "MLSQL_WAREHOUSE": warehouse})
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=60)  # sends kernel_info_request, returns on its reply
        times.append(time.perf_counter() - start)
        if i == 0:
            _, messages = run_cell(kc, HEAVY_CHECK)
            out = "".join(m["content"].get("text", "") for m in messages if m["msg_type"] == "stream")
            heavy = next(line for line in out.splitlines() if line.startswith("HEAVY="))[len("HEAVY="):]
            ray = next(line for line in out.splitlines() if line.startswith("RAY="))[len("RAY="):]
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return statistics.median(times), times, heavy, ray == "True"


def select_round_trip(runs: int, warehouse: str, ray_at_start: bool) -> tuple[float, float]:
    """Kernel cells and in-process Session.execute calls interleaved, so both see the same
    machine (on a shared 2-core box the load changes from second to second)."""
    from jupyter_client import KernelManager

    from mlsql_ray import Session

    km = KernelManager(kernel_name="mlsql")
    km.start_kernel(env={**os.environ, "MLSQL_WAREHOUSE": warehouse, "MLSQL_KERNEL_RAY_AT_START": "1" if ray_at_start else "0"})
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    try:
        with Session(warehouse=warehouse) as session:
            run_cell(kc, LOAD)
            session.execute(LOAD)
            for _ in range(3):  # warm: imports, DuckDB caches
                run_cell(kc, SELECT)
                session.execute(SELECT, previews=True)
            kernel_times, session_times = [], []
            for _ in range(runs):
                elapsed, messages = run_cell(kc, SELECT)
                assert any(m["msg_type"] == "display_data" for m in messages)
                kernel_times.append(elapsed)
                start = time.perf_counter()
                session.execute(SELECT, previews=True)
                session_times.append(time.perf_counter() - start)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return statistics.median(kernel_times), statistics.median(session_times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        kernelspec_here(Path(tmp))
        warehouse = str(Path(tmp) / "warehouse")

        start, all_starts, heavy, ray = kernel_start(args.runs, warehouse)
        print(f"(a) kernel start → kernel_info_reply: median {start:.2f} s over {args.runs} kernels "
              f"({', '.join(f'{t:.2f}' for t in all_starts)}); target ≤ 2 s: {'met' if start <= 2 else 'MISSED'}")
        print(f"    heavy modules in the kernel process after start: {heavy or 'none'} "
              f"(tensorflow, keras, torch must not be): {'ok' if not heavy else 'FAILED'}; "
              f"ray {'imported (its background start)' if ray else 'not imported yet'}")

        for ray_at_start in (False, True):
            kernel_s, session_s = select_round_trip(max(args.runs * 4, 10), warehouse, ray_at_start)
            overhead_ms = (kernel_s - session_s) * 1000
            verdict = (f"target ≤ 100 ms: {'met' if overhead_ms <= 100 else 'MISSED'}" if not ray_at_start
                       else "while the kernel's Ray starts in the background: not a target")
            print(f"(b) one-statement select cell round trip{', Ray starting' if ray_at_start else ''}: "
                  f"median {kernel_s * 1000:.1f} ms; Session.execute of the same statement with its preview: "
                  f"{session_s * 1000:.1f} ms; kernel overhead {overhead_ms:.1f} ms; {verdict}")
        if heavy:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
