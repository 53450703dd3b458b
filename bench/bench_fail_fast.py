"""How fast what cannot work is refused (issue 24, item 9): the tests check that these fail up front
(tests/test_jdbc.py, test_train.py, test_cluster.py); the wall-clock figures belong here, not in
asserts that a loaded machine turns red.

    .venv/bin/python bench/bench_fail_fast.py [--runs N]

Times, median and worst of N: (a) ``load jdbc`` with a wrong password, (b) with nobody listening
at the port, (c) from a missing table — against a PostgreSQL server of its own (tests/pg_server.py);
(d) ``train.fit`` asking for twice the local Ray's CPUs; (e) ``mlsql-ray run`` of a cell whose
``--ray-address`` nobody listens at (a subprocess: Python's start is in the figure).
Target: each under 10 s (30 s for (e)), the bounds the tests used to assert.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "tests")]

import pg_server  # noqa: E402
from training_helpers import tiny_model, tiny_partitions  # noqa: E402

CELL = "--%python\nfrom pyjava.api.mlsql import RayContext\nRayContext.connect(globals(), None)\n"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def timed_failure(work, runs: int) -> list[float]:
    """Seconds each of ``runs`` calls took to raise (a call that does not raise is a bench error)."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        try:
            work()
        except Exception:  # noqa: BLE001 — the failure is what is timed
            times.append(time.perf_counter() - start)
        else:
            raise SystemExit(f"{work.__name__} did not fail")
    return times


def report(name: str, times: list[float], target: float) -> None:
    worst = max(times)
    print(f"{name:<42} median {statistics.median(times):6.2f} s  worst {worst:6.2f} s  "
          f"(target < {target:g} s: {'ok' if worst < target else 'MISSED'})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    from mlsql_ray import Session, train
    from mlsql_ray.cluster.link import local_cpus, start_local_ray

    server = pg_server.start()
    try:
        with tempfile.TemporaryDirectory() as folder:
            def load(url: str, password: str, table: str):
                def attempt():
                    script = (f'connect jdbc where url="{url}" and user="{pg_server.USER}" and password="${{pw}}" as db;\n'
                              f"load jdbc.`db.{table}` as t;")
                    with Session(warehouse=Path(folder) / "wh", variables={"pw": password}) as session:
                        session.execute(script)
                return attempt

            unreachable = f"jdbc:postgresql://127.0.0.1:{free_port()}/{pg_server.DATABASE}"
            report("(a) load jdbc, wrong password", timed_failure(
                load(server.jdbc_url, "not-the-password", "numbers"), args.runs), 10)
            report("(b) load jdbc, nobody listening", timed_failure(
                load(unreachable, pg_server.PASSWORD, "numbers"), args.runs), 10)
            report("(c) load jdbc, missing table", timed_failure(
                load(server.jdbc_url, pg_server.PASSWORD, "numbers_absent"), args.runs), 10)

            import ray

            start_local_ray(num_cpus=min(2, local_cpus()))
            cpus = int(ray.cluster_resources()["CPU"])
            report("(d) train.fit, twice the cluster's CPUs", timed_failure(
                lambda: train.fit(tiny_model(0.0), tiny_partitions() * cpus, rounds=1, cpus_per_worker=1), args.runs), 10)
            ray.shutdown()

            script = Path(folder) / "cell.mlsql"
            script.write_text(CELL)

            def unreachable_ray():
                done = subprocess.run([sys.executable, "-m", "mlsql_ray", "run", str(script), "--ray-address",
                                       f"127.0.0.1:{free_port()}"], capture_output=True, text=True, timeout=300)
                if done.returncode != 0:
                    raise RuntimeError(done.stderr)

            report("(e) mlsql-ray run, Ray address unreachable", timed_failure(unreachable_ray, args.runs), 30)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
