"""Quiet by default (issue 16): TensorFlow's, absl's and Ray's own log lines stay out of the
user's output, ours and the user's prints do not; ``--verbose`` brings everything back."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# What must not reach the user: the lines TensorFlow, absl and Ray print on their own.
LIBRARY_NOISE = [re.compile(p) for p in (
    r"absl::InitializeLog",
    r"^\s*[IWE]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ \S+:\d+\]",  # absl/glog-formatted C++ lines
    r"oneDNN custom operations",
    r"cpu_feature_guard|rebuild TensorFlow",
    r"WARNING:absl:",
    r"Ray deduplicates logs",
    r"tensorboard --logdir",
    r"\bINFO (worker|node|services|scripts)\.py:\d+ -- ",  # Ray's own Python logging
)]

TF_LINES = (b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
            b"I0000 00:00:1796035638.959112   11615 port.cc:153] oneDNN custom operations are on. You may see "
            b"slightly different numerical results.\n")


def noise_in(text: str) -> list[str]:
    return [line for line in text.splitlines() if any(p.search(line) for p in LIBRARY_NOISE)]


def cli(*args: str, cwd: Path = ROOT, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    return subprocess.run([sys.executable, "-m", "mlsql_ray", "run", *args], cwd=cwd, env=env, check=False,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_c_level_library_lines_are_dropped_and_the_rest_kept(tmp_path):
    """What C++ code writes to file descriptor 2 (as TensorFlow does on import) is filtered;
    a --verbose run, or !python conf "verbose=true", lets it through."""
    script = tmp_path / "job.mlsql"
    script.write_text(f"""--%python
import os
os.write(2, {TF_LINES!r} + b"from the user\\n")
print("done")
""")
    quiet = cli(str(script), "--warehouse", str(tmp_path / "wh"))
    assert quiet.returncode == 0, quiet.stderr
    assert noise_in(quiet.stderr) == [] and "from the user" in quiet.stderr
    loud = cli(str(script), "--warehouse", str(tmp_path / "wh"), "--verbose")
    assert len(noise_in(loud.stderr)) == 2 and "from the user" in loud.stderr
    script.write_text('!python conf "verbose=true";\n-- %%\n' + script.read_text())
    switched = cli(str(script), "--warehouse", str(tmp_path / "wh"))
    assert len(noise_in(switched.stderr)) == 2


def demo_with_fewer_rounds(folder: Path) -> Path:
    """``./demo.sh``'s job with shorter trainings (1 epoch of the seed's loop instead of 6, 2 rounds
    of ``train.fit`` instead of 7): the same cells, libraries and logs (the full training runs as a notebook in tests/test_kernel.py). The copy sits
    beside a link to sample_data, so its relative paths read the same files."""
    text = (ROOT / "notebooks" / "mnist_distributed.mlsql").read_text()
    for full, short in (("for epoch in range(6):", "for epoch in range(1):"), ("rounds=7,", "rounds=2,")):
        assert text.count(full) == 1, f"the demo no longer has {full!r}: update this test"
        text = text.replace(full, short)
    (folder / "sample_data").symlink_to(ROOT / "sample_data")
    (folder / "notebooks").mkdir()
    script = folder / "notebooks" / "mnist_distributed.mlsql"
    script.write_text(text)
    return script


@pytest.mark.slow
def test_the_demo_prints_no_library_log_lines(tmp_path):
    """``./demo.sh``'s job (trains for real): training progress shows, TensorFlow's, absl's and
    Ray's own lines do not."""
    done = cli(str(demo_with_fewer_rounds(tmp_path)), "--warehouse", str(tmp_path / "wh"), timeout=1200)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert noise_in(output) == []
    assert re.search(r"round \d+/2, loss", output)  # our own progress still shows


def test_ray_workers_library_lines_are_dropped_and_their_prints_kept(ray_session, capfd):
    """What Ray forwards from a worker passes the same filter: a task's TensorFlow-like lines
    are dropped, its print() reaches the driver's output as before."""
    ray_session.execute(f"""--%python
import os
import ray
from pyjava.api.mlsql import RayContext

RayContext.connect(globals(), None)

@ray.remote
def chatty():
    os.write(2, {TF_LINES!r} + b"worker stderr done\\n")
    print("hello from a worker", flush=True)

ray.get(chatty.remote())
""")
    seen, deadline = "", time.monotonic() + 120  # Ray forwards worker output asynchronously
    while not ("worker stderr done" in seen and "hello from a worker" in seen) and time.monotonic() < deadline:
        time.sleep(0.2)
        out, err = capfd.readouterr()
        seen += out + err
    assert "worker stderr done" in seen and "hello from a worker" in seen
    assert noise_in(seen) == []
