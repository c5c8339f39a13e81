"""The HTTP API of API.md §9 and §20 on Starlette: routes, auth, checked bodies, JSON errors,
idempotency keys, SSE. Logs and failures are middleware (``logs.py``); the conversations
themselves are the engine's.

(Over 300 lines: every route of the API is here, each short; the bodies, logs, streams and
idempotency records each have a module of their own.)
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from functools import partial
from typing import Any

import attrs
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import Scope

from ..._internal import reserved_keys
from ...otel._state import active
from .._branches import branch, preview
from .._engine import Engine
from .._events import ServedEvent, Sink, TurnEnded, TurnFailed, WaitingFor
from .._live import Live
from .._problems import Busy, Conflict, Refused, status_of
from .._stores.base import Idempotency, Stored, StoreError
from .auth import DEFAULT_USER, Auth, Caller, Open
from .bodies import (
    DEFAULT_MAX_ATTACHMENT_BYTES,
    MAX_ATTACHMENTS,
    HTTPProblem,
    content_digest_source,
    content_of,
    read_object,
    while_busy,
)
from .faces import FACES, face_routes
from .host import Turn
from .keys import answer, needs_messages, reference
from .logs import MODEL_FAILED, SERVER_FAILED, Front, failure, logger
from .operators import operator_routes
from .owners import (
    as_shown,
    conversation_for,
    lacks,
    list_conversations,
    post_feedback,
    read_feedback,
)
from .pages import (
    DEFAULT_FIRST_PROMPT,
    DEFAULT_TITLE,
    PageOptions,
    chat_page,
    operator_page,
)
from .sse import stream_turn

#: The bot's name as a model (``GET /v1/models``) when neither its title nor ``model_name``
#: gives one.
DEFAULT_MODEL_NAME = "convo"


def _json(body: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(body, status_code=status)


class Interrupt(Exception):
    """A message sent with ``"while_busy": "interrupt"`` found a turn running: stop it, then
    answer the message (API.md §26)."""


#: What a request does when a turn runs: an answer of its own (a 202 of a queued message), or
#: ``Interrupt``, or a refusal.
Busied = Callable[[], Awaitable[tuple[int, dict[str, Any]]]]


class API:
    """The routes, bound to one engine."""

    def __init__(self, engine: Engine, *, auth: Auth, max_message_bytes: int,
                 debug_errors: bool = False, hidden_tools: Iterable[str] = (),
                 max_attachment_bytes: int = DEFAULT_MAX_ATTACHMENT_BYTES,
                 title: str | None = None, first_prompt: str | None = None,
                 faces: Iterable[str] = FACES, tool_name: str | None = None,
                 tool_description: str | None = None, model_name: str | None = None,
                 while_busy: str = "reject") -> None:
        self.engine = engine
        self.while_busy = while_busy  # a message's default while a turn runs (§26)
        self.model_name = model_name or title or DEFAULT_MODEL_NAME  # the bot, as a model (§25)
        self.faces = tuple(faces)  # the faces served (``faces.chosen``)
        # The bot as an MCP tool (the mcp face, ``mcp.py``): its name (default: the title)
        # and description.
        self.tool_name = tool_name
        self.tool_description = tool_description
        # What a face started and the app's end stops (the mcp face's session manager).
        self.closers: list[Callable[[], Awaitable[None]]] = []
        self.auth = auth
        self.max_message_bytes = max_message_bytes
        self.max_attachment_bytes = max_attachment_bytes
        self.body_limit = 4 * max_message_bytes + 65536
        # A message's body may hold its attachments too, as base64 (4 bytes per 3).
        self.message_body_limit = self.body_limit + MAX_ATTACHMENTS * (
            -(-max_attachment_bytes // 3) * 4 + 1024)
        self.debug_errors = debug_errors
        self.hidden_tools = sorted(hidden_tools)
        self.pages = PageOptions(title=title or DEFAULT_TITLE,
                                 first_prompt=first_prompt or DEFAULT_FIRST_PROMPT,
                                 hidden_tools=tuple(self.hidden_tools),
                                 max_attachment_bytes=max_attachment_bytes)
        self.tasks: set[asyncio.Task[Any]] = set()
        self._opened = False
        self._greets: bool | None = None
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

    async def opened(self) -> str | None:
        """``ready``, before each request (``logs.Front``): ``None`` once the store is open,
        else why it does not answer (the request is answered 503)."""
        if self._opened:
            return None
        try:
            await self.ready()
        except StoreError as exc:
            return f"the store does not answer: {exc}"
        return None

    async def caller(self, request: Request) -> Caller:
        """Who sent ``request`` (``auth.py``), or a 401; kept on ``request.state.caller``, and
        its user on ``request.state.user`` for the request's log line."""
        caller: Caller = await self.auth.identify(request.headers)
        request.state.caller = caller
        request.state.user = caller.user
        return caller

    async def conversation_for(self, caller: Caller, conversation_id: str, *,
                               operator_may: bool = True, messages: bool = False) -> Stored:
        """The conversation (its row; with ``messages``, all of it) if ``caller`` may act on
        it: its owner; an operator when ``operator_may`` (else 403); anybody else gets 404
        (``owners.py``)."""
        return await conversation_for(self.engine.store, caller, conversation_id,
                                      operator_may=operator_may, messages=messages)

    async def _owned(self, request: Request, *, operator_may: bool) -> tuple[Caller, Stored]:
        """Who calls, and the conversation's row: the one read of it before its turn (the
        engine is handed it)."""
        caller = await self.caller(request)
        stored = await self.conversation_for(caller, request.path_params["id"],
                                             operator_may=operator_may)
        return caller, stored

    # -- what a client sees ----------------------------------------------------------------

    def plain(self, body: dict[str, Any]) -> dict[str, Any]:
        """A conversation as users see it: what a failed model call waits for in plain words
        (the cause is in the log), unless ``debug_errors``."""
        waiting = body.get("waiting_for")
        if self.debug_errors or not (isinstance(waiting, dict) and waiting.get("type") == "retry"):
            return body
        return {**body, "waiting_for": {**waiting, "error": MODEL_FAILED}}

    def present(self, scope: Scope, code: int, body: dict[str, Any]) -> dict[str, Any]:
        """An answer's body: a 5xx gets an ``error_id`` (its cause goes to the log) and, for
        users, plain words."""
        if code >= 500:
            error_id = failure(scope, str(body.get("error")))
            body = {**body, "error_id": error_id}
            if not self.debug_errors:
                body["error"] = MODEL_FAILED if code == 502 else SERVER_FAILED
        return self.plain(body)

    def _answer(self, request: Request, code: int, body: dict[str, Any]) -> Response:
        return _json(self.present(request.scope, code, body), code)

    # -- routes ------------------------------------------------------------------------------

    async def health(self, request: Request) -> Response:
        ok = await self.engine.store.ping()
        return _json({"status": "ok" if ok else "the store does not answer"}, 200 if ok else 503)

    async def create(self, request: Request) -> Response:
        caller = await self.caller(request)
        body = await read_object(request, self.body_limit)
        state = body.get("state", {})
        if not isinstance(state, dict):
            raise HTTPProblem(400, f'"state" must be a JSON object, got {type(state).__name__}')
        reserved = reserved_keys(state)
        if reserved:  # convo's own records are not the client's to write (docs/serving.md)
            raise HTTPProblem(400, f'"state" may not hold {", ".join(map(repr, reserved))}: '
                                   'keys starting with "convo." and the key "_convo_state" are '
                                   "reserved for convo's own records; choose other names")
        code, result = await _traced(
            request, None, None, lambda: self.engine.create(state, None, owner=caller.user))
        request.state.conversation = result.get("id")
        return self._answer(request, code, result)

    async def show(self, request: Request) -> Response:
        caller = await self.caller(request)
        stored = await self.conversation_for(caller, request.path_params["id"],
                                             messages=True)
        # Operators see what a guard blocked (its original, in the stored message's metadata).
        body = self.plain(await self.engine.get(stored.id, stored, originals=caller.operator))
        return _json(await as_shown(self.engine.store, stored, body, caller))

    async def delete(self, request: Request) -> Response:
        await self._owned(request, operator_may=False)
        await self.engine.delete(request.path_params["id"])
        return Response(status_code=204)

    async def message(self, request: Request) -> Response:
        _, stored = await self._owned(request, operator_may=False)
        body = await read_object(request, self.message_body_limit)
        mode = while_busy(body, self.while_busy)
        content = content_of(body, self.max_message_bytes, self.max_attachment_bytes)

        def turn(live: Live, sink: Sink | None) -> Awaitable[tuple[int, dict[str, Any]]]:
            return self.engine.message(live, content, sink)

        async def busy() -> tuple[int, dict[str, Any]]:  # a turn runs (API.md §26)
            if mode in ("queue", "steer"):
                return 202, await self.engine.enqueue(stored.id, content, steer=mode == "steer")
            if mode == "interrupt":
                raise Interrupt
            raise Busy("a turn is running in this conversation: wait for it to end, then "
                       "send again")

        key = request.headers.get("idempotency-key")
        if key is None:
            return await self._turn(request, turn, stored, busy)
        digest = hashlib.sha256(content_digest_source(content)).hexdigest()
        return await self._idempotent(request, stored, key, digest, turn, busy)

    async def withdraw(self, request: Request) -> Response:
        """``DELETE /api/conversations/{id}/queued/{message_id}`` (API.md §26)."""
        await self._owned(request, operator_may=False)
        await self.engine.withdraw(request.path_params["id"], request.path_params["message_id"])
        return Response(status_code=204)

    async def approvals(self, request: Request) -> Response:
        caller, stored = await self._owned(request, operator_may=True)
        staff = caller.operator and stored.owner != caller.user
        body = await read_object(request, self.body_limit)
        decisions = body.get("decisions")
        if not isinstance(decisions, list) or not all(
                isinstance(d, dict) and isinstance(d.get("call_id"), str)
                and isinstance(d.get("approve"), bool)
                and isinstance(d.get("reason", ""), str | None) for d in decisions):
            raise HTTPProblem(400, '"decisions" must be a list of {"call_id": "...", '
                                   '"approve": true|false, "reason"?: "..."}')
        return await self._turn(request, lambda live, sink: self.engine.approve(
            live, decisions, sink, operator=caller.operator, staff=staff), stored)

    async def retry(self, request: Request) -> Response:
        _, stored = await self._owned(request, operator_may=False)
        await read_object(request, self.body_limit)
        return await self._turn(request, lambda live, sink: self.engine.retry(live, sink),
                                stored)

    async def branch(self, request: Request) -> Response:
        """A new conversation from this one's messages before ``before`` (API.md §28); a
        branch that makes a model call streams it when asked. ``"dry_run": true``: 200 and
        the ``not_undone`` it would list, nothing made."""
        caller = await self.caller(request)
        stored = await self.conversation_for(caller, request.path_params["id"],
                                             operator_may=False, messages=True)
        body = await read_object(request, self.body_limit)
        before, dry_run = body.get("before"), body.get("dry_run", False)
        if isinstance(before, bool) or not isinstance(before, int):
            raise HTTPProblem(400, f'"before" must be the index of a message (an integer from '
                                   f'0), got {before!r}')
        if not isinstance(dry_run, bool):
            raise HTTPProblem(400, f'"dry_run" must be true or false, got {dry_run!r}')
        if dry_run:  # what the branch would list, nothing made (the page asks first)
            return self._answer(request, 200, await preview(self.engine, stored.id, before))

        async def run(sink: Sink | None) -> tuple[int, dict[str, Any]]:
            code, body = await branch(self.engine, stored.id, before, sink)
            request.state.conversation = body.get("id")
            return code, body

        calls_model = 0 <= before < len(stored.messages) \
            and stored.messages[before].role == "assistant"
        if not calls_model or "text/event-stream" not in request.headers.get("accept", ""):
            code, result = await run(None)
            return self._answer(request, code, result)

        async def streamed(sink: Sink) -> ServedEvent:
            code, result = await run(self.plain_events(sink))
            body = self.present(request.scope, code, result)
            return TurnEnded(body) if code < 400 else TurnFailed(body, code)

        return await stream_turn(streamed, tasks=self.tasks,
                                 cut=lambda exc: self._cut(request.scope, exc))

    async def cancel(self, request: Request) -> Response:
        caller = await self.caller(request)
        stored = await self.conversation_for(caller, request.path_params["id"],
                                             operator_may=False)
        await read_object(request, self.body_limit)
        body = self.plain(await self.engine.cancel(stored.id, known=True))
        return _json(await as_shown(self.engine.store, stored, body, caller))

    async def page(self, request: Request) -> Response:
        if self._greets is None:  # asked once: the template's first step, nothing run
            self._greets = self.engine.greets()
            self.pages = attrs.evolve(self.pages, greets=self._greets)
        return HTMLResponse(chat_page(self.pages) or FALLBACK_PAGE)

    async def operator(self, request: Request) -> Response:
        return HTMLResponse(operator_page(self.pages) or FALLBACK_PAGE)

    # -- turns -------------------------------------------------------------------------------

    async def _exists(self, conversation_id: str) -> None:
        if await self.engine.store.load(conversation_id, messages=False) is None:
            raise HTTPProblem(404, f"no conversation {conversation_id!r}")

    async def _idempotent(self, request: Request, stored: Stored, key: str, digest: str,
                          turn: Turn, busy: Busied | None = None) -> Response:
        """A turn under the ``Idempotency-Key`` ``key`` (a request without one is a plain
        ``_turn``): a repeat answers as the first did; a refused request (4xx) leaves the key
        unused. ``stored``: the row the route read (so the conversation is there before any
        record is kept)."""
        conversation_id = stored.id
        store = self.engine.store
        if not isinstance(store, Idempotency):
            raise lacks(store, "Idempotency", "keep idempotency records",
                        "; send the request without an Idempotency-Key")
        known = await store.idempotent(conversation_id, key)
        if known is None and not await store.remember(conversation_id, key, digest, None):
            known = await store.idempotent(conversation_id, key)
        if known is not None:
            return await self._repeat(request, known, digest)

        async def remembered(live: Live, sink: Sink | None) -> tuple[int, dict[str, Any]]:
            code, result = await turn(live, sink)
            await store.remember(conversation_id, key, digest, reference(code, result))
            return code, result

        async def queued() -> tuple[int, dict[str, Any]]:
            assert busy is not None
            code, result = await busy()  # a queued message's 202: kept as it is
            await store.remember(conversation_id, key, digest, {"status": code, "body": result})
            return code, result

        try:
            return await self._turn(request, remembered, stored,
                                    None if busy is None else queued)
        except (HTTPProblem, Refused) as exc:
            if status_of(exc) < 500:  # refused before anything ran: the key stays unused
                await store.forget(conversation_id, key)
            raise

    async def _repeat(self, request: Request, known: tuple[str, dict[str, Any] | None],
                      digest: str) -> Response:
        digest_known, record = known
        if digest_known != digest:
            raise HTTPProblem(409, "this Idempotency-Key was used with other content")
        if record is None:
            raise HTTPProblem(409, "a request with this Idempotency-Key is still running "
                                   "(or was cut off): wait, or use a new key")
        messages = []
        if needs_messages(record):
            stored = await self.engine.store.load(request.path_params["id"])
            if stored is None:
                raise HTTPProblem(404, f"no conversation {request.path_params['id']!r}")
            messages = stored.messages
        code, body = answer(record, messages)
        return self._answer(request, code, body)

    async def _turn(self, request: Request, turn: Turn, stored: Stored | None = None,
                    busy: Busied | None = None) -> Response:
        """Take the conversation's turn lock and run ``turn``: as JSON, or as an SSE stream.
        Problems known before the turn starts are plain JSON either way. ``stored``: the
        conversation's row as the route read it, handed to the engine. ``busy``: what to do
        when another turn runs (API.md §26), else 409."""
        conversation_id = request.path_params["id"]
        stack = contextlib.AsyncExitStack()
        try:
            live = await stack.enter_async_context(self.engine.turn(conversation_id, stored))
        except Conflict as exc:  # a lock refused on an id that is not there: 404
            await self._exists(conversation_id)
            if busy is None or not isinstance(exc, Busy):
                raise
            try:
                code, result = await busy()
            except Interrupt:
                return await self._interrupt(request, turn)
            return self._answer(request, code, result)
        if active() is not None:
            turn = _traced_turn(request, live, turn)
        if "text/event-stream" not in request.headers.get("accept", ""):
            async with stack:
                code, result = await turn(live, None)
            return self._answer(request, code, result)
        return await self._stream(request, stack, live, turn)

    async def _interrupt(self, request: Request, turn: Turn) -> Response:
        """Stop the running turn as a cancel does (API.md §20), then run ``turn`` (a few
        tries: a turn that another request started meanwhile is stopped too)."""
        return await self.engine.interrupt(request.path_params["id"],
                                           lambda: self._turn(request, turn))

    async def _stream(self, request: Request, stack: contextlib.AsyncExitStack, live: Live,
                      turn: Turn) -> Response:
        """The turn as a stream of served events, encoded as convo's SSE (``sse.py``)."""
        async def run(sink: Sink) -> ServedEvent:
            async with stack:
                code, result = await turn(live, self.plain_events(sink))
            body = self.present(request.scope, code, result)
            return TurnEnded(body) if code < 400 else TurnFailed(body, code)

        return await stream_turn(run, tasks=self.tasks,
                                 cut=lambda exc: self._cut(request.scope, exc))

    async def traced(self, request: Request, conversation_id: str | None, run: Any,
                     call: Callable[[], Awaitable[tuple[int, dict[str, Any]]]]
                     ) -> tuple[int, dict[str, Any]]:
        """``call``, the turns of one request, inside its span when convo.otel is
        instrumented (§18): the faces' (AG-UI's, the AI SDK's) as the native routes'."""
        return await _traced(request, conversation_id, run, call)

    def plain_events(self, sink: Sink) -> Sink:
        """``sink``, shown where a conversation waits in the words users see (``plain``)."""
        def shown(event: ServedEvent) -> None:
            if isinstance(event, WaitingFor):
                event = WaitingFor(self.plain({"waiting_for": event.waiting_for})["waiting_for"])
            sink(event)
        return shown

    def _cut(self, scope: Scope, exc: Exception) -> TurnFailed:
        """The event that ends a stream a failure cut after it started."""
        if isinstance(exc, HTTPProblem | Refused) and status_of(exc) < 500:
            return TurnFailed({"error": str(exc)}, status_of(exc))
        cause = f"{type(exc).__name__}: {exc}"
        error_id = failure(scope, cause)
        logger.error("error_id=%s: %s", error_id, cause, exc_info=exc,
                     extra={"convo_fields": None})
        return TurnFailed({"error": cause if self.debug_errors else SERVER_FAILED,
                           "error_id": error_id}, 503 if isinstance(exc, StoreError) else 500)

    async def drain(self, timeout: float = 30.0) -> None:
        """Let running turns finish (the server is stopping); the queues' watchers stop (the
        queued messages stay stored, taken by the next turn or worker)."""
        if self.tasks:
            await asyncio.wait(set(self.tasks), timeout=timeout)
        for task in list(self.engine.tasks):
            task.cancel()
        if self.engine.tasks:
            await asyncio.wait(set(self.engine.tasks), timeout=timeout)


async def _traced(request: Request, conversation_id: str | None, run: Any,
                  call: Callable[[], Awaitable[tuple[int, dict[str, Any]]]]
                  ) -> tuple[int, dict[str, Any]]:
    """``call``, a served turn, inside its span when convo.otel is instrumented (§18)."""
    telemetry = active()
    if telemetry is None:
        return await call()
    from ...otel._serving import traced

    caller = getattr(request.state, "caller", None)
    return await traced(telemetry, request.headers, conversation_id, run, call,
                        user=caller.user if caller is not None else None, refused=_refused)


def _refused(exc: BaseException) -> bool:
    """A turn's request refused before any template ran (no span for it, §18)."""
    return isinstance(exc, HTTPProblem | Refused) and status_of(exc) < 500


def _traced_turn(request: Request, live: Live, turn: Turn) -> Turn:
    return lambda live, sink: _traced(request, live.id, live.run.state,
                                        lambda: turn(live, sink))


FALLBACK_PAGE = """<!doctype html><html lang="en"><meta charset="utf-8">
<title>convo</title><body style="font-family:sans-serif;max-width:40em;margin:2em auto">
<h1>convo</h1><p>This server serves a conversation over an HTTP API:</p>
<pre>POST /api/conversations                      {}
POST /api/conversations/{id}/messages        {"content": "Hello"}
GET  /api/conversations/{id}</pre><p>See docs/serving.md.</p></body></html>"""


def routes(api: API) -> list[BaseRoute]:
    """``/api/health``, always, then the routes of the faces the app serves (``faces.py``)."""
    return [Route("/api/health", api.health, methods=["GET"]),
            *face_routes(api, api.faces)]


def native_routes(api: API) -> list[BaseRoute]:
    """The native face: the JSON API with convo's SSE, the chat page, the operators' page."""
    return [
        Route("/", api.page, methods=["GET"]),
        Route("/operator", api.operator, methods=["GET"]),
        Route("/api/conversations", api.create, methods=["POST"]),
        Route("/api/conversations", partial(list_conversations, api), methods=["GET"]),
        Route("/api/feedback", partial(read_feedback, api), methods=["GET"]),
        Route("/api/conversations/{id}/feedback", partial(post_feedback, api),
              methods=["POST"]),
        Route("/api/conversations/{id}", api.show, methods=["GET"]),
        Route("/api/conversations/{id}", api.delete, methods=["DELETE"]),
        Route("/api/conversations/{id}/messages", api.message, methods=["POST"]),
        Route("/api/conversations/{id}/approvals", api.approvals, methods=["POST"]),
        Route("/api/conversations/{id}/retry", api.retry, methods=["POST"]),
        Route("/api/conversations/{id}/cancel", api.cancel, methods=["POST"]),
        Route("/api/conversations/{id}/branch", api.branch, methods=["POST"]),
        Route("/api/conversations/{id}/queued/{message_id}", api.withdraw,
              methods=["DELETE"]),
        *operator_routes(api),
    ]


def build(api: API) -> Starlette:
    async def problem(request: Request, exc: Exception) -> Response:
        return _json({"error": str(exc)}, status_of(exc))

    async def http(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return _json({"error": f"{exc.detail}: {request.method} {request.url.path}"},
                     exc.status_code)

    async def store_down(request: Request, exc: Exception) -> Response:
        cause = f"the store does not answer: {exc}"
        return _json({"error": cause, "error_id": failure(request.scope, cause)}, 503)

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
            for close in api.closers:
                await close()
            try:  # the template's toolsets: no MCP server's process outlives the app
                await api.engine.runner.aclose()
            finally:
                await api.engine.store.close()

    # Without sign-in every caller is "default"; with it, a request nobody signed in to
    # (refused, or on a route that asks no one) logs no user.
    nobody = DEFAULT_USER if isinstance(api.auth, Open) else None
    return Starlette(routes=routes(api), lifespan=lifespan, middleware=[
        Middleware(Front, nobody=nobody, debug=api.debug_errors, ready=api.opened)],
        exception_handlers={
            HTTPProblem: problem, Refused: problem, HTTPException: http,
            StoreError: store_down})
