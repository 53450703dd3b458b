"""A Python cell that kills the process it runs in (issue 24, item 2).

* ``runIn=executor``: a cell whose Ray worker dies under it (``os._exit(5)``, a segfault, SIGKILL)
  ran four times before (Ray's default task retries: its side effects happened four times) and
  ended as an internal error, with Ray's own lines about the death on stdout. It runs once, the
  death is the cell's error at its line, Ray's lines are left out; the next run works as usual.
* ``runIn=driver``: the cell runs in mlsql-ray's own process, where its ``os._exit`` ended the run
  without a word. The cell fails instead, with the reason, even when its code catches
  ``Exception``; the session's process goes on (a forked child's ``os._exit`` still exits it).

Every run is an ``mlsql-ray run`` subprocess: a process that dies takes only itself down. Each
cell appends a line to a file before it dies: the number of lines is the number of runs.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mlsql_ray.config import RAY_ADDRESS_ENV

KILLS = {
    "os._exit(5)": "os._exit(5)",
    "segfault": "import ctypes\nctypes.string_at(0)",
    "SIGKILL": "import signal\nos.kill(os.getpid(), signal.SIGKILL)",
}


def run_script(tmp_path: Path, text: str, ray_address: str | None = None) -> subprocess.CompletedProcess:
    import os

    script = tmp_path / "cells.mlsql"
    script.write_text(text)
    env = {**os.environ, RAY_ADDRESS_ENV: ray_address} if ray_address else None
    return subprocess.run([sys.executable, "-m", "mlsql_ray", "run", str(script), "--warehouse", str(tmp_path / "wh")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)


# kill -> (the run's folder, its result): test_the_cell_after_a_dead_worker_runs reads the
# os._exit(5) run instead of killing a worker of its own (one CLI run and one worker death less)
KILLED: dict[str, tuple[Path, subprocess.CompletedProcess]] = {}


def killed_run(folder: Path, kill: str, ray_address: str) -> tuple[Path, subprocess.CompletedProcess]:
    """An ``mlsql-ray run`` whose executor cell appends to ``runs.txt`` and is killed by ``kill``."""
    if kill not in KILLED:
        runs = folder / "runs.txt"
        KILLED[kill] = folder, run_script(folder, f"""select 1 as a as t;
-- %%
--%python
--%runIn=executor
import os
with open({str(runs)!r}, "a") as f:
    f.write("ran\\n")
{KILLS[kill]}
""", ray_address)
    return KILLED[kill]


@pytest.mark.parametrize("kill", list(KILLS), ids=list(KILLS))
def test_an_executor_cell_whose_worker_dies_runs_once_and_fails_at_its_line(tmp_path, ray_address, kill, figures):
    folder, done = killed_run(tmp_path, kill, ray_address)
    runs = folder / "runs.txt"
    output = done.stdout + done.stderr
    assert runs.read_text() == "ran\n", "the cell ran more than once"
    assert done.returncode == 1, output
    assert "cells.mlsql:3:1: the Python worker running this cell died" in done.stderr, output
    assert "ran once and was not retried" in done.stderr
    assert "internal error" not in output and "will be retried" not in output.lower(), output
    assert "A worker died or was killed" not in output  # the raylet's paragraph: the error says it
    figures[f"executor cell killed by {kill}: runs"] = len(runs.read_text().splitlines())


def test_the_cell_after_a_dead_worker_runs(tmp_path, ray_address):
    """The run after one whose executor cell's worker died (os._exit(5): the run above, or made
    here when this test runs alone) works as usual on the same Ray."""
    _, done = killed_run(tmp_path, "os._exit(5)", ray_address)
    assert done.returncode == 1 and "died" in done.stderr, done.stderr
    again = run_script(tmp_path, """--%python
--%runIn=executor
--%output=after
context.build_result([{"after": 1}])
""", ray_address)
    assert again.returncode == 0, again.stderr
    assert again.stdout.split()[:3] == ["after", "int64", "-----"] and "(1 row)" in again.stdout, again.stdout


def test_a_driver_cell_calling_os_exit_fails_with_the_reason_and_the_process_goes_on(tmp_path):
    runs = tmp_path / "runs.txt"
    done = run_script(tmp_path, f"""select 1 as a as t;
-- %%
--%python
import os
pid = os.fork()
if pid == 0:  # a forked child's os._exit still ends the child
    os._exit(7)
child = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
with open({str(runs)!r}, "a") as f:
    f.write(f"child {{child}}\\n")
try:
    os._exit(5)
except Exception:
    print("swallowed")
with open({str(runs)!r}, "a") as f:
    f.write("went on\\n")
-- %%
select 2 as b as never_runs;
""")
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert "cells.mlsql:12:1: the Python cell failed" in done.stderr, done.stderr
    assert "os._exit(5) would end mlsql-ray's own process" in done.stderr
    assert "swallowed" not in done.stdout and "never_runs" not in done.stdout
    assert runs.read_text() == "child 7\n"
