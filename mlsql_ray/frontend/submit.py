"""``mlsql-ray submit SCRIPT``: run a script on a Ray cluster as a Ray job.

The script's folder (what ``include project.`...``` and relative paths see) is uploaded as the
job's working directory, the job runs ``mlsql-ray run`` there against the cluster it is on, and
its output streams back while it runs. Ray Jobs (``ray.job_submission``) does the uploading,
scheduling and log streaming; what is ours is the size check before the upload (Ray only warns
near its 512 MiB ceiling, after zipping everything), the command line the job runs, and turning
the job's end into an exit status.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shlex
import signal
import sys
import time
from pathlib import Path

from .. import __version__
from ..cluster import ray_internals
from ..cluster.link import use_local_token
from ..errors import MLSQLError

DEFAULT_MAX_UPLOAD_MIB = 100
INTERRUPTED_EXIT = 130
NOT_SUBMITTED_EXIT = 2
STOP_WAIT_S = 30
MIB = 1024 * 1024
ADDRESS_VARIABLES = ("RAY_API_SERVER_ADDRESS", "RAY_ADDRESS")
LOCAL_DASHBOARD = "http://127.0.0.1:8265"


def upload_folder(script: Path, project_root: Path | None) -> tuple[Path, str]:
    """(folder to upload, the script's path inside it): ``project_root`` or the script's folder."""
    script = script.resolve()
    if not script.is_file():
        raise MLSQLError(f"{script}: no such script")
    folder = (project_root or script.parent).resolve()
    if not script.is_relative_to(folder):
        raise MLSQLError(f"{script} is not inside the folder to upload ({folder}): use --project-root")
    return folder, script.relative_to(folder).as_posix()


def check_upload_size(folder: Path, excludes: list[str], limit_mib: float) -> int:
    """Bytes Ray will upload from ``folder``; refuse, naming the biggest entries, past ``limit_mib``:
    a data folder beside the script would otherwise travel with every job."""
    files = ray_internals.working_dir_files(str(folder), excludes)
    total = sum(size for _, size in files)
    if total <= limit_mib * MIB:
        return total
    tops: dict[str, int] = {}
    for path, size in files:
        top = path.split("/", 1)[0] + ("/" if "/" in path else "")
        tops[top] = tops.get(top, 0) + size
    biggest = ", ".join(f"{name} ({size / MIB:.1f} MiB)" for name, size in sorted(tops.items(), key=lambda t: -t[1])[:3])
    raise MLSQLError(f"{folder} holds {total / MIB:.1f} MiB to upload as the job's working directory, over the "
                     f"{limit_mib:g} MiB limit; biggest: {biggest}. Leave data out with --exclude PATTERN (or a "
                     f".rayignore), read it from shared storage (s3://...), or raise --max-upload-mib")


def runtime_env(folder: Path, excludes: list[str], pip: list[str] | None, image: str | None, install: bool) -> dict:
    """The job's runtime environment: the folder, and how mlsql-ray gets to the cluster: this
    version from the package index (default), other pip requirements, a container image, or
    nothing (the cluster's Python has it already)."""
    env: dict = {"working_dir": str(folder)}
    if excludes:
        env["excludes"] = list(excludes)
    if image:
        env["image_uri"] = image
    elif pip:
        env["pip"] = list(pip)
    elif install:
        env["pip"] = [f"mlsql-ray=={__version__}"]
    return env


def entrypoint(script: str, warehouse: str | None, variables: list[tuple[str, str]], verbose: bool) -> str:
    """The shell command the job runs in its working directory: ``mlsql-ray run`` on the cluster
    the job is on (``--ray-address auto``: Ray Jobs sets ``RAY_ADDRESS`` for the driver)."""
    words = ["python", "-m", "mlsql_ray", "run", script, "--ray-address", "auto", "--project-root", "."]
    if warehouse:
        words += ["--warehouse", warehouse]
    for key, value in variables:
        words += ["--set", f"{key}={value}"]
    if verbose:
        words.append("--verbose")
    return shlex.join(words)


def connect(address: str | None):
    """A ``JobSubmissionClient`` for the dashboard at ``address``. A head on this machine gets this
    user's Ray token, as ``--ray-address`` does (``use_local_token``); elsewhere the token comes
    from ``RAY_AUTH_MODE=token`` with ``RAY_AUTH_TOKEN`` or ``~/.ray/auth_token``, and Ray's client
    sends it as an ``Authorization: Bearer`` header. Without ``address``, Ray's defaults: the
    variables in ``ADDRESS_VARIABLES``, else a cluster on this machine."""
    try:
        from ray.job_submission import JobSubmissionClient  # heavy: Ray
    except ImportError as exc:
        raise MLSQLError(f"mlsql-ray submit needs Ray's job client ({exc}): pip install 'mlsql-ray[cluster]'") from exc
    if address:  # Ray lets these variables win over an explicit address; on a command line, the option wins
        for variable in ADDRESS_VARIABLES:
            os.environ.pop(variable, None)
    use_local_token(address or next(filter(None, map(os.environ.get, ADDRESS_VARIABLES)), LOCAL_DASHBOARD))
    try:
        return JobSubmissionClient(address)
    except Exception as exc:  # noqa: BLE001 - Ray raises ConnectionError, RuntimeError or ValueError
        raise MLSQLError(f"cannot reach Ray Jobs at {address or 'the local cluster'}: {exc}"
                         f"{_token_hint(exc)}") from exc


def _token_hint(exc: BaseException) -> str:
    """What to try, by the error's type: Ray's job client raises ``AuthenticationError`` when the
    head answers 401 or 403, and ``ConnectionError`` when nothing answers."""
    from ray.exceptions import AuthenticationError  # Ray is imported: its client raised exc

    if isinstance(exc, AuthenticationError):
        return " (the head wants a Ray token: set RAY_AUTH_MODE=token and the cluster's token in RAY_AUTH_TOKEN)"
    if isinstance(exc, ConnectionError):
        return " (is the head's dashboard there? `ray start --head` serves it on port 8265 with mlsql-ray[cluster] installed)"
    return ""


async def _stream_logs(client, job_id: str) -> None:
    async for chunk in client.tail_job_logs(job_id):
        sys.stdout.write(chunk)
        sys.stdout.flush()


def _follow(client, job_id: str) -> bool:
    """Stream the job's logs until its stream ends: True, or False when Ctrl-C came first.

    Ctrl-C is this loop's own signal handler, not the KeyboardInterrupt ``asyncio.run`` makes of a
    SIGINT: that one is raised only if the cancelled task ends *as cancelled*, so whether Ctrl-C
    stops the job would depend on how Ray's and aiohttp's code inside the stream take a
    cancellation. A SIGINT this process was started ignoring (a background command's) stays
    ignored, as ``mlsql-ray run`` leaves it."""

    async def follow() -> bool:
        loop = asyncio.get_running_loop()
        interrupted = asyncio.Event()
        ours = signal.getsignal(signal.SIGINT) is signal.default_int_handler
        if ours:
            loop.add_signal_handler(signal.SIGINT, interrupted.set)
        try:
            stream = asyncio.ensure_future(_stream_logs(client, job_id))
            pressed = asyncio.ensure_future(interrupted.wait())
            await asyncio.wait({stream, pressed}, return_when=asyncio.FIRST_COMPLETED)
            if interrupted.is_set():
                stream.cancel()
                await asyncio.wait({stream}, timeout=STOP_WAIT_S)
                return False
            pressed.cancel()
            stream.result()  # a broken stream raises its RuntimeError here
            return True
        finally:
            if ours:
                loop.remove_signal_handler(signal.SIGINT)

    return asyncio.run(follow())


def _wait_terminal(client, job_id: str, timeout: float):
    """The job's info once Ray reports it finished (the log stream can close just before)."""
    deadline = time.monotonic() + timeout
    info = client.get_job_info(job_id)
    while not info.status.is_terminal() and time.monotonic() < deadline:
        time.sleep(0.2)
        info = client.get_job_info(job_id)
    return info


def submit(args) -> int:
    """Submit, follow, and exit as the job did: 0 when it succeeded, its driver's exit code when
    it failed (1: the script's error, 3: a bug in mlsql-ray), 130 when stopped (Ctrl-C here stops
    it), 2 when it could not be submitted."""
    if not args.verbose:  # Ray's client logs each upload and its token mode at INFO/WARNING; its errors raise
        import ray  # noqa: F401 - importing Ray sets up its loggers, which would undo the level set here

        logging.getLogger("ray").setLevel(logging.ERROR)
    try:
        folder, script = upload_folder(args.file, args.project_root)
        size = check_upload_size(folder, args.excludes, args.max_upload_mib)
        client = connect(args.address)
        job_env = runtime_env(folder, args.excludes, args.pip, args.image, not args.no_install)
        try:
            job_id = client.submit_job(entrypoint=entrypoint(script, args.warehouse, args.variables, args.verbose),
                                       runtime_env=job_env)
        except Exception as exc:  # noqa: BLE001 - Ray's client reports a refused submission this way
            raise MLSQLError(f"the cluster refused the job: {exc}{_token_hint(exc)}") from exc
    except MLSQLError as exc:
        print(f"mlsql-ray submit: {exc}", file=sys.stderr)
        return NOT_SUBMITTED_EXIT
    except KeyboardInterrupt:
        print("mlsql-ray submit: interrupted before the job was submitted", file=sys.stderr)
        return INTERRUPTED_EXIT
    print(f"mlsql-ray submit: job {job_id} ({size / MIB:.1f} MiB uploaded from {folder})", file=sys.stderr, flush=True)
    try:
        ended = _follow(client, job_id)
    except RuntimeError as exc:  # the stream broke off; the job's end still decides the exit status
        print(f"mlsql-ray submit: lost the job's log stream ({exc}); `ray job logs {job_id}` shows it", file=sys.stderr)
        ended = True
    except KeyboardInterrupt:  # before or after the loop's own handler was in place
        ended = False
    if not ended:
        client.stop_job(job_id)
        info = _wait_terminal(client, job_id, STOP_WAIT_S)
        print(f"mlsql-ray submit: interrupted; job {job_id} {info.status.value}", file=sys.stderr)
        return INTERRUPTED_EXIT
    info = _wait_terminal(client, job_id, STOP_WAIT_S)
    if info.status.value == "SUCCEEDED":
        return 0
    # Ray's message repeats the job's last logs after its first line: they were streamed already
    reason = (info.message or "").partition("\n")[0].rstrip(":")
    print(f"mlsql-ray submit: job {job_id} {info.status.value}: {reason}", file=sys.stderr)
    if info.status.value == "STOPPED":
        return INTERRUPTED_EXIT
    return info.driver_exit_code or 1
