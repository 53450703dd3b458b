"""Cells against a real ``ray start --head`` on this machine, and addresses nobody answers.

The head runs in its own process group with its own temp dir (so no other Ray user on the
machine finds it through ``/tmp/ray/ray_current_cluster``) and is stopped by killing that
group, never with ``ray stop``, which would stop every Ray on the machine.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import pytest
from deltalake import DeltaTable

from mlsql_ray import MLSQLError, Session

TEST_PARQUET = Path(__file__).resolve().parent.parent / "sample_data" / "mnist" / "test.parquet"
RAY = Path(sys.executable).with_name("ray")
HEAD_START_TIMEOUT_S = 120


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def stop_group(process: subprocess.Popen) -> None:
    """Stop the head and everything it started: its process group, TERM first, then KILL."""
    for sig, grace in ((signal.SIGTERM, 5), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=grace)
            break
        except subprocess.TimeoutExpired:
            continue
    try:  # members that outlived the leader
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def start_head(log: Path, command: list[str]) -> tuple[int, subprocess.Popen, str]:
    """``command`` (a ``ray start --head ...`` line as its words) run with ``--block`` in a new
    process group and a temp dir of its own; (GCS port, process, temp dir) once it says "Ray
    runtime started", or None (and nothing left running) if it does not."""
    port = int(next(word for word in command if word.startswith("--port=")).partition("=")[2])
    temp_dir = tempfile.mkdtemp(prefix="mlsqlray-", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    # every other port fixed: left to chance, the raylet waits for the agents to report theirs and,
    # on a busy machine, gives up ("The current node timed out during startup")
    ports = {flag: free_port() for flag in ("ray-client-server-port", "dashboard-port", "dashboard-agent-grpc-port",
                                            "dashboard-agent-listen-port", "runtime-env-agent-port",
                                            "metrics-export-port")
             if not any(word.startswith(f"--{flag}=") for word in command)}
    # no dashboard unless the command asks for one (tests/test_submit.py's Ray Jobs need it)
    dashboard_off = [] if any(w.startswith("--include-dashboard") for w in command) else ["--include-dashboard=false"]
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["RAY_AUTH_MODE"] = "token"
    # the head's jobs run `python` as a cluster's image would: this test run's interpreter
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    with open(log, "w") as out:
        head = subprocess.Popen(
            [str(RAY), *command[1:], *dashboard_off, "--disable-usage-stats", f"--temp-dir={temp_dir}",
             "--block", *(f"--{flag}={value}" for flag, value in ports.items())],
            stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    deadline = time.monotonic() + HEAD_START_TIMEOUT_S
    while not (listening(port) and "Ray runtime started" in log.read_text()):
        if head.poll() is not None or time.monotonic() > deadline:
            stop_group(head)
            shutil.rmtree(temp_dir, ignore_errors=True)
            return None
        time.sleep(0.5)
    return port, head, temp_dir


@contextlib.contextmanager
def running_head(tmp_path: Path, command: list[str]):
    """``start_head``, stopped at the end by killing its process group. Ray's start-up gives up
    after 30 s on a busy machine: one retry."""
    started = start_head(tmp_path / "head.log", command) or start_head(tmp_path / "head-retry.log", command)
    if started is None:
        pytest.fail(f"ray start --head did not come up, twice:\n{(tmp_path / 'head-retry.log').read_text()[-3000:]}")
    port, head, temp_dir = started
    try:
        yield port, head
    finally:
        stop_group(head)
        shutil.rmtree(temp_dir, ignore_errors=True)
    assert not listening(port), "the head still answers after its process group was killed"


CLUSTER_PAGE = Path(__file__).resolve().parent.parent / "docs" / "cluster.md"


def documented_ray_start() -> list[str]:
    """The ``ray start`` line of docs/cluster.md (the ```bash block after the marker), as its words."""
    block = re.search(r"<!-- tests/test_cluster.py runs this -->\s*```bash\n(.*?)```", CLUSTER_PAGE.read_text(), re.S)
    lines = [line for line in block.group(1).splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("ray start "), lines
    return shlex.split(lines[0])


class Head(NamedTuple):
    address: str  # HOST:PORT of its GCS
    port: int
    cpus: float
    process: subprocess.Popen


@pytest.fixture(scope="module")
def documented_head(tmp_path_factory) -> Head:
    """docs/cluster.md's exact ``ray start --head`` line (token authentication on), started once
    for the module's tests that run cells on an existing cluster: a head costs tens of seconds to
    start and stop on the 2-core machine."""
    command = documented_ray_start()
    host = next(w for w in command if w.startswith("--node-ip-address=")).partition("=")[2]
    cpus = float(next(w for w in command if w.startswith("--num-cpus=")).partition("=")[2])
    with running_head(tmp_path_factory.mktemp("head"), command) as (port, process):
        yield Head(f"{host}:{port}", port, cpus, process)


CELL_SCRIPT = """
load parquet.`{parquet}` as mnist;
-- %%
--%python
--%input=mnist
--%output=where
import ray
from pyjava.api.mlsql import RayContext

ray_context = RayContext.connect(globals(), {connect!r})
servers = ray_context.data_servers()

@ray.remote
def count(server):
    return server.read().num_rows

ray_context.build_result([{{
    "gcs": ray.get_runtime_context().gcs_address,
    "cpus": ray.cluster_resources()["CPU"],
    "servers": len(servers),
    "rows": sum(ray.get([count.remote(s) for s in servers])),
}}])
-- %%
save overwrite where as delta.`checks.where`;
"""


def start_cli(script: Path, warehouse: Path, *args: str, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "mlsql_ray", "run", str(script), "--warehouse", str(warehouse),
                             *args], cwd=script.parent, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


@pytest.mark.slow  # starts a `ray start --head` of its own
def test_cells_run_on_an_existing_cluster(documented_head: Head, tmp_path: Path):
    address, port, cpus, head = documented_head
    base_env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_AUTH_MODE")}
    runs = {}
    # (the seed's way, the address in RayContext.connect: test_the_documented_ray_start_line_...)
    # (1) --ray-address for the whole run, connect(globals(), None) in the cell
    by_flag = tmp_path / "by_flag.mlsql"
    by_flag.write_text(CELL_SCRIPT.format(parquet=TEST_PARQUET, connect=None))
    runs["flag"] = start_cli(by_flag, tmp_path / "wh2", "--ray-address", address,
                             env={**base_env, "RAY_AUTH_MODE": "token"})
    # (2) a client that explicitly does not authenticate is refused with a clear hint
    runs["no_token"] = start_cli(by_flag, tmp_path / "wh3", "--ray-address", address,
                                 env={**base_env, "RAY_AUTH_MODE": "disabled"})
    done = {name: (p, *p.communicate(timeout=240)) for name, p in runs.items()}
    assert head.poll() is None, "the head died during the runs"

    process, stdout, stderr = done["flag"]
    assert process.returncode == 0, f"{stdout}\n{stderr}"
    rows = DeltaTable(str(tmp_path / "wh2" / "checks" / "where")).to_pyarrow_table().to_pylist()
    assert rows[0]["gcs"].endswith(f":{port}"), rows  # the head's GCS, not an embedded Ray
    assert rows == [{"gcs": rows[0]["gcs"], "cpus": cpus, "servers": int(cpus), "rows": 2000}]

    process, stdout, stderr = done["no_token"]
    assert process.returncode == 1
    assert f"cannot connect to Ray at {address}" in stderr
    assert "RAY_AUTH_MODE=token" in stderr
    assert "where" not in stdout  # nothing ran, nothing was saved
    assert not (tmp_path / "wh3" / "checks" / "where").exists()


@pytest.mark.slow
def test_the_documented_ray_start_line_gives_the_seeds_address(documented_head: Head, tmp_path: Path):
    """docs/cluster.md's exact ``ray start`` (plus --block, a temp dir and pinned agent ports, so the
    test can stop it by process group) starts, and a cell's ``RayContext.connect(globals(),
    "HOST:PORT")`` with that head's address runs its work there, as the seed's cell does, with no
    RAY_AUTH_MODE in the environment (the token in ~/.ray/auth_token is sent because the cluster
    is on this machine)."""
    address, port, cpus, head = documented_head
    assert f"`{address}`" in CLUSTER_PAGE.read_text()  # the address the page tells the seed to use
    script = tmp_path / "seed.mlsql"
    script.write_text(CELL_SCRIPT.format(parquet=TEST_PARQUET, connect=address))
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_AUTH_MODE")}
    process = start_cli(script, tmp_path / "wh", env=env)
    stdout, stderr = process.communicate(timeout=240)
    assert process.returncode == 0, f"{stdout}\n{stderr}"
    assert head.poll() is None
    rows = DeltaTable(str(tmp_path / "wh" / "checks" / "where")).to_pyarrow_table().to_pylist()
    assert rows[0]["gcs"].endswith(f":{port}"), rows  # the head's GCS, not an embedded Ray
    assert rows == [{"gcs": rows[0]["gcs"], "cpus": cpus, "servers": int(cpus), "rows": 2000}]


UNREACHABLE_SCRIPT = """
--%python
from pyjava.api.mlsql import RayContext
RayContext.connect(globals(), None)
"""


@pytest.mark.slow
def test_unreachable_address_is_a_quick_clear_error(run_cli, tmp_path: Path):
    """The address is probed first (raycluster.check_reachable: one connect, its own timeout), so
    Ray's own retry loop never runs: its error, not Ray's, is the one shown (bench/bench_fail_fast.py
    times it)."""
    port = free_port()  # nobody listens there
    script = tmp_path / "cell.mlsql"
    script.write_text(UNREACHABLE_SCRIPT)
    done = run_cli("run", str(script), "--ray-address", f"127.0.0.1:{port}", timeout=120)
    assert done.returncode == 1
    assert f"cannot reach Ray at 127.0.0.1:{port}: Connection refused; is a Ray head running there" in done.stderr
    assert f"{script}:4:" in done.stderr  # the connect line of the cell


def test_unreachable_address_leaves_the_running_ray_alone(ray_session: Session, ray_runtime):
    """A cell asking for a cluster that is not there fails, naming it, and the Ray the
    process already has keeps working for the next cell."""
    port = free_port()
    with pytest.raises(MLSQLError, match=f"cannot reach Ray at 127.0.0.1:{port}"):
        ray_session.execute(f"--%python\nfrom pyjava.api.mlsql import RayContext\n"
                            f"RayContext.connect(globals(), '127.0.0.1:{port}')\n")
    assert ray_runtime.is_initialized()
    ray_session.execute("--%python\n--%output=alive\nimport ray\nfrom pyjava.api.mlsql import RayContext\n"
                        "rc = RayContext.connect(globals(), None)\n"
                        "rc.build_result([{'v': ray.get(ray.remote(lambda: 41 + 1).remote())}])\n")
    assert ray_session.table("alive").to_pylist() == [{"v": 42}]
    with Session(warehouse=ray_session.warehouse, ray_address=f"127.0.0.1:{port}") as other:
        with pytest.raises(MLSQLError, match=f"127.0.0.1:{port}"):
            other.execute("--%python\nfrom pyjava.api.mlsql import RayContext\nRayContext.connect(globals(), None)\n")
    assert ray_runtime.is_initialized()


def test_bad_address_syntax_is_named(ray_session: Session):
    with pytest.raises(MLSQLError, match="bad Ray address 'nowhere'"):
        ray_session.execute("--%python\nfrom pyjava.api.mlsql import RayContext\n"
                            "RayContext.connect(globals(), 'nowhere')\n")
