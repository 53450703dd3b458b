"""Shared fixtures: real sessions over real files, one temporary warehouse per test."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_MNIST = ROOT / "sample_data" / "mnist"

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    return tmp_path / "warehouse"


@pytest.fixture
def session(warehouse: Path):
    from mlsql_ray import Session

    with Session(warehouse=warehouse) as s:
        yield s


@pytest.fixture
def run_cli(tmp_path: Path):
    """Run ``mlsql-ray`` in a subprocess (the real console entry point) and return the result."""
    import subprocess

    def run(*args: str, cwd: Path | None = None, timeout: float = 300):
        return subprocess.run(
            [sys.executable, "-m", "mlsql_ray.cli", *args],
            cwd=cwd or tmp_path, capture_output=True, text=True, timeout=timeout,
        )

    return run


@pytest.fixture(scope="session")
def ray_runtime():
    """One local Ray for the whole test run, never asking for more CPUs than exist. Sessions
    find it running and reuse it without owning it (they do not shut it down)."""
    import ray

    from mlsql_ray.raycluster import local_cpus, start_local_ray

    start_local_ray(num_cpus=min(2, local_cpus()), log_to_driver=True)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def mnist_servers(ray_runtime):
    """The sample MNIST train set as two data servers, in the session's Ray."""
    from training_helpers import servers_from

    return servers_from(ray_runtime, SAMPLE_MNIST / "train.parquet")


@pytest.fixture(scope="session")
def mnist_test():
    """The 2 000 held-out images as (x scaled to [0, 1], labels)."""
    import pyarrow.parquet as pq

    from mlsql_ray.train import Columns

    return Columns(scale=1 / 255)(pq.read_table(SAMPLE_MNIST / "test.parquet"))


@pytest.fixture
def ray_session(ray_runtime, warehouse: Path):
    from mlsql_ray import Session

    with Session(warehouse=warehouse) as s:
        yield s


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL server for the test run (tests/pg_server.py), stopped at the end.
    Without Debian's postgresql package the JDBC tests skip, saying so in the summary (-ra);
    .ci/run installs it, and ./test.sh does when it runs as root."""
    import pg_server

    if pg_server.binaries() is None:
        pytest.skip("PostgreSQL server binaries not found: apt-get install postgresql (./test.sh and .ci/run do)")
    server = pg_server.start()
    yield server
    server.stop()
