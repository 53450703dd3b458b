"""The session's link to Ray: an embedded local instance started on first need, or an existing
cluster given by address. Ray is imported here only when a Python cell needs it.

Ray is one per process, so the link is too: a session that started Ray shuts it down when it
closes; a session that found Ray already running (a test fixture, another session, a notebook
user's own ``ray.init``) leaves it alone.
"""

from __future__ import annotations

import contextlib
import ctypes
import ipaddress
import logging
import os
import queue
import re
import signal
import socket
import sys
import threading
import time
from concurrent.futures import Future

from ..errors import MLSQLError
from . import ray_internals
from .quiet import quiet_ray

CONNECT_TIMEOUT_S = 10


def imported_ray():
    """The ``ray`` module if this process has imported it, else None, without importing it (that
    costs seconds). A module another thread is still importing (a start ahead of need) is waited
    for by the import statement, never handed out half-initialized as ``sys.modules`` would."""
    if "ray" not in sys.modules:
        return None
    import ray  # heavy: Ray

    return ray


def local_cpus() -> int:
    """CPUs this process may use (cgroup/affinity aware), never more than exist."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _host_port(address: str) -> tuple[str, int] | None:
    rest = address.split("://", 1)[-1]
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit():
        return None
    return host.strip("[]") or "127.0.0.1", int(port)


def check_reachable(address: str) -> None:
    """Fail fast, naming the address, when nothing listens there (instead of Ray's long retry loop)."""
    target = _host_port(address)
    if target is None:
        raise MLSQLError(f"bad Ray address {address!r}: use auto, host:port or ray://host:port")
    try:
        with socket.create_connection(target, timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:
        raise MLSQLError(f"cannot reach Ray at {address}: {exc.strerror or exc}; is a Ray head running there "
                         f"(ray start --head --port={target[1]})?") from exc


def _on_this_machine(host: str) -> bool:
    """Whether ``host`` is this machine (loopback, or the address its hostname resolves to)."""
    try:
        ip = socket.gethostbyname(host)
        return ip.startswith("127.") or ip == socket.gethostbyname(socket.gethostname())
    except OSError:
        return False


def use_local_token(address: str) -> None:
    """Send this user's Ray token (``~/.ray/auth_token``) to a cluster on this machine.

    Ray 2.60 does that by itself only for ``address="auto"``; given an explicit address it sends
    no token, so a ``ray start`` head of the same user (token authentication on by default)
    refuses the connection after a 30 s retry loop. A cluster elsewhere never gets the local
    token implicitly: set ``RAY_AUTH_MODE=token`` (and ``RAY_AUTH_TOKEN``) for that.
    """
    target = _host_port(address)
    if os.environ.get("RAY_AUTH_MODE") is not None or target is None or not _on_this_machine(target[0]):
        return
    ray_internals.send_local_token()


def _auth_refused(exc: BaseException) -> bool:
    """Whether ``exc`` or one of its causes is Ray refusing this process's token: Ray's Python
    side raises ``AuthenticationError``; its GCS client raises a plain error whose text names the
    gRPC status (``InvalidAuthToken``), and that text is all there is to go by."""
    from ray.exceptions import AuthenticationError  # Ray is imported: it raised exc

    while exc is not None:
        if isinstance(exc, AuthenticationError) or "InvalidAuthToken" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


class _LastingThread:
    """One daemon thread that lives as long as the process and runs what it is given, one call
    at a time.

    Ray ties the processes it starts (GCS, raylet, their agents) to the life of the *thread* that
    started them, not the process: it starts them with ``PR_SET_PDEATHSIG`` (``fate_share``), which
    Linux fires when the parent thread ends. A Ray started ahead of need from a background thread
    that then ended lost its GCS and raylet with it (the kernel's cells then waited on a dead GCS,
    the CLI's demo exited 1). Starts off the main thread therefore run here."""

    def __init__(self):
        self._calls: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def run(self, call):
        """``call()`` on the lasting thread (directly on the main thread, which lasts too)."""
        if threading.current_thread() is threading.main_thread() or threading.current_thread() is self._thread:
            return call()
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="mlsql-ray-owner", daemon=True)
                self._thread.start()
        result: Future = Future()
        self._calls.put((call, result))
        return result.result()

    def _serve(self) -> None:
        while True:
            call, result = self._calls.get()
            try:
                result.set_result(call())
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
                result.set_exception(exc)


@contextlib.contextmanager
def keeps_sigterm():
    """Run the block (a ``ray.init``) keeping the process's SIGTERM handling.

    Ray's core worker installs abseil's failure signal handler for SIGTERM in the process that
    connects, from whichever thread connects. Abseil's handler prints a stack, hands the signal on
    and arms a 3 s alarm that then ends the process, so a server whose Ray started on a thread
    had 3 s for its graceful stop (``mlsql-ray serve`` deleting its Ray Serve deployments, sessions
    closing). On the main thread Python's handler (Ray's own, if it set one) is put back with
    ``signal.signal``; other threads may not call that, so there the OS-level action is restored as
    it was (``sigaction`` through libc; on those threads Ray sets no Python handler). Abseil's
    handlers for real crashes (SIGSEGV, SIGABRT…) stay.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    saved = ctypes.create_string_buffer(256)  # larger than any libc's struct sigaction: kept opaque
    kept = libc.sigaction(signal.SIGTERM, None, saved) == 0
    try:
        yield
    finally:
        handler = signal.getsignal(signal.SIGTERM)
        if threading.current_thread() is threading.main_thread() and handler is not None:
            signal.signal(signal.SIGTERM, handler)
        elif kept:
            libc.sigaction(signal.SIGTERM, saved, None)


_RAY_OWNER = _LastingThread()
_CONNECTING = threading.RLock()  # Ray is one per process: one link connects (or disconnects) at a time
_joined: str | None = None  # the cluster address this process joined, by whichever link


class _SigtermRemark(logging.Filter):
    """Drops Ray's "SIGTERM handler is not set because current thread is not the main thread"
    warning for a start on the lasting thread: a remark about Ray's internals, nothing the user can act on."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "SIGTERM handler is not set" not in record.getMessage()


def start_local_ray(attempts: int = 3, **options):
    """Start a local Ray instance of our own (``address="local"``: never join a ``ray start``
    cluster by accident), reachable from this machine only and with token authentication on
    (see ``_loopback_only`` and ``_token_auth_on``). On a busy machine Ray's 30 s wait for its
    raylet can run out; a second try usually succeeds, so try again before giving up. A failed
    try first stops the processes it started (``ray.shutdown`` does not: see
    ``ray_internals.stop_failed_start``), or they would slow the next try down. Asked for from a
    thread other than the main one, the start runs on a thread that lasts (``_LastingThread``)."""
    return _RAY_OWNER.run(lambda: _start_local_ray(attempts, **options))


def _start_local_ray(attempts: int, **options):
    import ray  # heavy: Ray

    _token_auth_on()
    ray_log, remark = logging.getLogger("ray._private.worker"), _SigtermRemark()
    ray_log.addFilter(remark)
    try:
        for attempt in range(1, attempts + 1):
            try:
                with _loopback_only(), ray_internals.minimal_dashboard_agent(), keeps_sigterm():
                    return ray.init(address="local", include_dashboard=False, _node_ip_address=LOOPBACK, **options)
            except Exception as exc:  # noqa: BLE001 - Ray raises a bare Exception for this: only its text tells
                ray_internals.stop_failed_start(exc)
                if "timed out during startup" not in str(exc):
                    raise
                if attempt == attempts:
                    raise MLSQLError(f"cannot start a local Ray: its node timed out during startup {attempts} times "
                                     "(an overloaded machine?); try again, or join a running cluster with "
                                     "--ray-address") from exc
                ray.shutdown()
    finally:
        ray_log.removeFilter(remark)


LOOPBACK = "127.0.0.1"


def _loopback_only():
    """Make the Ray started inside bind to 127.0.0.1 only.

    Ray's processes listen on every interface unless the node's address is the loopback one
    (GCS, raylet, workers and agents all check for it), and ``ray.init(_node_ip_address=
    "127.0.0.1")`` alone does not get there in Ray 2.60: it swaps a loopback address for the
    machine's outward one, except in Ray's single-machine mode, which is therefore on while the
    instance starts (``ray_internals.single_machine_mode``); nodes of other machines could never
    join an embedded instance anyway.
    """
    return ray_internals.single_machine_mode()


def _loopback_cluster(address: str) -> bool:
    """Whether ``address`` is a Ray on this machine that listens on the loopback interface only
    (another process's embedded Ray). Ray would swap ``127.0.0.1`` in the address for the
    machine's outward address, where such a Ray does not answer, and the driver would then also
    look for its raylet under the wrong address: connecting has to happen in loopback mode too.
    A ``ray start`` head listens on every interface and is connected to the usual way."""
    if address == "auto":
        try:
            address = ray_internals.address_from_environment("auto")
        except Exception:  # noqa: BLE001 - no cluster to find: ray.init says so itself
            return False
    target = _host_port(address)
    if address.startswith("ray://") or target is None or not _is_loopback(target[0]):
        return False
    outward = ray_internals.outward_ip()
    if _is_loopback(outward):
        return False  # a machine without a network: both ways are the same
    try:
        with socket.create_connection((outward, target[1]), timeout=2):
            return False
    except OSError:
        return True


def _is_loopback(host: str) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _token_auth_on() -> None:
    """Ray 2.60 turns token authentication on for a new local instance unless ``RAY_AUTH_MODE``
    says otherwise; the embedded instance keeps it on whatever the environment says (a token is
    generated into ``~/.ray/auth_token`` if there is none). Other processes of this user on this
    machine read that token; nobody else can submit work to the instance."""
    if os.environ.get("RAY_AUTH_MODE", "").lower() == "token":
        return
    os.environ["RAY_AUTH_MODE"] = "token"
    try:
        ray_internals.reload_config()  # a cached RayConfig would still hold the old mode
    except ImportError:  # an older Ray without token authentication
        pass


def refuse_ray_client_with_token(address: str) -> None:
    """Refuse a Ray Client address (``ray://``) unless token authentication is off here
    (``RAY_AUTH_MODE=disabled``): with the token on, Ray 2.60's client never connected in our
    tests, it only retried until its timeout. Ray Jobs (``mlsql-ray submit``) or the head's GCS
    address do the same work with the token."""
    if address.startswith("ray://") and os.environ.get("RAY_AUTH_MODE", "").lower() != "disabled":
        raise MLSQLError(f"Ray Client addresses ({address}) do not work with Ray's token authentication: run the "
                         f"script on the cluster with `mlsql-ray submit SCRIPT --address http://HEAD:8265` "
                         f"(Ray Jobs), or connect to the head's GCS address HOST:PORT")


class RayLink:
    """Connects on demand and remembers whether it owns the Ray it connected to. One thread
    connects at a time: a start begun ahead of need (``ensure_ahead``, in a background thread) is
    joined, not repeated, by the ``ensure`` that needs it."""

    def __init__(self, address: str | None = None):
        self.default_address = address
        self.address: str | None = None  # what we are connected to; None for an embedded Ray
        self.owned = False
        self._lock = threading.Lock()
        self._ahead_error: BaseException | None = None  # what ensure_ahead met, for the next ensure

    def ensure(self, address: str | None = None):
        """Be connected to ``address`` (None: the session's default, else an embedded Ray). If a
        start begun ahead failed, this raises its error (once), as if this call had met it."""
        with self._lock:
            error, self._ahead_error = self._ahead_error, None
            if error is not None:
                raise error
            return self._ensure(address)

    def ensure_ahead(self) -> str | None:
        """``ensure()`` before it is needed (from a background thread): an error is kept for the
        next ``ensure``, where the statement that needs Ray meets it. "started" if this call started
        the Ray it is connected to, "connected" if Ray was up already or reached, None on error."""
        import ray  # heavy: Ray

        with self._lock:
            was_up = ray.is_initialized()
            try:
                self._ensure(None)
            except Exception as exc:  # noqa: BLE001 - raised again by the ensure that needs Ray
                self._ahead_error = exc
                return None
            return "started" if self.owned and not was_up else "connected"

    def _ensure(self, address: str | None):
        with _CONNECTING:  # two links of one process (a server's warm start and a job's) never race
            return self._connect(address)

    def _connect(self, address: str | None):
        global _joined
        import ray  # heavy: Ray

        wanted = address if address is not None else self.default_address
        if wanted is not None:
            refuse_ray_client_with_token(wanted)
        if ray.is_initialized():
            if wanted is None or wanted == self.address or (self.address is None and not self.owned and wanted == "auto"):
                quiet_ray()  # a Ray someone else started prints through the same handler
                return ray
            if wanted == _joined:  # another link of this process joined it: share it, not ours to stop
                self.address, self.owned = wanted, False
                return ray
            if wanted != "auto":
                check_reachable(wanted)  # before dropping the Ray we have, not after
            self.shutdown(force=True)  # switching clusters: the old link must go first
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # inherited by workers we start
        if wanted is None:
            started = time.monotonic()
            start_local_ray(num_cpus=local_cpus(), log_to_driver=True, logging_level="WARNING")
            self.owned = True
            self.started_in = time.monotonic() - started
        else:
            if wanted != "auto":
                check_reachable(wanted)
                use_local_token(wanted)
            try:
                with _loopback_only() if _loopback_cluster(wanted) else contextlib.nullcontext(), keeps_sigterm():
                    ray.init(address=wanted, log_to_driver=True, logging_level="WARNING")
                _joined = wanted
            except Exception as exc:
                hint = ""
                if _auth_refused(exc):
                    hint = (" (it requires a Ray token we did not send: set RAY_AUTH_MODE=token, with the cluster's "
                            "token in RAY_AUTH_TOKEN or ~/.ray/auth_token)")
                raise MLSQLError(f"cannot connect to Ray at {wanted}: {exc}{hint}") from exc
            self.owned = False
        self.address = wanted
        quiet_ray()
        return ray

    def single_machine(self) -> bool:
        """Whether the cluster is this machine alone: connected to a one-node Ray whose node is the
        driver's, or not connected yet with an embedded Ray to start. False for a cluster not yet
        reached at its address (unknown until connected)."""
        ray = imported_ray()
        connected = ray is not None and ray.is_initialized()
        if self.default_address is not None and (not connected or self.address != self.default_address):
            return False
        if not connected:
            return True
        try:
            nodes = [n for n in ray.nodes() if n.get("Alive")]
            return len(nodes) == 1 and nodes[0]["NodeID"] == ray.get_runtime_context().get_node_id()
        except Exception:  # noqa: BLE001 - a client connection (ray://) does not say: a remote cluster
            return False

    def cpus(self) -> int:
        import ray  # heavy: Ray

        return max(1, int(ray.cluster_resources().get("CPU", 1)))

    def shutdown(self, force: bool = False) -> None:
        """Stop Ray if we started it (or, with ``force``, disconnect from any cluster). A process
        that never imported Ray has nothing to stop: importing it just to ask would cost seconds
        at the end of every run."""
        global _joined
        ray = imported_ray()
        if ray is not None and ray.is_initialized() and (self.owned or force):
            with _CONNECTING:
                ray.shutdown()
                _joined = None
        self.owned = False
        self.address = None
        self._ahead_error = None


def remote_error_line(exc: BaseException) -> str:
    """The final ``SomeError: message`` line of a Ray error's remote traceback, uncoloured."""
    lines = [l for l in re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).strip().splitlines() if l.strip()]
    return lines[-1].strip() if lines else type(exc).__name__


def kill_actor(ray, actor) -> None:
    """Kill ``actor`` without waiting (it may be gone already)."""
    try:
        ray.kill(actor, no_restart=True)
    except Exception:  # noqa: BLE001 - already gone
        pass


def stop_actors(ray, actors: list) -> None:
    """Kill ``actors`` and wait until Ray reports them dead (15 s at most), so none outlives the call."""
    for actor in actors:
        kill_actor(ray, actor)
    ids = {ray_internals.actor_id(a) for a in actors}
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if all(ray_internals.actor_states(i).get("State") == "DEAD" for i in ids):
            return
        time.sleep(0.1)
