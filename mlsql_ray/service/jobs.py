"""The service's jobs: each ``/run/script`` request is one, listed by ``/runningjobs`` and stopped by
``/killjob`` or its ``timeout``.

At most ``max_jobs`` run (or wait for their session) at once: past that a request is refused at
once (429) rather than queued without bound. A kill stops the job where it is: the statement
running in its session is killed as ``!kill`` kills it (its DuckDB query interrupted, Python code
stopped; a failed statement writes nothing), and a query reading the result is interrupted; the
kill is repeated until the job has ended, so one that lands between two statements still stops it.
"""

from __future__ import annotations

import datetime as dt
import itertools
import threading
import uuid
from dataclasses import dataclass, field

from ..masking import mask
from .asgi import Refused

KILL_REPEAT_S = 0.1
SCRIPT_SHOWN = 2000  # characters of a job's script /runningjobs shows


@dataclass
class Limits:
    max_jobs: int = 8  # jobs running or waiting for their session at once (429 past it)
    max_body_bytes: int = 10 * 1024 * 1024  # a request's body (413 past it)
    max_output_rows: int = 100_000  # what outputSize may ask


@dataclass
class ServiceJob:
    owner: str
    name: str
    script: str
    timeout_ms: int
    group_id: str
    started: dt.datetime = field(default_factory=lambda: dt.datetime.now().astimezone())
    thread: int | None = None  # the thread running it, once it runs
    session: object | None = None  # the Session it runs in, once leased
    stopped: str | None = None  # why it was stopped (killed, timed out), if it was
    done: threading.Event = field(default_factory=threading.Event)
    #: held while a stop acts on ``session`` and while the job lets it go: a stop never reaches
    #: the request that runs in the session next
    guard: threading.Lock = field(default_factory=threading.Lock)
    timer: threading.Timer | None = None  # its timeout's, cancelled when it ends

    def info(self) -> dict:
        """Byzer's ``MLSQLJobInfo``: what ``/runningjobs`` lists and a callback's ``jobInfo`` is;
        the script with its secrets masked."""
        script = mask(self.script)
        return {"owner": self.owner, "jobType": "script", "jobName": self.name,
                "jobContent": script if len(script) <= SCRIPT_SHOWN else script[:SCRIPT_SHOWN - 1] + "…",
                "groupId": self.group_id, "startTime": int(self.started.timestamp() * 1000),
                "timeout": self.timeout_ms}


class JobBoard:
    def __init__(self, max_jobs: int):
        self.max_jobs = max_jobs
        self._lock = threading.Lock()
        self._serial = itertools.count(1)
        self._jobs: dict[str, ServiceJob] = {}

    def admit(self, owner: str, name: str | None, script: str, timeout_ms: int) -> ServiceJob:
        """A new job, or a refusal: the service is full, or a running job has this name."""
        with self._lock:
            if len(self._jobs) >= self.max_jobs:
                raise Refused(429, f"the server is running {len(self._jobs)} jobs, its limit (--max-jobs "
                                   f"{self.max_jobs}): try again when one has ended")
            if name and any(j.name == name for j in self._jobs.values()):
                raise Refused(409, f"a job named {name!r} is running already")
            group_id = str(next(self._serial))
            job = ServiceJob(owner, name or str(uuid.uuid4()), script, timeout_ms, group_id)
            self._jobs[group_id] = job
        if timeout_ms > 0:
            job.timer = threading.Timer(timeout_ms / 1000, self.stop, (job, f"timed out after {timeout_ms} ms"))
            job.timer.daemon = True
            job.timer.start()
        return job

    def finish(self, job: ServiceJob) -> None:
        with self._lock:
            self._jobs.pop(job.group_id, None)
        if job.timer is not None:
            job.timer.cancel()
        job.done.set()

    def running(self) -> list[ServiceJob]:
        with self._lock:
            return list(self._jobs.values())

    def find(self, group_id: str | None, name: str | None) -> ServiceJob | None:
        with self._lock:
            if group_id:
                return self._jobs.get(group_id)
            return next((j for j in self._jobs.values() if j.name == name), None)

    def stop(self, job: ServiceJob, reason: str = "killed") -> None:
        """Stop ``job`` (see the module's doc); returns at once, the stopping goes on beside."""
        if job.done.is_set() or job.stopped:
            return
        job.stopped = reason
        threading.Thread(target=self._stop, args=(job,), name=f"mlsql-stop-{job.group_id}", daemon=True).start()

    @staticmethod
    def _stop(job: ServiceJob) -> None:
        while not job.done.is_set():
            with job.guard:
                session = job.session
                if session is not None:
                    statements = [j for j in session.jobs.running() if j.thread == job.thread]
                    for statement in statements:
                        try:
                            session.jobs.kill(statement.id, session.con.interrupt)
                        except Exception:  # noqa: BLE001 - it ended meanwhile
                            pass
                    if not statements:  # between statements, or reading the result
                        try:
                            session.con.interrupt()
                        except Exception:  # noqa: BLE001 - closed meanwhile
                            pass
            job.done.wait(KILL_REPEAT_S)
