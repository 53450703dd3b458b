"""The Ray internals ``mlsql_ray.cluster.ray_internals`` relies on still exist and still behave as we use
them. Run this (and ``tests/reliability/test_containment.py``, which checks that the embedded Ray
listens on 127.0.0.1 only and refuses clients without the user's token) before widening the Ray
pin in pyproject.toml: a failure here names the internal that moved."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import pytest

from mlsql_ray.cluster import ray_internals

from training_helpers import eventually

SINGLE_MACHINE = r"""
import json
from ray._private import ray_constants, services
from mlsql_ray.cluster import ray_internals

before = ray_constants.ENABLE_RAY_CLUSTER
with ray_internals.single_machine_mode():
    inside = services.resolve_ip_for_localhost("127.0.0.1")
print(json.dumps({"inside": inside, "outside": services.resolve_ip_for_localhost("127.0.0.1"),
                  "restored": ray_constants.ENABLE_RAY_CLUSTER == before, "outward": ray_internals.outward_ip()}))
"""


def parameters(function) -> list[str]:
    return list(inspect.signature(function).parameters)


def test_the_private_functions_we_call_have_the_signatures_we_call_them_with():
    import ray
    from ray._common.network_utils import node_ip_address_from_perspective
    from ray._private import ray_constants, services, state
    from ray._private.authentication.authentication_token_setup import maybe_enable_token_auth_if_token_available
    from ray._private.internal_api import get_memory_info_reply, get_state_from_address, memory_summary
    from ray._private.ray_logging import global_worker_stdstream_dispatcher
    from ray._raylet import Config, CoreWorker

    assert isinstance(ray_constants.ENABLE_RAY_CLUSTER, bool)
    init = inspect.getsource(ray.init)  # _node_ip_address is a private keyword, taken from **kwargs
    assert 'kwargs.pop("_node_ip_address"' in init and "resolve_ip_for_localhost(_node_ip_address)" in init
    assert "warn_if_disabled" in parameters(maybe_enable_token_auth_if_token_available)
    assert parameters(services.get_ray_address_from_environment)[:2] == ["addr", "temp_dir"]
    assert parameters(node_ip_address_from_perspective)[:1] == ["address"]
    assert "actor_id" in parameters(state.actors)
    assert parameters(get_state_from_address)[:1] == ["address"]
    assert parameters(get_memory_info_reply)[:1] == ["state"]
    assert parameters(memory_summary)[:1] == ["address"] and "stats_only" in parameters(memory_summary)
    assert callable(Config.initialize) and callable(CoreWorker.get_all_reference_counts)
    with global_worker_stdstream_dispatcher._lock:  # wrap_print_logs: a lock and (name, handler) pairs
        assert isinstance(global_worker_stdstream_dispatcher.handlers, list)
    # wrap_error_printer: the error listener calls the module's printer by name, with a record and a flag
    from ray._private import worker

    assert parameters(worker.print_to_stdstream)[:2] == ["data", "ignore_prefix"]
    assert "print_to_stdstream(" in inspect.getsource(worker.listen_error_messages)
    # resolve_ip_for_localhost must still ask get_node_ip_address, which must still read the
    # constant at call time: that is how single_machine_mode keeps the node on loopback
    assert "get_node_ip_address()" in inspect.getsource(services.resolve_ip_for_localhost)
    assert "ray_constants.ENABLE_RAY_CLUSTER" in inspect.getsource(services.get_node_ip_address)
    # minimal_dashboard_agent: the raylet's agent command asks the module's function at call time
    assert "ray._private.utils.get_dashboard_dependency_error() is not None" in inspect.getsource(services.start_raylet)
    # working_dir_files: Ray's own walk and exclude matcher for the working_dir upload
    from ray._private.runtime_env import packaging

    assert parameters(packaging._dir_travel)[:4] == ["path", "excludes", "handler", "include_gitignore"]
    assert parameters(packaging._get_excludes) == ["path", "excludes"]
    assert isinstance(ray_constants.get_runtime_env_default_excludes(), list)
    # serve_http_address: the Serve controller's client keeps the proxies' HTTP options
    from ray.serve._private.client import ServeControllerClient
    from ray.serve.context import _get_global_client

    assert "raise_if_no_controller_running" in parameters(_get_global_client)
    assert isinstance(ServeControllerClient.http_config, property)


@pytest.mark.slow
def test_single_machine_mode_keeps_a_loopback_node_address_and_restores_the_constant():
    # a fresh process: once this one is connected to Ray, Ray answers with that node's address
    done = subprocess.run([sys.executable, "-c", SINGLE_MACHINE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    facts = json.loads(done.stdout.strip().splitlines()[-1])
    assert facts["inside"] == "127.0.0.1"
    assert facts["restored"]
    assert facts["outside"] == facts["outward"]  # without the mode Ray swaps loopback for the outward address


FAILED_START = r"""
import json
import traceback
import psutil
from mlsql_ray.cluster.link import start_local_ray

# Ray checks the object store size in the node's start_ray_processes, after start_head_processes
# has started the GCS, the monitors and the reaper: a start that fails there, cheaply and every
# time, where a raylet that never registers would fail only after 30 s
try:
    start_local_ray(num_cpus=1, object_store_memory=10 * 1024 * 1024)
except ValueError as exc:
    error, frames = str(exc), [frame.name for frame in traceback.extract_tb(exc.__traceback__)]
left = [p.name() for p in psutil.Process().children(recursive=True) if p.status() != psutil.STATUS_ZOMBIE]
print(json.dumps({"error": error, "frames": frames, "left": left}))
"""


@pytest.mark.slow
def test_a_failed_local_start_stops_the_processes_it_started():
    """``ray.shutdown`` after a failed ``ray.init`` leaves the half-started node's GCS, monitors and
    reaper running; ``start_local_ray`` stops them (``ray_internals.stop_failed_start``). A fresh
    process: this one is connected to the test run's Ray, whose processes are not its children."""
    done = subprocess.run([sys.executable, "-c", FAILED_START], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    facts = json.loads(done.stdout.strip().splitlines()[-1])
    assert "object store memory" in facts["error"]
    assert facts["frames"][-3:-1] == ["__init__", "start_ray_processes"]  # the node had started its head processes
    assert facts["left"] == []


def test_address_from_environment_reads_ray_address(monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:6390")
    assert ray_internals.address_from_environment("auto") == "127.0.0.1:6390"


def test_reload_config_and_send_local_token_run(monkeypatch):
    monkeypatch.setenv("RAY_AUTH_MODE", "token")  # set: send_local_token must leave it alone
    ray_internals.send_local_token()
    ray_internals.reload_config()


@pytest.mark.slow
def test_actor_states_follow_an_actor_from_alive_to_dead(ray_runtime):
    ray = ray_runtime

    @ray.remote(num_cpus=0)
    class Probe:
        def pid(self) -> int:
            import os

            return os.getpid()

    probe = Probe.remote()
    pid = ray.get(probe.pid.remote())
    ident = ray_internals.actor_id(probe)
    record = ray_internals.actor_states(ident)
    assert record["State"] == "ALIVE" and "Probe" in record["ActorClassName"] and record["Pid"] == pid
    assert ident in ray_internals.actor_states()
    ray.kill(probe, no_restart=True)
    assert eventually(lambda: ray_internals.actor_states(ident).get("State") == "DEAD")
    assert ray_internals.actor_states("ff" * 16) == {}


def test_node_reference_and_store_figures_of_the_running_ray(ray_runtime):
    ray = ray_runtime
    gcs, node_ip = ray_internals.node_addresses()
    assert gcs == ray.get_runtime_context().gcs_address and node_ip == "127.0.0.1"
    before = ray_internals.reference_count()
    ref = ray.put(b"x" * 200_000)  # large enough for the shared object store
    assert ray_internals.reference_count() == before + 1
    used, objects = ray_internals.object_store_usage(gcs)
    assert used >= 200_000 and objects >= 1
    stats = ray_internals.store_stats(gcs)
    assert stats["spilled_bytes_total"] >= 0 and stats["restored_bytes_total"] >= 0
    assert "Aggregate object store stats across all nodes" in ray_internals.memory_summary(gcs)
    del ref
    ray_internals.gcs_answers(gcs)  # this process holds the user's token (refusals: test_containment.py)


def test_pending_resource_demand_sees_a_task_waiting_for_cpus(ray_runtime):
    ray = ray_runtime
    gcs = ray.get_runtime_context().gcs_address
    assert ray_internals.pending_resource_demand(gcs) in (True, False)

    @ray.remote(num_cpus=1, resources={"no_node_has_this": 1})
    def never():
        return None

    waiting = never.remote()
    try:
        assert eventually(lambda: ray_internals.pending_resource_demand(gcs), seconds=30)
    finally:
        ray.cancel(waiting, force=True)
