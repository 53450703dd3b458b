"""How fast an interrupt stops a cell, and how fast the kernel answers after it (issue 5's ≤ 5 s
each). The tests (tests/test_kernel.py) check what an interrupt does; wall-clock figures belong
here, not in asserts that a loaded machine turns red.

    .venv/bin/python bench/bench_interrupt.py [--runs N] [--training]

For each cell of tests/kernel_helpers.py's INTERRUPTIBLE, N times: the interrupt is sent once the
cell is seen running; "stop" is interrupt to execute_reply, "follow-up" a one-row select after it
(execute_request to its idle). --training adds a real training cell on the kernel's embedded Ray,
interrupted after its first round (one run: it costs a Ray start). Prints median and worst.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "tests")]

from kernel_helpers import INTERRUPTIBLE, TRAIN_CELL, Kernel, checkout_kernelspec, shown  # noqa: E402

TARGET_S = 5.0
FOLLOW_UP = "select 'still here' as state as after_interrupt;"
MNIST = (HERE.parent / "sample_data" / "mnist" / "train.parquet").as_posix()


def interrupt_once(kernel: Kernel, code: str, running, start_timeout: float | None = None) -> tuple[float, float]:
    """(interrupt to reply, follow-up cell) in seconds; the cell must end in KeyboardInterrupt."""
    reply, _, stopped_in = kernel.interrupt_once_running(code, running, timeout=60, start_timeout=start_timeout)
    if reply.get("ename") != "KeyboardInterrupt":
        raise SystemExit(f"the interrupt did not stop the cell: {reply}")
    started = time.monotonic()
    follow, _ = kernel.execute(FOLLOW_UP, timeout=60)
    if follow["status"] != "ok":
        raise SystemExit(f"the follow-up cell failed: {follow}")
    return stopped_in, time.monotonic() - started


def report(name: str, figures: list[tuple[float, float]]) -> None:
    for label, values in (("stop", [f[0] for f in figures]), ("follow-up", [f[1] for f in figures])):
        verdict = "ok" if max(values) <= TARGET_S else f"OVER {TARGET_S:.0f} s"
        print(f"{name:32} {label:10} median {statistics.median(values):6.3f} s  worst {max(values):6.3f} s  {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--training", action="store_true", help="also interrupt a real training cell (starts Ray)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        with checkout_kernelspec(work / "jupyter"):
            kernel = Kernel(cwd=work, warehouse=work / "warehouse", timeout=60)
            try:
                for name, cell in INTERRUPTIBLE.items():
                    figures = []
                    for run in range(args.runs):
                        figures.append(interrupt_once(kernel, *cell(work / f"running-{name}-{run}".replace(" ", "-"))))
                    report(name, figures)
                if args.training:
                    kernel.ok(f"load parquet.`{MNIST}` as mnist;\nselect * from mnist limit 1200 as small;")
                    figures = interrupt_once(kernel, TRAIN_CELL.replace("ROUNDS", "1000"), shown("update_display_data"),
                                             start_timeout=300)
                    report("training on Ray", [figures])
            finally:
                kernel.close()


if __name__ == "__main__":
    main()
