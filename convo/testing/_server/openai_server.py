"""OpenAIServer: an OpenAI-compatible server on 127.0.0.1, for tests: Chat Completions
(``POST /v1/chat/completions``) and the Responses API (``POST /v1/responses``).

The real ``openai`` SDK talks HTTP to it, so a test covers the whole path a real run takes,
without the internet. Replies are scripted like ``MockModel`` replies and answered in order,
one per request (an SDK retry is a request too)::

    with OpenAIServer(["Hello! {lookup(city='Oslo')}", "It is sunny."]) as server:
        model = OpenAIModel(base_url=server.base_url, api_key="test")
        ...
        assert server.requests[1]["messages"][-1]["role"] == "tool"

Or answered from each request by a ``handler`` (a function of the request body)::

    OpenAIServer(handler=lambda body: f"You said {body['messages'][-1]['content']}")

Standard library only: an asyncio HTTP/1.1 server (``connection.py``) on its own thread and
event loop.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, Self

import attrs

from ...models._script import CallIds, as_message
from . import connection as connection
from .replies import (
    CutReply,
    ErrorReply,
    Response,
    ServerReply,
    SlowReply,
    json_object,
    json_response,
    response_for,
    server_error,
)

_API = {"/chat/completions": "chat", "/responses": "responses"}

Handler = Callable[[dict[str, Any]], "ServerReply | None"]
"""``handler(request_body) -> reply``; ``None`` leaves the request to the script."""


class OpenAIServer:
    """An OpenAI-compatible server on 127.0.0.1 (a free port), for tests.

    - ``replies``: answered in order, one per request: a string (``MockModel`` syntax,
      ``{tool(arg='x')}`` for tool calls), a ``Message``, ``ErrorReply``, ``SlowReply`` or
      ``CutReply``. ``.add(*replies)`` scripts more. A request beyond the script gets HTTP 500
      with a message saying that the script ran out.
    - ``handler``: called with each request body (parsed JSON) before the script is looked
      at; what it returns (any reply above) answers the request, and ``None`` leaves it to
      the script. An exception in it answers HTTP 500 naming it.
    - ``.requests``: every request body received (parsed JSON), in order (none are kept with
      ``keep_requests=False``, for servers that answer millions); ``.paths``: the path each
      was sent to, without the query string (``/v1/chat/completions``, ``/v1/responses``).
    - ``.base_url``: what the SDK needs (``http://127.0.0.1:PORT/v1``); ``port=``: a fixed
      port instead of a free one.
    - ``check_complete``: whether the ``openai_server`` fixture fails a test that leaves
      scripted replies unused (set it to ``False`` on the fixture's server to allow that).

    Both APIs answer from the same script, each in its own shape. Streamed requests get SSE
    with text and tool-call arguments split across chunks and, with
    ``stream_options={"include_usage": True}``, a final usage chunk; on ``/v1/responses``,
    the typed events (``response.output_text.delta``, ``response.function_call_arguments.delta``,
    ..., ``response.completed``), a ``Message`` reply's ``metadata["reasoning"]`` served as
    reasoning items (their summaries streamed) and ``finish_reason: "length"`` as
    ``status: "incomplete"``. Usage is counted in
    words (or taken from a ``Message`` reply's ``metadata["usage"]``). The server starts at
    once; ``close()`` (or leaving the ``with`` block) stops it and drops open connections.
    """

    name = "OpenAIServer"  # how its messages name it

    def __init__(self, replies: Iterable[ServerReply] = (), *, handler: Handler | None = None,
                 keep_requests: bool = True, check_complete: bool = True,
                 port: int = 0) -> None:
        self._lock = threading.Lock()
        self._ids = CallIds()
        self._script: list[tuple[Any, Any]] = []  # (as given, prepared)
        self._served = 0
        self.handler = handler
        self.keep_requests = keep_requests
        self.check_complete = check_complete
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self._received = 0
        self._closed = False
        self._completion_ids = itertools.count(1)
        self.add(*replies)
        # One thread runs an asyncio loop that serves every connection: many concurrent
        # clients cost no threads, and the client's own thread is not starved of the GIL.
        self._loop = asyncio.new_event_loop()
        self._connections: set[asyncio.Task[None]] = set()
        self._server = self._loop.run_until_complete(asyncio.start_server(
            self._serve, "127.0.0.1", port, backlog=1024, limit=connection.LIMIT))
        self.port: int = self._server.sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._loop.run_forever,
                                        name=f"OpenAIServer:{self.port}", daemon=True)
        self._thread.start()

    # -- the script ------------------------------------------------------------------------

    def add(self, *replies: ServerReply) -> None:
        """Script more replies (string replies are parsed now, so tool-call ids are fixed)."""
        start = len(self._script)
        prepared = [(r, self._prepare(r, f"{self.name} reply {start + i + 1}"))
                    for i, r in enumerate(replies)]
        with self._lock:
            self._script.extend(prepared)

    def _prepare(self, reply: Any, where: str) -> Any:
        if isinstance(reply, ErrorReply):
            return reply
        if isinstance(reply, SlowReply | CutReply):
            return attrs.evolve(reply, reply=self._prepare(reply.reply, where))
        return as_message(reply, self._ids, where)

    @property
    def replies(self) -> tuple[Any, ...]:
        """The scripted replies, as they were given."""
        with self._lock:
            return tuple(given for given, _ in self._script)

    @property
    def served(self) -> int:
        """How many scripted replies have been answered."""
        return self._served

    @property
    def received(self) -> int:
        """How many chat requests have come in (kept in ``.requests`` or not)."""
        return self._received

    @property
    def remaining(self) -> int:
        """How many scripted replies are still unanswered."""
        with self._lock:
            return len(self._script) - self._served

    def assert_complete(self) -> None:
        """Fail if scripted replies were left unused."""
        left = self.remaining
        if left:
            raise AssertionError(
                f"{self.name}: {left} of {len(self._script)} scripted replies were not used "
                f"({self._received} requests received)"
            )

    def _next(self, body: dict[str, Any], path: str) -> Any:
        """Record a request and pick its reply: the handler's, else the script's."""
        with self._lock:
            self._received += 1
            number = self._received
            if self.keep_requests:
                self.requests.append(body)
                self.paths.append(path)
        if self.handler is not None:
            try:
                reply = self.handler(body)
            except Exception as exc:
                return server_error(f"{self.name} handler raised {type(exc).__name__}: {exc} "
                                    f"(request {number})", "handler_error")
            if reply is not None:
                return self._prepare(reply, f"{self.name} handler, request {number}")
        with self._lock:
            if self._served >= len(self._script):
                return server_error(
                    f"{self.name} script ran out: {len(self._script)} replies were scripted "
                    f"and request {number} asked for another", "script_exhausted")
            reply = self._script[self._served][1]
            self._served += 1
            return reply

    # -- HTTP ------------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await connection.serve(reader, writer, self._route)
        finally:
            self._connections.discard(task)

    def _route(self, method: str, path: str, raw: bytes,
               headers: Mapping[str, str] | None = None) -> Response:
        route = path.split("?", 1)[0].rstrip("/")
        if method == "GET" and route.endswith("/models"):
            return json_response(200, {"object": "list", "data": [
                {"id": "convo-test", "object": "model", "created": 0, "owned_by": "convo"}]})
        api = next((api for end, api in _API.items() if route.endswith(end)), None)
        if method != "POST" or api is None:
            return json_response(404, {"error": {
                "message": f"OpenAIServer serves POST /v1/chat/completions and POST "
                           f"/v1/responses, not {method} {path}",
                "type": "invalid_request_error", "code": "unknown_url"}})
        body = json_object(raw)
        if body is None:
            return json_response(400, {"error": {
                "message": "OpenAIServer: the request body is not a JSON object",
                "type": "invalid_request_error"}})
        try:
            reply = self._next(body, route)
        except Exception as exc:  # a handler's reply that is not a reply
            reply = server_error(f"{exc}", "handler_error")
        prefix = "resp_" if api == "responses" else "chatcmpl-"
        return response_for(reply, body, f"{prefix}{next(self._completion_ids)}",
                            int(time.time()), api=api)

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Stop serving and drop open connections; slow replies are abandoned."""
        if self._closed:
            return
        self._closed = True
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    async def _shutdown(self) -> None:
        self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        await self._server.wait_closed()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else self.base_url
        return (f"{self.name}({state}, {len(self._script)} replies, "
                f"{self._received} requests)")

