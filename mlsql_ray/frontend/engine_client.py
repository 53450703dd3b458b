"""A running ``mlsql-ray serve`` as a shell's engine: ``mlsql-ray run --engine-url`` and the kernel
(``$MLSQL_ENGINE_URL``) send their text to its ``/run/script`` instead of running it here, with
the token from ``$MLSQL_ENGINE_TOKEN``; Ctrl-C (a notebook's interrupt) kills the job there
(``/killjob``). One client, for every shell."""

from __future__ import annotations

import contextlib
import os
import uuid
from dataclasses import dataclass, field

ENGINE_URL_ENV, ENGINE_TOKEN_ENV = "MLSQL_ENGINE_URL", "MLSQL_ENGINE_TOKEN"
KILL_TIMEOUT_S = 10
#: what the server calls a script sent to it, as the FILE of its errors (``script:LINE:COL: …``)
SCRIPT_NAME = "script"


class EngineRefused(Exception):
    """The engine answered with an error: ``status`` and its ``text``."""

    def __init__(self, status: int, text: str):
        super().__init__(text)
        self.status = status
        self.text = text

    @property
    def in_script(self) -> str | None:
        """The script's own error as ``LINE:COL: message`` (then its source line and caret), for a
        shell to put its own FILE before; None when the engine refused for another reason."""
        where = self.text.removeprefix(f"{SCRIPT_NAME}:")
        return where if where != self.text and where[:1].isdigit() else None


class EngineUnreachable(Exception):
    """No answer from the engine at all."""


@dataclass
class Engine:
    url: str
    token: str | None = field(default_factory=lambda: os.environ.get(ENGINE_TOKEN_ENV))

    def __post_init__(self):
        self.url = self.url.rstrip("/")

    @property
    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def run(self, script: str, job_prefix: str = "mlsql-ray"):
        """Run ``script`` there: its last table (a ``pyarrow.Table``), or None when it names none.
        Ctrl-C kills the job on the engine, then goes on as ``KeyboardInterrupt``."""
        import httpx  # a shell on an engine only: a local one goes without it
        import pyarrow as pa  # (as above)

        job = f"{job_prefix}-{uuid.uuid4()}"
        try:
            answer = httpx.post(f"{self.url}/run/script", headers=self._headers, timeout=None,
                                data={"sql": script, "jobName": job, "includeSchema": "true"})
        except KeyboardInterrupt:
            with contextlib.suppress(httpx.HTTPError):
                httpx.post(f"{self.url}/killjob", headers=self._headers, data={"jobName": job}, timeout=KILL_TIMEOUT_S)
            raise
        except httpx.HTTPError as exc:
            raise EngineUnreachable(f"{self.url}: cannot reach the engine: {exc}") from exc
        if answer.status_code != 200:
            raise EngineRefused(answer.status_code, answer.text)
        body = answer.json()
        if not body:
            return None
        names = [f["name"] for f in body["schema"]["fields"]]
        return pa.table({name: [row.get(name) for row in body["data"]] for name in names})
