"""The HTTP API of API.md §9 on Starlette: routes, auth, limits on bodies, JSON errors, SSE."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ..otel.state import active
from .engine import Engine
from .live import Emit, HTTPProblem, Live
from .store import StoreError

PAGE = Path(__file__).with_name("page.html")
Turn = Callable[[Live, Emit | None], Awaitable[tuple[int, dict[str, Any]]]]


def _json(body: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(body, status_code=status)


async def _read_object(request: Request, limit: int) -> dict[str, Any]:
    """The JSON object in the body; 413 past ``limit`` bytes (before parsing), 400 if not an
    object."""
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > limit:
        raise HTTPProblem(413, f"the request body is over {limit} bytes")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise HTTPProblem(413, f"the request body is over {limit} bytes")
    if not body.strip():
        return {}
    try:
        value = json.loads(body)
    except ValueError as exc:
        raise HTTPProblem(400, f"the body must be a JSON object: {exc}") from exc
    if not isinstance(value, dict):
        raise HTTPProblem(400, f"the body must be a JSON object, got {type(value).__name__}")
    return value


class API:
    """The routes, bound to one engine."""

    def __init__(self, engine: Engine, *, token: str | None, max_message_bytes: int) -> None:
        self.engine = engine
        self.token = token
        self.max_message_bytes = max_message_bytes
        self.body_limit = 4 * max_message_bytes + 65536
        self.tasks: set[asyncio.Task[Any]] = set()
        self._opened = False
        self._opening: asyncio.Lock | None = None

    async def ready(self) -> None:
        """Open the store once: at startup, or on the first request when the app is mounted
        in another app (whose lifespan does not run this one's)."""
        if self._opened:
            return
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if not self._opened:
                await self.engine.store.open()
                self._opened = True

    def check_token(self, request: Request) -> None:
        if self.token is None:
            return
        given = request.headers.get("authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {self.token}".encode()):
            raise HTTPProblem(401, "this server needs a token: send the header "
                                   "Authorization: Bearer <token>")

    async def health(self, request: Request) -> Response:
        ok = await self.engine.store.ping()
        return _json({"status": "ok" if ok else "the store does not answer"}, 200 if ok else 503)

    async def create(self, request: Request) -> Response:
        self.check_token(request)
        body = await _read_object(request, self.body_limit)
        state = body.get("state", {})
        if not isinstance(state, dict):
            raise HTTPProblem(400, f'"state" must be a JSON object, got {type(state).__name__}')
        code, result = await _traced(request, None, None,
                                     lambda: self.engine.create(state, None))
        return _json(result, code)

    async def show(self, request: Request) -> Response:
        self.check_token(request)
        return _json(await self.engine.get(request.path_params["id"]))

    async def delete(self, request: Request) -> Response:
        self.check_token(request)
        await self.engine.delete(request.path_params["id"])
        return Response(status_code=204)

    async def message(self, request: Request) -> Response:
        self.check_token(request)
        body = await _read_object(request, self.body_limit)
        content = body.get("content")
        if not isinstance(content, str):
            raise HTTPProblem(400, '"content" must be a string: send {"content": "your message"}')
        if len(content.encode("utf-8")) > self.max_message_bytes:
            raise HTTPProblem(413, f'"content" is over {self.max_message_bytes} bytes')
        digest = hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()
        return await self._idempotent(request, digest, lambda live, emit: self.engine.message(
            live, content, emit))

    async def approvals(self, request: Request) -> Response:
        self.check_token(request)
        body = await _read_object(request, self.body_limit)
        decisions = body.get("decisions")
        if not isinstance(decisions, list) or not all(
                isinstance(d, dict) and isinstance(d.get("call_id"), str)
                and isinstance(d.get("approve"), bool)
                and isinstance(d.get("reason", ""), str | None) for d in decisions):
            raise HTTPProblem(400, '"decisions" must be a list of {"call_id": "...", '
                                   '"approve": true|false, "reason"?: "..."}')
        return await self._turn(request, lambda live, emit: self.engine.approve(
            live, decisions, emit))

    async def retry(self, request: Request) -> Response:
        self.check_token(request)
        await _read_object(request, self.body_limit)
        return await self._turn(request, lambda live, emit: self.engine.retry(live, emit))

    async def _idempotent(self, request: Request, digest: str, turn: Turn) -> Response:
        key = request.headers.get("idempotency-key")
        conversation_id = request.path_params["id"]
        if key is None:
            return await self._turn(request, turn)
        store = self.engine.store
        known = await store.idempotent(conversation_id, key)
        if known is None and not await store.remember(conversation_id, key, digest, None):
            known = await store.idempotent(conversation_id, key)
        if known is not None:
            if known[0] != digest:
                raise HTTPProblem(409, "this Idempotency-Key was used with other content")
            if known[1] is None:
                raise HTTPProblem(409, "a request with this Idempotency-Key is still running "
                                       "(or was cut off): wait, or use a new key")
            return _json(known[1]["body"], known[1]["status"])

        async def remembered(live: Live, emit: Emit | None) -> tuple[int, dict[str, Any]]:
            code, result = await turn(live, emit)
            await store.remember(conversation_id, key, digest, {"status": code, "body": result})
            return code, result

        return await self._turn(request, remembered)

    async def _turn(self, request: Request, turn: Turn) -> Response:
        """Take the conversation's turn lock and run ``turn``: as JSON, or as an SSE stream.
        Problems known before the turn starts are plain JSON either way."""
        stack = contextlib.AsyncExitStack()
        live = await stack.enter_async_context(self.engine.turn(request.path_params["id"]))
        if active() is not None:
            turn = _traced_turn(request, live, turn)
        if "text/event-stream" not in request.headers.get("accept", ""):
            async with stack:
                code, result = await turn(live, None)
            return _json(result, code)
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

        async def run() -> None:
            async with stack:
                try:
                    code, result = await turn(live, lambda e, d: queue.put_nowait((e, d)))
                except Exception as exc:
                    queue.put_nowait(("error", {"error": str(exc)}))
                    raise
                if code >= 400:
                    queue.put_nowait(("error", result))
                else:
                    queue.put_nowait(("done", result))

        task = asyncio.create_task(run())  # a client that leaves does not cut the turn short
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return StreamingResponse(_events(queue), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store"})

    async def page(self, request: Request) -> Response:
        if PAGE.exists():
            return HTMLResponse(PAGE.read_text(encoding="utf-8"))
        return HTMLResponse(FALLBACK_PAGE)

    async def drain(self, timeout: float = 30.0) -> None:
        """Let running turns finish (the server is stopping)."""
        if self.tasks:
            await asyncio.wait(set(self.tasks), timeout=timeout)


async def _traced(request: Request, conversation_id: str | None, run: Any,
                  call: Callable[[], Awaitable[tuple[int, dict[str, Any]]]]
                  ) -> tuple[int, dict[str, Any]]:
    """``call``, a served turn, inside its span when convo.otel is instrumented (§18)."""
    telemetry = active()
    if telemetry is None:
        return await call()
    from ..otel.serving import traced

    return await traced(telemetry, request.headers, conversation_id, run, call)


def _traced_turn(request: Request, live: Live, turn: Turn) -> Turn:
    return lambda live, emit: _traced(request, live.id, live.run, lambda: turn(live, emit))


async def _events(queue: asyncio.Queue[tuple[str, Any]]) -> AsyncIterator[str]:
    while True:
        event, data = await queue.get()
        yield f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"
        if event in ("done", "error"):
            return


FALLBACK_PAGE = """<!doctype html><html lang="en"><meta charset="utf-8">
<title>convo</title><body style="font-family:sans-serif;max-width:40em;margin:2em auto">
<h1>convo</h1><p>This server serves a conversation over an HTTP API:</p>
<pre>POST /api/conversations                      {}
POST /api/conversations/{id}/messages        {"content": "Hello"}
GET  /api/conversations/{id}</pre><p>See docs/serving.md.</p></body></html>"""


def routes(api: API) -> list[Route]:
    return [
        Route("/", api.page, methods=["GET"]),
        Route("/api/health", api.health, methods=["GET"]),
        Route("/api/conversations", api.create, methods=["POST"]),
        Route("/api/conversations/{id}", api.show, methods=["GET"]),
        Route("/api/conversations/{id}", api.delete, methods=["DELETE"]),
        Route("/api/conversations/{id}/messages", api.message, methods=["POST"]),
        Route("/api/conversations/{id}/approvals", api.approvals, methods=["POST"]),
        Route("/api/conversations/{id}/retry", api.retry, methods=["POST"]),
    ]


def build(api: API) -> Starlette:
    async def problem(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPProblem)
        return _json({"error": str(exc)}, exc.status)

    async def http(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return _json({"error": f"{exc.detail}: {request.method} {request.url.path}"},
                     exc.status_code)

    async def store_down(request: Request, exc: Exception) -> Response:
        return _json({"error": f"the store does not answer: {exc}"}, 503)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            await api.ready()
        except StoreError:
            pass  # said by /api/health and each request until the store answers
        try:
            yield
        finally:
            await api.drain()
            await api.engine.store.close()

    return Starlette(routes=routes(api), lifespan=lifespan,
                     middleware=[Middleware(_Ready, api=api)], exception_handlers={
                         HTTPProblem: problem, HTTPException: http, StoreError: store_down})


class _Ready:
    """Opens the store before the first request it serves (pure ASGI middleware)."""

    def __init__(self, app: ASGIApp, api: API) -> None:
        self.app, self.api = app, api

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self.api._opened:
            try:
                await self.api.ready()
            except StoreError as exc:
                status = 503
                body = json.dumps({"error": f"the store does not answer: {exc}"}).encode()
                await send({"type": "http.response.start", "status": status,
                            "headers": [(b"content-type", b"application/json")]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
