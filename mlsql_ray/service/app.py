"""The HTTP side of ``mlsql-ray serve``: Byzer's REST API, its routes on ``asgi.App``.

Every route takes its parameters as Byzer's controller does: from the query string and from a
form-encoded or JSON body, GET or POST. The order of a request's checks is the order of its
costs: the body's size (413), the token (403: before anything is parsed or run), the parameters
(400), the room for one more job (429); then the script runs on a worker thread, in the session the
owner's parameters choose (``owners``), as one job (``jobs``), through the front-end driver every
shell runs requests with, and answers Byzer's JSON (``render``) or, failing, HTTP 500 with the
error as ``FILE:LINE:COL: message`` and its caret (403 with that text when the error is one that
refuses: ``REFUSING_ERRORS``, by type).
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import anyio
import pyarrow as pa
import uvicorn

from .. import lang
from ..engine import Session
from ..errors import NotAllowed
from ..frontend import driver
from ..frontend.engine_client import SCRIPT_NAME  # the FILE of a sent script's errors, as the clients read it
from ..lang import ast
from ..ml import deployments, predict_request
from . import render
from .asgi import Answer, App, Refused, Request
from .fast_predict import FastPath
from .jobs import JobBoard, Limits, ServiceJob
from .models import RegisteredModels, statement as registered_statement
from .owners import Sessions, checked_owner

log = logging.getLogger("mlsql_ray.service")

DEFAULT_OUTPUT_SIZE = 5000
PREDICT_INPUT = "__predict_input__"
PREDICT_OUTPUT = "__predict_output__"
CALLBACK_TIMEOUT_S = 30
RESTORE_ATTEMPTS = 3  # a model registered again at start: Ray's start may time out on a loaded machine


@dataclass
class Service:
    """The warm state of one server: its sessions, jobs, registered models, token and limits."""

    open_session: Callable[[Path | None], Session]
    warehouse: Path | None = None
    home_root: Path | None = None
    token: str | None = None
    limits: Limits = field(default_factory=Limits)

    def __post_init__(self):
        self.sessions = Sessions(self.open_session, self.home_root)
        self.board = JobBoard(self.limits.max_jobs)
        self.models = RegisteredModels(self.warehouse)
        self.fast = FastPath()
        self.threads = anyio.CapacityLimiter(self.limits.max_jobs)
        self.ready = threading.Event()
        self.warm = threading.Event()  # set once the server's warm start has ended (server.warm_start)
        self.restore_errors: list[str] = []

    # -- start and stop --------------------------------------------------------------------------

    def restore(self) -> None:
        """Register again the functions the kept list names (``models``), then say ready; one that
        fails is logged and left out (its model table may have been dropped)."""
        try:
            for entry in self.models.entries():
                for attempt in range(1, RESTORE_ATTEMPTS + 1):
                    try:
                        with self.sessions.lease(entry["owner"], entry["perUser"], False) as session:
                            list(session.run([registered_statement(entry)]))
                        break
                    except Exception as exc:  # noqa: BLE001 - one lost model must not keep the others out
                        log.warning("could not register %s again (attempt %s): %s", entry["function"], attempt, exc)
                        if attempt == RESTORE_ATTEMPTS:
                            self.restore_errors.append(f"{entry['function']} ({entry['owner']}): {exc}")
        finally:
            self.ready.set()

    def stop_jobs(self) -> None:
        """Stop every running job (returns at once: each stops beside, its request answered)."""
        for job in self.board.running():
            self.board.stop(job, "stopped: the server is shutting down")

    def close(self) -> None:
        """Stop the jobs, delete the Ray Serve deployments this server made, close the sessions."""
        self.stop_jobs()
        deployments.undeploy_all()
        self.sessions.close()

    # -- /run/script -----------------------------------------------------------------------------

    def run_script(self, job: ServiceJob, params: dict[str, str]) -> tuple[int, str]:
        """Run the job's script (on a worker thread): the status and body to answer."""
        job.thread = threading.get_ident()
        try:
            return self._run(job, params)
        except BaseException as exc:  # noqa: BLE001 - a job's crash must never end the server
            log.exception("job %s failed inside the service", job.group_id)
            return 500, f"internal error in mlsql-ray serve: {type(exc).__name__}: {exc}"
        finally:
            self.board.finish(job)

    def _run(self, job: ServiceJob, params: dict[str, str]) -> tuple[int, str]:
        owner, per_user = params.get("owner", "admin"), _flag(params, "sessionPerUser")
        per_request = _flag(params, "sessionPerRequest")
        with self.sessions.lease(owner, per_user, per_request, params.get("defaultPathPrefix", "")) as session:
            with job.guard:
                job.session = session
            try:
                if job.stopped:
                    return 500, f"job {job.group_id} ({job.name}) {job.stopped} before it began"
                request = driver.Request([job.script])  # no file: relative paths start at the owner's home
                outcome = request.run(lambda: contextlib.nullcontext(session))
                if not outcome.ok:
                    return _failed_status(outcome.exception), self._failure(job, outcome)
                if not per_request:
                    self.models.note(owner, per_user, outcome.statements, session.variables)
                include_schema = _flag(params, "includeSchema")
                if _flag(params, "silence"):
                    return 200, render.result_json(None, {}, include_schema)
                size = _int(params, "outputSize", DEFAULT_OUTPUT_SIZE)
                return 200, render.result_json(*_last_rows(session, request.results, size), include_schema)
            except Exception as exc:  # noqa: BLE001 - reading the result: the select's run-time error
                return _failed_status(exc), self._failure(job, driver.failed(exc, job.script))
            finally:
                with job.guard:
                    job.session = None

    @staticmethod
    def _failure(job: ServiceJob, outcome: driver.Outcome) -> str:
        if outcome.error is None:  # an interruption outside any statement
            text = f"{SCRIPT_NAME}: {outcome.interruption.text() if outcome.interruption else 'interrupted'}"
        else:
            text = outcome.error.located(SCRIPT_NAME)
            if outcome.error.internal:
                text += "\n" + "\n".join(outcome.error.traceback)
        return f"job {job.group_id} ({job.name}) {job.stopped}:\n{text}" if job.stopped else text

    def analyze(self, sql: str) -> tuple[int, str]:
        """``executeMode=analyze``: the parsed statements, nothing run."""
        try:
            return 200, render.statements_json(lang.parse(sql))
        except Exception as exc:  # noqa: BLE001 - a syntax error, answered as a failed run is
            return 500, driver.failed(exc, sql).error.located(SCRIPT_NAME)

    def callback(self, job: ServiceJob, params: dict[str, str], status: int, body: str) -> None:
        """An async job's outcome posted to ``callback`` as Byzer posts it, retried ``maxRetries`` times."""
        import httpx  # only an async job with a callback needs the HTTP client

        fields = {"stat": "succeeded", "res": body} if status == 200 else {"stat": "failed", "msg": body}
        fields["jobInfo"] = json.dumps(job.info())
        headers = json.loads(params.get("callbackHeader") or "{}")
        for _ in range(max(0, _int(params, "maxRetries", 0)) + 1):
            try:
                if httpx.post(params["callback"], data=fields, headers=headers,
                              timeout=CALLBACK_TIMEOUT_S).status_code == 200:
                    return
            except httpx.HTTPError as exc:
                log.warning("callback of job %s failed: %s", job.group_id, exc)
        log.error("callback of job %s was not accepted after %s attempts", job.group_id, _int(params, "maxRetries", 0) + 1)

    # -- /model/predict --------------------------------------------------------------------------

    async def predict(self, params: dict[str, str]) -> tuple[int, str]:
        """Byzer's API service: ``data`` as a table (``dataType`` row: its objects; vector or
        string: a column ``feature``), through ``sql`` or ``pipeline`` over registered functions:
        by the fast path (``fast_predict``) on the event loop when it can, else as a script in the
        owner's session, in a worker thread."""
        table = _predict_input(params.get("dataType", "vector"), params.get("data", "[]"))
        select = params.get("sql") or _pipeline_select(params.get("pipeline", ""))
        owner, per_user = params.get("owner", "admin"), _flag(params, "sessionPerUser")
        warm = self.sessions.warm(owner, per_user)
        fast = await self.fast.answer(warm, select, table, f"{select} from {PREDICT_INPUT}") if warm is not None else None
        if fast is not None:
            return 200, render.rows_json(*fast)
        return await anyio.to_thread.run_sync(self._predict_by_script, table, select, owner, per_user, limiter=self.threads)

    def _predict_by_script(self, table: pa.Table, select: str, owner: str, per_user: bool) -> tuple[int, str]:
        text = f"{select} from {PREDICT_INPUT} as {PREDICT_OUTPUT};"
        with self.sessions.lease(owner, per_user, False) as session:
            session.catalog.add_arrow(PREDICT_INPUT, table, "/model/predict")
            try:
                outcome = driver.Request([text]).run(lambda: contextlib.nullcontext(session))
                if not outcome.ok:
                    return _failed_status(outcome.exception), outcome.error.located("predict")
                try:
                    rows = session.table(PREDICT_OUTPUT)
                except Exception as exc:  # noqa: BLE001 - the query's run-time error
                    return 500, driver.failed(exc, text).error.located("predict")
                return 200, render.rows_json(rows, session.catalog.vectors(PREDICT_OUTPUT))
            finally:
                for name in (PREDICT_INPUT, PREDICT_OUTPUT):
                    session.catalog.remove(name)


#: the errors that refuse a request rather than fail it, by type, and the status each answers
#: (a failed run answers 500, as in Byzer)
REFUSING_ERRORS: dict[type[BaseException], int] = {NotAllowed: 403}


def _failed_status(exc: BaseException | None) -> int:
    return next((status for kind, status in REFUSING_ERRORS.items() if isinstance(exc, kind)), 500)


def _last_rows(session: Session, results: list, size: int) -> tuple[pa.Table | None, dict[str, str]]:
    """What Byzer answers a script with: the first ``size`` rows of the last table a statement
    named (a select, a load, ``train``/``run ... as T``; not a save) or a command showed, and its
    vector columns."""
    for result in reversed(results):
        if isinstance(result.statement, ast.Save):
            continue
        if result.name and result.name in session.catalog:
            return session.table(result.name, limit=size), session.catalog.vectors(result.name)
        if isinstance(result.statement, ast.Command) and result.table is not None:
            return result.table.slice(0, size), {}
    return None, {}


def _predict_input(data_type: str, data: str) -> pa.Table:
    try:
        return predict_request.input_table(data_type, data)
    except predict_request.BadRequest as exc:
        raise Refused(400, str(exc)) from exc


def _pipeline_select(pipeline: str) -> str:
    """``pipeline=f1,f2``: ``select f2(f1(feature)) as feature``."""
    names = [n.strip() for n in pipeline.split(",") if n.strip()]
    if not names or not all(n.isidentifier() for n in names):
        raise Refused(400, "give sql (select f(feature) as p) or pipeline (function names, comma separated)")
    expression = "feature"
    for name in names:
        expression = f"{name}({expression})"
    return f"select {expression} as feature"


# -- parameters -----------------------------------------------------------------------------------

def _flag(params: dict[str, str], name: str) -> bool:
    return params.get(name, "false").strip().lower() == "true"


def _int(params: dict[str, str], name: str, default: int) -> int:
    text = params.get(name)
    if text is None or text == "":
        return default
    try:
        return int(text)
    except ValueError:
        raise Refused(400, f"{name} must be a whole number, not {text[:40]!r}") from None


def _params(request: Request) -> dict[str, str]:
    """Byzer's parameters: the query string's (ASCII: uvicorn refuses other bytes in it), then the
    body's (form-encoded, or a JSON object)."""
    try:
        query = dict(predict_request.form_fields(request.query)) if request.query else {}
        return predict_request.parameters(query, request.body, request.content_type)
    except predict_request.BadRequest as exc:
        raise Refused(400, str(exc)) from exc


def _authorized(token: str | None, request: Request, params: dict[str, str]) -> bool:
    if token is None:
        return True
    header = request.authorization
    given = header[len("bearer "):] if header.lower().startswith("bearer ") else params.get("access_token", "")
    return hmac.compare_digest(given.encode(), token.encode())


# -- the app --------------------------------------------------------------------------------------

class JobStoppingServer(uvicorn.Server):
    """Uvicorn's server, whose stop (SIGTERM, Ctrl-C) first stops the running jobs: its graceful
    shutdown waits for the requests in flight, which would otherwise wait for a long job."""

    def __init__(self, config: uvicorn.Config, service: Service):
        super().__init__(config)
        self.service = service

    def handle_exit(self, sig, frame) -> None:
        self.service.stop_jobs()
        super().handle_exit(sig, frame)


def build_app(service: Service) -> App:
    def endpoint(handler, public: bool = False):
        """A route: parameters read and the token checked first (``public``: a probe, which says
        only that the server lives)."""
        async def route(request: Request) -> Answer:
            params = _params(request)
            if not public and not _authorized(service.token, request, params):
                raise Refused(403, "access_token is not right")
            return await handler(params)
        return route

    async def run_script(params: dict[str, str]) -> Answer:
        sql = params.get("sql")
        if not sql or not sql.strip():
            raise Refused(400, "sql is required: the script to run")
        owner = checked_owner(params.get("owner", "admin"))
        if _flag(params, "async") and not params.get("callback"):
            raise Refused(400, "when async is set true, then you should set callback url")
        if params.get("callbackHeader"):
            _json_object(params["callbackHeader"], "callbackHeader")
        mode = params.get("executeMode", "query")
        if mode == "analyze":
            return Answer.byzer(*await anyio.to_thread.run_sync(service.analyze, sql, limiter=service.threads))
        if mode != "query":
            raise Refused(400, f"no executeMode named {mode!r}: query or analyze")
        if _flag(params, "skipInclude") and any(isinstance(s, ast.Include) for s in _parsed(sql)):
            raise Refused(400, "include is disabled for this request (skipInclude=true)")
        service.sessions.home(owner, params.get("defaultPathPrefix", ""))  # refused here if outside the home
        size = _int(params, "outputSize", DEFAULT_OUTPUT_SIZE)
        if not 0 <= size <= service.limits.max_output_rows:
            raise Refused(400, f"outputSize must be between 0 and {service.limits.max_output_rows}, not {size}")
        job = service.board.admit(owner, params.get("jobName"), sql, _int(params, "timeout", -1))
        if _flag(params, "async"):
            def run_and_call_back():
                service.callback(job, params, *service.run_script(job, params))
            threading.Thread(target=run_and_call_back, name=f"mlsql-job-{job.group_id}", daemon=True).start()
            answer = Answer.byzer(200, render.result_json(None, {}, _flag(params, "includeSchema")))
        else:
            answer = Answer.byzer(*await anyio.to_thread.run_sync(service.run_script, job, params, limiter=service.threads))
        answer.headers["X-MLSQL-Group-Id"] = job.group_id
        return answer

    async def running_jobs(params: dict[str, str]) -> Answer:
        return Answer.json({job.group_id: job.info() for job in service.board.running()})

    async def kill_job(params: dict[str, str]) -> Answer:
        group_id, name = params.get("groupId"), params.get("jobName")
        if not group_id and not name:
            raise Refused(400, "give groupId or jobName: the job to kill")
        job = service.board.find(group_id, name)
        if job is None:
            return Answer.json({"msg": f"no running job with {'groupId' if group_id else 'jobName'} {group_id or name}"})
        service.board.stop(job)
        await anyio.to_thread.run_sync(job.done.wait, 10)
        return Answer.json({} if job.done.is_set() else {"msg": f"job {job.group_id} is still stopping"})

    async def model_predict(params: dict[str, str]) -> Answer:
        checked_owner(params.get("owner", "admin"))
        return Answer.byzer(*await service.predict(params))

    async def check(params: dict[str, str]) -> Answer:
        return Answer.json({})

    async def liveness(params: dict[str, str]) -> Answer:
        return Answer.json({"status": "UP"})

    async def readiness(params: dict[str, str]) -> Answer:
        if not service.ready.is_set():
            return Answer.json({"status": "STARTING", "msg": "registering the kept models again"}, 503)
        return Answer.json({"status": "UP", "restoreErrors": len(service.restore_errors),  # their text is in the log
                            "warm": service.warm.is_set()})

    return App({"/run/script": endpoint(run_script),
                "/runningjobs": endpoint(running_jobs),
                "/killjob": endpoint(kill_job),
                "/model/predict": endpoint(model_predict),
                "/check": endpoint(check, public=True),
                "/health/liveness": endpoint(liveness, public=True),
                "/health/readiness": endpoint(readiness, public=True)}, service.limits.max_body_bytes)


def _json_object(text: str, name: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise Refused(400, f"{name} is not JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise Refused(400, f"{name} must be a JSON object")
    return value


def _parsed(sql: str) -> list[ast.Statement]:
    try:
        return lang.parse(sql)
    except Exception:  # noqa: BLE001 - the run reports it, at its position
        return []
