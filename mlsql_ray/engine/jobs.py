"""The session's jobs: each statement run at the top of a script is one, for ``!show jobs`` and ``!kill``.

A Session runs its statements one at a time, in the thread that calls it; the only statements that
may run beside one are ``!show jobs`` and ``!kill``, from another thread (a kernel's or an
application's). ``!kill ID`` stops job ID as Ctrl-C would: it interrupts the job's DuckDB query and
raises ``JobKilled`` in the job's thread, where Python code (a ``--%python`` cell on the driver, the
engine between two queries) stops at once; a wait on Ray work ends when that call returns. The job
then fails with "killed" at its statement's position and, as with any failed statement, leaves the
tables as they were.

A job's text is its statement as written — variables unresolved, so their values stay out — with
``set`` values, option values whose names say secret (password, token, key, ...), code and URL
passwords shown as ``***`` (``mlsql_ray.masking``).
"""

from __future__ import annotations

import ctypes
import datetime as dt
import getpass
import itertools
import sys
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

import pyarrow as pa

from ..errors import MLSQLError
from ..lang import ast
from ..masking import is_secret_name, mask

RECENT_JOBS = 50  # finished jobs !show jobs keeps listing
_TEXT_LIMIT = 200
LOST_KILL_DELAY_S = 0.05  # see _watch_for_lost_kills
_killed: dict[int, tuple] = {}  # thread ident -> (Jobs, Job) of a killed job that has not ended yet


class JobKilled(KeyboardInterrupt):
    """Raised in a job's thread by ``!kill``: like Ctrl-C, no ``except Exception`` swallows it."""


@dataclass
class Job:
    id: str
    text: str
    thread: int  # threading.get_ident() of the thread running it
    started: dt.datetime = field(default_factory=lambda: dt.datetime.now().astimezone())
    state: str = "running"  # running, done, failed, interrupted, killed
    ended: dt.datetime | None = None
    kill_requested: bool = False


class Jobs:
    def __init__(self):
        self._lock = threading.Lock()
        self._serial = itertools.count(1)
        self._running: dict[str, Job] = {}
        self._finished: deque[Job] = deque(maxlen=RECENT_JOBS)

    def start(self, statement: ast.Statement) -> Job:
        with self._lock:
            job = Job(str(next(self._serial)), statement_text(statement), threading.get_ident())
            self._running[job.id] = job
            return job

    def finish(self, job: Job, error: BaseException | None) -> bool:
        """Record how the job ended; True when ``!kill`` ended it. A kill that has not reached the
        thread yet is withdrawn: it must not hit whatever the thread runs next."""
        with self._lock:
            if job.kill_requested:
                _raise_in_thread(job.thread, None)
                _killed.pop(job.thread, None)
                job.state = "killed"
            elif error is None or isinstance(error, GeneratorExit):
                job.state = "done"
            else:
                job.state = "interrupted" if isinstance(error, KeyboardInterrupt) else "failed"
            job.ended = dt.datetime.now().astimezone()
            self._running.pop(job.id, None)
            self._finished.append(job)
            return job.kill_requested

    def kill(self, job_id: str, interrupt_queries: Callable[[], None]) -> Job:
        """Stop a job another thread is running (see the module's doc)."""
        with self._lock:
            job = self._running.get(job_id)
            if job is None:
                done = next((j for j in self._finished if j.id == job_id), None)
                if done is not None:
                    raise MLSQLError(f"job {job_id} is not running: it ended ({done.state}) at {_time(done.ended)}")
                raise MLSQLError(f"no job {job_id} in this session (!show jobs lists them)")
            if job.thread == threading.get_ident():
                raise MLSQLError(f"job {job_id} is this script itself: !kill stops a job another thread runs "
                                 f"(stop this one with Ctrl-C or the notebook's interrupt)")
            job.kill_requested = True
            interrupt_queries()
            _killed[job.thread] = (self, job)
            _watch_for_lost_kills()
            _raise_in_thread(job.thread, JobKilled)
            return job

    def raise_again(self, job: Job) -> None:
        """``JobKilled`` once more into a killed job's thread, if the job still runs."""
        with self._lock:
            if job.id in self._running:
                _raise_in_thread(job.thread, JobKilled)

    def running(self) -> list[Job]:
        with self._lock:
            return list(self._running.values())

    def listing(self) -> pa.Table:
        """``!show jobs``: Byzer's columns (groupId and jobName: the id ``!kill`` takes), then state
        and endTime; running jobs first, then the recent ones, newest first."""
        with self._lock:
            jobs = list(self._running.values())[::-1] + list(self._finished)[::-1]
        owner = getpass.getuser()
        columns = {
            "owner": [owner] * len(jobs), "jobType": ["script"] * len(jobs), "jobName": [j.id for j in jobs],
            "jobContent": [j.text for j in jobs], "groupId": [j.id for j in jobs],
            "startTime": [_time(j.started) for j in jobs], "state": [j.state for j in jobs],
            "endTime": [_time(j.ended) for j in jobs],
        }
        return pa.table(columns, schema=pa.schema([(name, pa.string()) for name in columns]))


def _time(moment: dt.datetime | None) -> str | None:
    return moment.isoformat(timespec="seconds") if moment is not None else None


def _watch_for_lost_kills() -> None:
    """An exception raised into a thread while it runs a garbage-collector callback or a
    ``__del__`` is printed as "ignored" and lost (Python hands it to ``sys.unraisablehook``): a
    lost ``JobKilled`` is raised again shortly after, from another thread, once the killed thread
    is back in ordinary code (raised from the hook itself, it would land in the hook)."""
    previous = sys.unraisablehook
    if getattr(previous, "raises_lost_kills", False):
        return

    def hook(unraisable) -> None:
        killed = _killed.get(threading.get_ident())
        if isinstance(unraisable.exc_value, JobKilled) and killed is not None:
            threading.Timer(LOST_KILL_DELAY_S, killed[0].raise_again, killed[1:]).start()
        else:
            previous(unraisable)

    hook.raises_lost_kills = True
    sys.unraisablehook = hook


def _raise_in_thread(thread: int, exception: type[BaseException] | None) -> None:
    """Raise ``exception`` in ``thread`` at its next Python instruction (None: withdraw one not yet raised)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread), ctypes.py_object(exception) if exception else None)


# -- a statement as a job's text --------------------------------------------------------------------

def _options(options) -> str:
    shown = [f'{k}="***"' if is_secret_name(k) or k in ast.Statement.raw_options else f'{k}="{v}"'
             for k, v in options.items()]
    return f" where {' and '.join(shown)}" if shown else ""


def _argument(arg: str) -> str:
    key, sep, _ = arg.partition("=")
    return f"{key}=***" if sep and is_secret_name(key) else arg


_TEXTS: dict[type, Callable] = {
    ast.Load: lambda s: f"load {s.format}.`{s.path}`{_options(s.options)} as {s.table}",
    ast.Save: lambda s: f"save {s.mode} {s.table} as {s.format}.`{s.path}`{_options(s.options)}",
    ast.Select: lambda s: f"select {' '.join(s.sql.split()).removeprefix('select ').removeprefix('SELECT ')} as {s.table}",
    ast.Set: lambda s: f"set {s.key} = ***" + _options(s.options),  # a value may be a password: never shown
    ast.Include: lambda s: f"include {s.format}.`{s.path}`",
    ast.Register: lambda s: f"register {s.format}.`{s.path}` as {s.function}{_options(s.options)}",
    ast.Unregister: lambda s: f"unregister {s.format}.`{s.path}`",
    ast.Train: lambda s: f"{s.verb} {s.table} as {s.format}.`{s.path}`{_options(s.options)}"
                         + (f" as {s.output}" if s.output else ""),
    ast.Connect: lambda s: f"connect {s.format}{_options(s.options)}" + (f" as {s.alias}" if s.alias else ""),
    ast.RawSQL: lambda s: " ".join(s.sql.split()),
    ast.Command: lambda s: " ".join(["!" + s.name, *(_argument(a) for a in s.args)]),
    ast.PythonCell: lambda s: f"--%python cell of {len(s.code.splitlines())} lines",
    ast.If: lambda s: f"!if ... !fi ({len(s.branches)} branches)",
}


def statement_text(statement: ast.Statement) -> str:
    render = _TEXTS.get(type(statement))
    text = mask(render(statement) if render else type(statement).__name__.lower())  # before a cut could halve a secret
    return text if len(text) <= _TEXT_LIMIT else text[: _TEXT_LIMIT - 1] + "…"
