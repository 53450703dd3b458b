"""``mlsql-ray serve``: one process holding the warm engine, on uvicorn.

It listens on 127.0.0.1 unless told otherwise, and refuses to listen anywhere else without a token
(``--token-file``): a shared engine runs whatever scripts reach it. Uvicorn's access log is off
(its lines carry the query string, where Byzer's clients put ``access_token``); the service logs
each request's method, path and status instead. At start it warms itself (``warm_start``) so that
the first ``train`` of every job finds scikit-learn imported and its fit hosts up.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import ipaddress
import logging
import signal
import sys
import threading
from pathlib import Path

from .jobs import Limits

MIB = 1024 * 1024
WARM_GROUPS = 2  # Byzer's usual grid of a train: two fitParam groups
log = logging.getLogger("mlsql_ray.service")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1",
                        help="the address to listen on (default 127.0.0.1; any other needs --token-file)")
    parser.add_argument("--port", type=int, default=9003, help="the port (default 9003, Byzer's)")
    parser.add_argument("--warehouse", help="root of the Delta tables (default: $MLSQL_WAREHOUSE or ./warehouse)")
    parser.add_argument("--ray-address", help="Ray cluster (default: $MLSQL_RAY_ADDRESS, else a local Ray started on first need)")
    parser.add_argument("--token-file", type=Path, metavar="FILE",
                        help="a file holding the token requests must give (access_token=… or Authorization: Bearer …)")
    parser.add_argument("--home-root", type=Path, metavar="DIR",
                        help="owners' homes: an owner's relative paths resolve under DIR/<owner>, nothing outside it is reached")
    parser.add_argument("--allow-object-storage", action="store_true",
                        help="let owners confined by --home-root reach object store URIs (s3://…): their credentials decide")
    parser.add_argument("--allow-path", dest="allowed_paths", action="append", default=[], metavar="FOLDER",
                        help="a folder !fs and !saveFile may touch, besides the working directory and the warehouse (repeatable)")
    parser.add_argument("--max-jobs", type=int, default=Limits.max_jobs,
                        help=f"jobs running at once; more are refused with 429 (default {Limits.max_jobs})")
    parser.add_argument("--max-body-mib", type=float, default=Limits.max_body_bytes / MIB,
                        help=f"largest request body; larger is refused with 413 (default {Limits.max_body_bytes / MIB:g})")
    parser.add_argument("--warm-groups", type=int, default=WARM_GROUPS, metavar="N",
                        help=f"at start, import scikit-learn and skops, start Ray and the fit hosts a train of N parameter "
                             f"groups takes (default {WARM_GROUPS}; 0: none of it, Ray starts on first need)")
    parser.add_argument("--verbose", action="store_true", help="log each request, and Ray's and TensorFlow's log lines")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _token(path: Path | None) -> str | None:
    if path is None:
        return None
    token = path.read_text().strip()
    if len(token) < 16:
        raise SystemExit(f"{path}: the token must be at least 16 characters")
    return token


class _Terminated(Exception):
    """SIGTERM, raised once uvicorn has finished its own graceful shutdown (see ``serve``)."""


def _raise_terminated(signum, frame) -> None:
    raise _Terminated


def serve(args: argparse.Namespace) -> int:
    """Serve until stopped (SIGINT or SIGTERM: the running jobs stop, uvicorn ends its loop, the
    Ray Serve deployments are deleted and the sessions close).

    Uvicorn handles SIGTERM while it runs, then puts back the handler it found and raises the
    signal again; with Python's default one there, the process would end inside ``uvicorn.run``
    and skip everything after it. So the handler it finds is ours, which ends ``uvicorn.run`` with
    an exception instead, and a SIGTERM before uvicorn starts does the same.
    """
    # the CLI's parser imports this module for add_arguments: the server, the engine and Ray only when it serves
    import uvicorn  # (as above)

    from ..cluster import quiet  # (as above)
    from ..cluster.link import RayLink  # (as above)
    from ..cluster.warm import WarmPool  # (as above)
    from ..config import resolve as resolve_config  # (as above)
    from ..engine import Session  # (as above)
    from .app import JobStoppingServer, Service, build_app  # (as above)

    try:
        token = _token(args.token_file)
    except OSError as exc:
        print(f"{args.token_file}: cannot read: {exc.strerror or exc}", file=sys.stderr)
        return 2
    if token is None and not _loopback(args.host):
        print(f"refusing to listen on {args.host} without a token: give --token-file, or listen on 127.0.0.1",
              file=sys.stderr)
        return 2
    config = resolve_config(args.warehouse, args.ray_address)
    workers = WarmPool()  # training and prediction actors every session shares
    ray_link = RayLink(config.ray_address)  # the server's Ray, started warm (sessions connect to it, it stops it)

    def open_session(home: Path | None) -> Session:
        return Session(warehouse=config.warehouse, ray_address=config.ray_address, allowed_paths=args.allowed_paths,
                       workers=workers, home=home, home_object_storage=args.allow_object_storage)

    home_root = args.home_root
    if home_root is not None:
        home_root.mkdir(parents=True, exist_ok=True)
    service = Service(open_session, config.warehouse if isinstance(config.warehouse, Path) else None, home_root, token,
                      Limits(args.max_jobs, int(args.max_body_mib * MIB)))
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    quiet.set_verbose(args.verbose)

    def warm() -> None:
        try:
            warm_start(ray_link, workers, args.warm_groups)
        finally:
            settle_heap()
            service.warm.set()

    threading.Thread(target=warm, name="mlsql-warm", daemon=True).start()
    threading.Thread(target=service.restore, name="mlsql-restore", daemon=True).start()
    print(f"mlsql-ray serve: listening on http://{args.host}:{args.port} (warehouse {config.warehouse})",
          file=sys.stderr, flush=True)
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        with contextlib.nullcontext() if args.verbose else quiet.filtered_stderr():
            # no proxy headers: nothing reads a client's address, and their middleware is a layer per
            # request; no lifespan: the service starts and stops around uvicorn, not inside it
            server_config = uvicorn.Config(build_app(service), host=args.host, port=args.port, access_log=False,
                                           proxy_headers=False, lifespan="off",
                                           log_level="info" if args.verbose else "warning", limit_concurrency=1000)
            JobStoppingServer(server_config, service).run()
    except (_Terminated, KeyboardInterrupt):  # uvicorn raises the signal it handled again once it has stopped
        pass
    finally:
        service.close()
        workers.release()
        ray_link.shutdown()
    print("mlsql-ray serve: stopped", file=sys.stderr, flush=True)
    return 0


def settle_heap() -> None:
    """Take what the start made (Ray, scikit-learn, DuckDB, sqlglot: some 380 000 objects) out of
    the garbage collector's full passes (``gc.freeze``): each pass over them held the event loop,
    and every request with it, for 140-260 ms (``/model/predict`` at 32 clients: p99 220 ms; 15 ms
    once frozen, ``bench_service.py``). What is made later is collected as before; what the start
    made and still holds lives as long as the server."""
    gc.collect()
    gc.freeze()


def warm_start(ray_link, workers, groups: int) -> None:
    """What the first train of each job would pay otherwise (issue 42): scikit-learn and skops
    imported in this process (a single group is fitted here), Ray started, and the GroupHosts a
    train of ``groups`` groups takes started into the pool every session shares, their libraries
    imported, waited for. A failure is logged: each job then starts what it needs, as before."""
    if groups <= 0:
        return
    from ..ml import registry, runner  # heavy: scikit-learn, Ray

    try:
        algorithms = tuple(alg.name for alg in registry.ALGORITHMS.values() if alg.library == "skops")
        runner.load_algorithms(algorithms)
        ray = ray_link.ensure()
        if groups > 1:
            runner.start_hosts(ray, workers, ray_link.cpus(), groups, algorithms)
            workers.settle()
    except Exception as exc:  # noqa: BLE001 - a head start only: the jobs start what they need
        log.warning("warm start failed (jobs start Ray and their fit hosts themselves): %s", exc)
