"""Issue 24, item 8: a ``runIn=executor`` cell's output is complete, whole-lined, in order, and
out before the next statement's.

Ray forwards a worker's prints by tailing its log file: of 100 000 lines, about 500 arrived cut
mid-line and 1 121 after the next statement's output. The cell's task now carries its own
``sys.stdout``/``sys.stderr`` back (``mlsql_ray.cells.output``), batch by batch as it prints.
"""

from __future__ import annotations

import re
import sys
import threading
from pathlib import Path

import pytest

from mlsql_ray.cells import output

PRINTS = 20_000  # enough for Ray's log stream to cut lines and fall behind the next statement
LINE = "line {:06d} " + "x" * 40
RAY_PREFIX = re.compile(r"^(?:\x1b\[\d+m)?\(\w+ pid=\d+(?:, ip=[\d.]+)?\)(?:\x1b\[0m)? ")  # Ray's mark on a worker's line

SCRIPT = """--%python
--%runIn=executor
import sys
for i in range({prints}):
    print("line %06d " % i + "x" * 40)
    if i % 1000 == 0:
        print("err %06d" % i, file=sys.stderr)
print("no line end", end="")
-- %%
select "after the cell" as marker as t;
"""


def test_an_executor_cells_output_is_whole_in_order_and_before_the_next_statement(run_cli, ray_address, tmp_path: Path):
    script = tmp_path / "prints.mlsql"
    script.write_text(SCRIPT.format(prints=PRINTS))
    done = run_cli("run", str(script), "--warehouse", str(tmp_path / "wh"), ray_address=ray_address)
    assert done.returncode == 0, done.stderr
    before, marker, after = done.stdout.partition("after the cell")
    assert marker, done.stdout[-2000:]
    printed = [text for text in (RAY_PREFIX.sub("", line) for line in before.splitlines()) if text.startswith("line ")]
    assert printed == [LINE.format(i) for i in range(PRINTS)]  # every line whole, once, in order
    assert "line 0" not in after
    assert "no line end" in before  # a last line without its end comes out too
    errors = [RAY_PREFIX.sub("", line) for line in done.stderr.splitlines() if "err " in line]
    assert errors == [f"err {i:06d}" for i in range(0, PRINTS, 1000)]


# -- the capture itself, in this process ----------------------------------------------------------

def run_captured(work) -> tuple[list[output.Batch], object]:
    batches = []
    generator = output.captured(work)
    while True:
        try:
            batches.append(next(generator))
        except StopIteration as stop:
            return batches, stop.value


def test_captured_output_comes_in_whole_lines_in_the_order_written():
    def work():
        for i in range(3000):
            print("a", i, sep="-", end="")  # a line written in pieces
            print(" done")
            if i % 1000 == 0:
                print(f"warning {i}", file=sys.stderr)
        return "result"

    stdout, stderr = sys.stdout, sys.stderr
    batches, value = run_captured(work)
    assert value == "result"
    assert (sys.stdout, sys.stderr) == (stdout, stderr)  # given back
    written = [item for batch in batches for item in batch]
    assert all(text.endswith("\n") for _, text in written)
    lines = [(name, line) for name, text in written for line in text.splitlines()]
    expected = []
    for i in range(3000):
        expected.append(("stdout", f"a-{i} done"))
        if i % 1000 == 0:
            expected.append(("stderr", f"warning {i}"))
    assert lines == expected


def test_a_line_without_its_end_goes_out_after_a_quiet_moment_and_errors_follow_the_output():
    shown = threading.Event()

    def work():
        print("50%", end="")
        shown.wait(timeout=60)  # until the partial line has come out
        print(" 100%")
        raise ValueError("late")

    generator = output.captured(work)
    assert next(generator) == [("stdout", "50%")]  # while the work still waits
    shown.set()
    assert next(generator) == [("stdout", " 100%\n")]
    with pytest.raises(ValueError, match="late"):
        next(generator)
