"""Shared fixtures: real sessions over real files, one temporary warehouse per test."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import Phase, settings

from mlsql_ray.config import RAY_ADDRESS_ENV

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_MNIST = ROOT / "sample_data" / "mnist"

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Kernels the tests start leave Ray to the first cell that needs it (most never do); test_kernel.py's
# ray_kernel starts its Ray at start-up, as a user's kernel does
os.environ.setdefault("MLSQL_KERNEL_RAY_AT_START", "0")

# Hypothesis profiles: "ci" (chosen when CI=true, as .ci/run sets) gives the fuzz suite its full
# 10 000 inputs (tests/reliability/test_fuzz.py); "dev", the default elsewhere, a tenth, so a local
# run spends seconds there, not a minute and a half. HYPOTHESIS_PROFILE=ci runs the full budget
# locally. A profile's max_examples is the scale: 100 (Hypothesis' own default) is 100 %; property
# tests that cost under a second keep their fixed budgets. Neither explains a failure (Phase.explain):
# its line tracing in this suite's process, Ray's threads and all, ran a failing property test for
# over 15 minutes in a CI run (docs/tests.md, 2026-12-07); the shrunk example is reported either way.
NO_EXPLAIN = tuple(phase for phase in Phase if phase is not Phase.explain)
settings.register_profile("ci", max_examples=100, phases=NO_EXPLAIN)
settings.register_profile("dev", max_examples=10, phases=NO_EXPLAIN)
IN_CI = os.environ.get("CI", "").lower() in ("1", "true")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if IN_CI else "dev"))


def examples(full: int) -> int:
    """How many inputs a property test whose CI budget is ``full`` tries under the loaded profile."""
    return max(1, full * settings.default.max_examples // 100)


# Tests that use these fixtures train on MNIST or start a Ray of their own: the slow tier.
SLOW_FIXTURES = {"mnist_servers", "mnist_trained"}


# Tests that need a Debian package (scripts/system-packages.sh installs both when ./test.sh runs
# as root): (what they are, how to tell them, how to get and run them). A run where they skipped
# ends by saying so, after pytest's own last line, so nobody takes the green bar for all of it;
# with CI=true (.ci/run, which installs both) such a skip is a failure: CI must run them.
NEEDS_PACKAGE = {
    "browser": ("the browser test", lambda item: item.path.name == "test_browser.py",
                "apt-get install chromium && ./test.sh tests/test_browser.py"),
    "jdbc": ("the JDBC tests against PostgreSQL", lambda item: "postgres" in getattr(item, "fixturenames", ()),
             "apt-get install postgresql && ./test.sh tests/test_jdbc.py"),
}
_needs: dict[str, str] = {}  # test id -> NEEDS_PACKAGE key


def pytest_collection_modifyitems(config, items):
    """``-m "not slow"`` is the loop to run while coding; whatever trains MNIST is slow by
    definition, without each test having to say so."""
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
        for key, (_, needs, _) in NEEDS_PACKAGE.items():
            if needs(item):
                _needs[item.nodeid] = key


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """With CI=true, a test of ``NEEDS_PACKAGE`` that skipped (no PostgreSQL, no Chromium) fails."""
    outcome = yield
    report = outcome.get_result()
    if IN_CI and report.skipped and not hasattr(report, "wasxfail") and item.nodeid in _needs:
        what, _, command = NEEDS_PACKAGE[_needs[item.nodeid]]
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"CI=true, but {what} skipped ({reason}): CI must run them ({command})"


def pytest_unconfigure(config):
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    skipped = {_needs[r.nodeid] for r in reporter.stats.get("skipped", []) if r.nodeid in _needs}
    for key in sorted(skipped):
        what, _, command = NEEDS_PACKAGE[key]
        reporter.write_line(f"NOT RUN: {what} skipped (see the skip reasons above); to run: {command}", red=True, bold=True)


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

    def run(*args: str, cwd: Path | None = None, timeout: float = 300, ray_address: str | None = None):
        """``ray_address``: the Ray its Python cells join (the ``ray_address`` fixture: the test
        run's, instead of an embedded Ray started and stopped by every such run)."""
        env = {**os.environ, RAY_ADDRESS_ENV: ray_address} if ray_address else None
        return subprocess.run(
            [sys.executable, "-m", "mlsql_ray", *args],
            cwd=cwd or tmp_path, capture_output=True, text=True, timeout=timeout, env=env,
        )

    return run


@pytest.fixture(scope="session")
def ray_runtime():
    """One local Ray for the whole test run, never asking for more CPUs than exist. Sessions
    find it running and reuse it without owning it (they do not shut it down)."""
    import ray

    from mlsql_ray.cluster.link import local_cpus, start_local_ray

    start_local_ray(num_cpus=min(2, local_cpus()), log_to_driver=True)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def ray_address(ray_runtime) -> str:
    """The test run's Ray for subprocesses (CLI runs, kernels, JupyterLab) to join through
    ``$MLSQL_RAY_ADDRESS``: an embedded Ray costs each of them seconds to start and stop. One test
    keeps the embedded start (test_kernel.py's ``ray_kernel``)."""
    return ray_runtime.get_runtime_context().gcs_address


@pytest.fixture(scope="module")
def module_pool(ray_runtime):
    """A warm pool (mlsql_ray.cluster.warm) for one test module's runs, released when the module ends."""
    from mlsql_ray.cluster.warm import WarmPool

    with WarmPool() as pool:
        yield pool


@pytest.fixture
def warm_workers(module_pool):
    """Runs of this test take and leave actors in the module's warm pool, as a session's runs do:
    a training worker imports TensorFlow when it starts (seconds), so tests of what a run does,
    not of how its actors start or end, share them. Idle actors hold their CPUs, so a test that
    counts live actors counts those started since it began, not all."""
    with module_pool.active():
        yield module_pool


@pytest.fixture(scope="session")
def mnist_servers(ray_runtime):
    """The sample MNIST train set as two data servers, in the session's Ray."""
    from training_helpers import servers_from

    return servers_from(ray_runtime, SAMPLE_MNIST / "train.parquet")


# The seed's model, seeded, two workers: 0.864 held-out accuracy after 5 rounds (>= 0.85 is asserted),
# the rounds test_train_advanced's resumed run and reliability/test_worker_death's runs train.
MNIST_ROUNDS = 5


@pytest.fixture(scope="session")
def mnist_trained(mnist_servers):
    """One seeded MNIST training run (the seed's model, two workers, ``MNIST_ROUNDS`` rounds) for
    every test that only needs a good trained model: the run is the suite's biggest single cost,
    so it happens once. Tests of the training mechanics use tiny models (training_helpers)."""
    from mlsql_ray import train
    from training_helpers import seeded_mnist_model

    return train.fit(seeded_mnist_model, mnist_servers, rounds=MNIST_ROUNDS, batch_size=128, scale=1 / 255, one_hot=10)


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


@pytest.fixture(scope="session")
def s3_server():
    """A real S3-compatible server (moto's server mode, tests/s3_server.py) with one bucket,
    started by the first test that asks for it and stopped at the end of the run."""
    import s3_server as s3

    server = s3.start()
    yield server
    server.stop()


@pytest.fixture
def s3_env(s3_server, monkeypatch):
    """The standard AWS variables pointing at ``s3_server``, for this test only."""
    for key, value in s3_server.env.items():
        monkeypatch.setenv(key, value)
    return s3_server


@pytest.fixture(scope="session")
def executed_notebook(tmp_path_factory, ray_address):
    """``executed_notebook(path)``: the notebook as ``jupyter nbconvert --to notebook --execute`` left
    it (the ``CompletedProcess`` and the executed copy, read back), in this checkout's kernel joined
    to the test run's Ray, its folder as the kernel's cwd, a fresh warehouse. Run once per notebook
    and shared by the tests that read it (tests/test_kernel.py, test_notebook_tools.py,
    test_sql_training_notebook.py): nbconvert executes through nbclient, so one run answers
    "it runs under nbconvert" and "it runs in its kernel" — the MNIST notebook alone costs minutes."""
    import subprocess

    import nbformat

    from kernel_helpers import checkout_kernelspec

    done: dict[Path, tuple] = {}

    def execute(path: Path):
        if path not in done:
            folder = tmp_path_factory.mktemp(path.stem)
            out = folder / path.name
            with checkout_kernelspec(folder / "jupyter"):
                ran = subprocess.run(
                    [sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
                     "--ExecutePreprocessor.timeout=900", "--ExecutePreprocessor.startup_timeout=120",
                     str(path), "--output", str(out)],
                    cwd=path.parent, capture_output=True, text=True, timeout=1200,
                    env={**os.environ, "MLSQL_WAREHOUSE": str(folder / "warehouse"), RAY_ADDRESS_ENV: ray_address})
            done[path] = (ran, nbformat.read(out, as_version=4) if out.exists() else None)
        return done[path]

    return execute


@pytest.fixture
def daft_in_process(monkeypatch):
    """Sessions whose sql_engine is daft compute in this process (Daft's ``DAFT_RUNNER=native``: the
    same plans and kernels as on Ray, without starting one), unless an earlier test of the run
    already set Daft's runner, which lasts for the process."""
    monkeypatch.setenv("DAFT_RUNNER", "native")
    monkeypatch.setenv("DAFT_PROGRESS_BAR", "0")
