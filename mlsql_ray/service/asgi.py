"""Byzer's routes as one ASGI app on uvicorn: a table of paths, each a coroutine from a request to
an answer.

Written for what Byzer's API needs, not taken from Starlette: every route is a path, GET or POST,
whose parameters come from the query string and the body, and answers a status, a text and a
header or two. Starlette's router, middleware and request and response objects cost 20 µs a
request on this machine (a route answering a fixed text under wrk: 20 500 requests/s, a bare ASGI
app 34 600), an eighth of the 150 µs a request of ``/model/predict`` may take if 32 clients are
to wait at most 5 ms (``bench/bench_service.py``). Here a request is its method, path, query
string, three headers and body; an answer is two ASGI messages.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

log = logging.getLogger("mlsql_ray.service")

METHODS = ("GET", "POST", "HEAD")  # HEAD: GET's answer, uvicorn leaves its body out
CORS = (b"access-control-allow-origin", b"*")


class Refused(Exception):
    """A request the service answers with ``status`` and ``message`` (as ``{"msg": …}``) before
    running anything."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class Request:
    method: str
    path: str
    query: bytes
    content_type: str
    authorization: str
    body: bytes


@dataclass
class Answer:
    status: int
    body: str
    media_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, value, status: int = 200, headers: dict[str, str] | None = None) -> "Answer":
        return cls(status, json.dumps(value, ensure_ascii=False, separators=(",", ":")), headers=headers or {})

    @classmethod
    def byzer(cls, status: int, body: str) -> "Answer":
        """Byzer's answers: JSON text when it worked, the error's text when not."""
        return cls(status, body, "application/json" if status == 200 else "text/plain; charset=utf-8")


Route = Callable[[Request], Awaitable[Answer]]


class App:
    """The ASGI app: ``routes`` by path. A body past ``max_body`` bytes is refused (413) before it
    is read whole; a ``Refused`` is its status and message; any other exception is our bug: logged
    with its traceback and answered 500, the server lives on. Every answer allows any origin
    (Byzer Notebook calls from a browser) and is logged by method, path and status, never the
    query (it may hold ``access_token``)."""

    def __init__(self, routes: dict[str, Route], max_body: int):
        self.routes = routes
        self.max_body = max_body

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":  # uvicorn runs it with lifespan="off": nothing starts or stops with it
            return
        method, path = scope["method"], scope["path"]
        try:
            answer = await self._answer(scope, receive, method, path)
        except Refused as refused:
            answer = Answer.json({"msg": refused.message}, refused.status)
        except Exception as exc:  # noqa: BLE001 - our bug: answered, logged, the server lives on
            log.exception("%s failed", path)
            answer = Answer.byzer(500, f"internal error in mlsql-ray serve: {type(exc).__name__}: {exc}")
        body = answer.body.encode()
        headers = [(b"content-type", answer.media_type.encode()), (b"content-length", b"%d" % len(body)), CORS]
        headers += [(name.encode("latin-1"), value.encode("latin-1")) for name, value in answer.headers.items()]
        await send({"type": "http.response.start", "status": answer.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
        log.info("%s %s %s", method, path, answer.status)

    async def _answer(self, scope, receive, method: str, path: str) -> Answer:
        route = self.routes.get(path)
        if route is None:
            return Answer.json({"msg": f"no route {path}"}, 404)
        if method not in METHODS:
            return Answer.json({"msg": f"{method} is not allowed: GET or POST"}, 405, {"allow": "GET, POST"})
        content_type = authorization = ""
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > self.max_body:
                raise Refused(413, f"the request's body is {int(value)} bytes, more than the server takes "
                                   f"({self.max_body}; --max-body-mib)")
            if name == b"content-type":
                content_type = value.decode("latin-1")
            elif name == b"authorization":
                authorization = value.decode("latin-1")
        body = await self._body(receive)
        return await route(Request(method, path, scope["query_string"], content_type, authorization, body))

    async def _body(self, receive) -> bytes:
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise Refused(400, "the client went away before its request's body arrived")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                raise Refused(413, f"the request's body is more than the server takes ({self.max_body} bytes; --max-body-mib)")
            chunks.append(chunk)
            more = message.get("more_body", False)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

