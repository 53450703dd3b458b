"""Every use of Ray's private API, in one place.

Ray's public API does not cover a few things we need (loopback-only binding, token
authentication towards a local ``ray start`` head, actor states without the dashboard), so we
reach into ``ray._private`` and ``ray._raylet`` here and nowhere else. Each function says what it
relies on and why no public API does it. ``tests/test_ray_internals.py`` checks that all of it
still exists in the installed Ray with the shape we use, and ``tests/reliability/
test_containment.py`` that the embedded Ray still listens on 127.0.0.1 only; run both before
widening the Ray pin in ``pyproject.toml`` (see README, "Ray version").

Ray is imported inside each function: importing this module must stay cheap.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


@contextlib.contextmanager
def single_machine_mode():
    """Run the block with Ray's single-machine mode on (``ray._private.ray_constants.
    ENABLE_RAY_CLUSTER = False``, Ray's default on macOS and Windows).

    In that mode ``ray._private.services.get_node_ip_address`` answers 127.0.0.1, so
    ``resolve_ip_for_localhost`` keeps a loopback node address instead of swapping it for the
    machine's outward one, and every Ray process binds to loopback only. Ray reads the constant
    at call time, so patching it around ``ray.init`` is enough. There is no public switch:
    ``ray.init(_node_ip_address="127.0.0.1")`` alone is swapped for the outward address, and the
    environment variable behind the constant is read once at import.
    """
    from ray._private import ray_constants  # heavy: Ray

    saved = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = saved


@contextlib.contextmanager
def minimal_dashboard_agent():
    """Start Ray's processes in the block with the node's dashboard agent in its minimal mode
    (``ray._private.utils.get_dashboard_dependency_error`` answering as on a Ray without
    ``ray[default]``; ``services.start_raylet`` asks it at call time and adds ``--minimal``).

    With ``ray[default]`` installed (``mlsql-ray[cluster]``, for Ray Jobs) every node starts the
    full agent, HTTP server and metrics included, even with ``include_dashboard=False``; it
    triples the embedded instance's start-up, and on a busy machine misses the raylet's fixed
    15 s wait for the agent's port. The embedded instance serves no dashboard, so it keeps the
    agent it has without the extra. There is no public switch.
    """
    from ray._private import utils  # heavy: Ray

    saved = utils.get_dashboard_dependency_error
    utils.get_dashboard_dependency_error = lambda: ImportError("the embedded Ray serves no dashboard")
    try:
        yield
    finally:
        utils.get_dashboard_dependency_error = saved


def send_local_token() -> None:
    """Turn token authentication on for this process when this user has a Ray token
    (``~/.ray/auth_token``) and ``RAY_AUTH_MODE`` is unset
    (``ray._private.authentication.authentication_token_setup.
    maybe_enable_token_auth_if_token_available``).

    ``ray.init`` does that itself only for ``address="auto"``; there is no public way to ask
    for it with an explicit address.
    """
    # heavy: Ray
    from ray._private.authentication.authentication_token_setup import maybe_enable_token_auth_if_token_available

    maybe_enable_token_auth_if_token_available(warn_if_disabled=False)


def reload_config() -> None:
    """Make Ray re-read its configuration from the environment (``ray._raylet.Config.
    initialize("")``), e.g. after setting ``RAY_AUTH_MODE``: Ray caches it per process on first
    use, and no public API resets the cache. Raises ImportError on a Ray without it."""
    from ray._raylet import Config  # heavy: Ray

    Config.initialize("")


def address_from_environment(address: str) -> str:
    """The cluster address ``ray.init(address=address)`` would use (``RAY_ADDRESS``, then the
    address file of a running ``ray start``), via ``ray._private.services.
    get_ray_address_from_environment``; ``ray.init`` resolves it internally and exposes nothing.
    Raises when there is none to find."""
    from ray._private.services import get_ray_address_from_environment  # heavy: Ray

    return get_ray_address_from_environment(address, None) or ""


def outward_ip() -> str:
    """This machine's address as other machines see it (``ray._common.network_utils.
    node_ip_address_from_perspective``): the address Ray would swap a loopback node address
    for. Ray has no public accessor for it before ``ray.init``."""
    from ray._common.network_utils import node_ip_address_from_perspective  # heavy: Ray

    return node_ip_address_from_perspective()


def stop_failed_start(exc: BaseException) -> int:
    """Stop the processes a local ``ray.init`` started before it raised ``exc``; returns how many.

    ``ray.init`` builds the head node (``ray._private.node.Node``), whose constructor starts the
    reaper, GCS, raylet, monitors and log monitor and then waits 30 s for the raylet to register.
    When that wait runs out ("timed out during startup") the constructor raises, ``ray.init``
    never stores the node in ``ray._private.worker._global_node``, and ``ray.shutdown()`` leaves
    its processes running, eating the CPU the next try needs. The half-built node is still the
    ``self`` of the constructor's frame in the exception's traceback: its ``kill_all_processes``
    stops exactly what it started (``all_processes``), the reaper last. No public API exposes it.
    """
    from ray._private.node import Node  # heavy: Ray

    tb = exc.__traceback__
    while tb is not None:
        node = tb.tb_frame.f_locals.get("self")
        if tb.tb_frame.f_code is Node.__init__.__code__ and isinstance(node, Node):
            started = sum(len(infos) for infos in node.all_processes.values())
            node.kill_all_processes(check_alive=False, allow_graceful=True, wait=True)
            return started
        tb = tb.tb_next
    return 0


def actor_id(actor) -> str:
    """The hex id of an actor handle (``ActorHandle._actor_id``; the public
    ``ray.get_runtime_context().get_actor_id()`` works only inside the actor itself)."""
    return actor._actor_id.hex()


def actor_states(actor_id: str | None = None) -> dict:
    """{actor id: Ray's record of it (``State``, ``ActorClassName``, ``Pid``, ...)} from the GCS
    (``ray._private.state.actors``). The public ``ray.util.state.list_actors`` goes through the
    dashboard, which we do not start (``ray[default]`` triples start-up time). With ``actor_id``:
    that one actor's record (empty when unknown)."""
    from ray._private import state  # heavy: Ray

    if actor_id is not None:
        return state.actors(actor_id=actor_id) or {}
    return state.actors()


def actor_node(actor) -> str | None:
    """The hex id of the node an actor runs on, from its GCS record (None while it has none).
    Inside the actor ``ray.get_runtime_context().get_node_id()`` says it, but asking costs a
    task behind whatever the actor is doing."""
    return actor_states(actor_id(actor)).get("Address", {}).get("NodeID") or None


def task_placements() -> list[dict]:
    """Every task attempt the GCS knows of, as {"name", "actor", "node"} (hex ids; "" when
    unknown), from ``ray._private.state.state._get_all_task_events``: for the two-node test, which
    checks where a model function's batches ran. The public ``ray.util.state.list_tasks`` goes
    through the dashboard, which we do not start. Ray reports task events about once a second."""
    from ray._private import state  # heavy: Ray

    return [{"name": e.task_info.name, "actor": e.task_info.actor_id.hex(), "node": e.state_updates.node_id.hex()}
            for e in state.state._get_all_task_events()]


def node_addresses() -> tuple[str, str]:
    """(GCS address, node IP) of the Ray this process is connected to
    (``ray._private.worker.global_worker.node``); for the containment tests, which check what
    the embedded Ray binds to. ``ray.get_runtime_context().gcs_address`` gives only the first."""
    import ray  # heavy: Ray

    node = ray._private.worker.global_worker.node
    return node.gcs_address, node.node_ip_address


def serve_http_address() -> tuple[str, int]:
    """(host, port) Ray Serve's HTTP proxies listen on (``ray.serve.context._get_global_client().
    http_config``): ``serve.start`` keeps the options of a Serve already running in the cluster
    and ignores ours, and no public API says which port that is."""
    from ray.serve.context import _get_global_client  # heavy: Ray Serve

    config = _get_global_client().http_config
    return config.host, config.port


def reference_count() -> int:
    """How many object references this process holds
    (``ray._private.worker.global_worker.core_worker.get_all_reference_counts``); for the
    kernel stress test, which checks that no Ray object outlives its cell. No public API counts
    them."""
    import ray  # heavy: Ray

    return len(ray._private.worker.global_worker.core_worker.get_all_reference_counts())


def object_store_usage(gcs_address: str) -> tuple[int, int]:
    """(bytes used, objects) in the object store of the Ray at ``gcs_address``
    (``ray._private.internal_api.get_memory_info_reply``, what ``ray memory`` prints); for the
    kernel stress test. ``ray.available_resources`` reports capacity, not use."""
    stats = store_stats(gcs_address)
    return stats["object_store_bytes_used"], stats["num_local_objects"]


def store_stats(gcs_address: str) -> dict:
    """The object store's figures of the Ray at ``gcs_address``, summed over its nodes: bytes used,
    objects, and what was spilled to disk and restored (``spilled_bytes_total`` ...), from
    ``ray._private.internal_api.get_memory_info_reply`` (what ``ray memory --stats-only`` prints);
    for the per-node memory benchmark, which shows a join spilling."""
    from ray._private.internal_api import get_memory_info_reply, get_state_from_address  # heavy: Ray

    stats = get_memory_info_reply(get_state_from_address(gcs_address)).store_stats
    return {field.name: getattr(stats, field.name) for field in stats.DESCRIPTOR.fields}


def memory_summary(gcs_address: str) -> str:
    """What ``ray memory --stats-only`` prints for the Ray at ``gcs_address``
    (``ray._private.internal_api.memory_summary``); for the per-node memory benchmark."""
    from ray._private.internal_api import memory_summary  # heavy: Ray

    return memory_summary(gcs_address, stats_only=True)


def gcs_answers(gcs_address: str, timeout: float = 5) -> None:
    """Ask the GCS at ``gcs_address`` a trivial question with a raw client
    (``ray._raylet.GcsClient.internal_kv_keys``); raises if it refuses. For the containment
    tests, which check that a client without the user's token is turned away: ``ray.init``
    would start a driver and retry for 30 s instead of failing at once."""
    from ray._raylet import GcsClient  # heavy: Ray

    GcsClient(address=gcs_address).internal_kv_keys(b"", None, timeout=timeout)


def pending_resource_demand(gcs_address: str) -> bool:
    """Whether any task, actor or placement group in the cluster waits for CPUs or GPUs
    (``ray.autoscaler.v2.sdk.get_cluster_status``: the autoscaler's view of pending demand, a
    GCS call of a few milliseconds). The warm pool lets its idle actors go when it sees any; no
    public API reports work waiting for resources."""
    from ray.autoscaler.v2.sdk import get_cluster_status  # heavy: Ray

    demands = get_cluster_status(gcs_address).resource_demands
    requests = [r for d in demands.ray_task_actor_demand for r in d.bundles_by_count]
    requests += [r for d in demands.placement_group_demand for r in d.bundles_by_count]
    return any(r.bundle.get("CPU", 0) > 0 or r.bundle.get("GPU", 0) > 0 for r in requests)


def wrap_print_logs(wrap) -> None:
    """Replace the handler through which Ray prints its workers' output on this driver (the one
    registered as ``ray_print_logs`` with ``ray._private.ray_logging.
    global_worker_stdstream_dispatcher``) by ``wrap(handler)``; for ``quiet``'s line filter,
    since Ray has no public filter, only all or nothing (``log_to_driver``)."""
    from ray._private.ray_logging import global_worker_stdstream_dispatcher as dispatcher  # heavy: Ray

    with dispatcher._lock:
        dispatcher.handlers = [(name, wrap(handler) if name == "ray_print_logs" else handler)
                               for name, handler in dispatcher.handlers]


def wrap_error_printer(wrap) -> None:
    """Replace the function through which Ray prints, on this driver, the error messages the GCS
    publishes (such as the raylet's paragraph on a worker that died under a task) by
    ``wrap(function)``: ``ray._private.worker.listen_error_messages`` calls the module's
    ``print_to_stdstream`` itself, not through the handlers ``wrap_print_logs`` reaches."""
    from ray._private import worker  # heavy: Ray

    worker.print_to_stdstream = wrap(worker.print_to_stdstream)


def working_dir_files(directory: str, excludes: list[str]) -> list[tuple[str, int]]:
    """(path relative to ``directory``, bytes) of every file Ray Jobs would upload as the job's
    ``working_dir``: the same walk (``ray._private.runtime_env.packaging._dir_travel``) with the
    same exclusions (Ray's default excludes, ``excludes`` as gitignore patterns, ``.rayignore``
    and, unless ``RAY_RUNTIME_ENV_IGNORE_GITIGNORE=1``, ``.gitignore``). ``mlsql-ray submit``
    measures a folder before uploading it; Ray only warns near its 512 MiB ceiling, after
    zipping everything."""
    from ray._private import ray_constants  # heavy: Ray
    from ray._private.runtime_env.packaging import _dir_travel, _get_excludes

    root = Path(directory).absolute()
    include_gitignore = os.environ.get(ray_constants.RAY_RUNTIME_ENV_IGNORE_GITIGNORE, "0") != "1"
    files = []

    def add(path: Path) -> None:
        if path.is_file():
            files.append((str(path.relative_to(root)), path.stat().st_size))

    patterns = ray_constants.get_runtime_env_default_excludes() + list(excludes)
    _dir_travel(root, [_get_excludes(root, patterns)], add, include_gitignore=include_gitignore)
    return files
