"""OpenAIServer: an OpenAI-compatible Chat Completions server on 127.0.0.1, for tests.

The real ``openai`` SDK talks HTTP to it, so a test covers the whole path a real run takes,
without the internet. Replies are scripted like ``MockModel`` replies and answered in order,
one per request (an SDK retry is a request too)::

    with OpenAIServer(["Hello! {lookup(city='Oslo')}", "It is sunny."]) as server:
        model = OpenAIModel(base_url=server.base_url, api_key="test")
        ...
        assert server.requests[1]["messages"][-1]["role"] == "tool"

Standard library only: an asyncio HTTP/1.1 server (keep-alive, chunked SSE) on its own
thread and event loop.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from collections.abc import Iterable, Mapping
from http import HTTPStatus
from types import TracebackType
from typing import Any, TypeAlias

import attrs

from ..messages import Message
from ..models.script import CallIds, as_message
from ..models.wire_server import chunks_from_message, response_from_message

_JSON = "application/json"
_LIMIT = 1 << 20  # the longest request head accepted


@attrs.frozen(slots=True)
class ErrorReply:
    """Answer one request with an HTTP error: ``ErrorReply(429, {"Retry-After": "0"})``.

    ``body`` is sent as is when it is a ``str``/``bytes`` (so a ``200`` with a broken body
    makes a malformed reply), JSON-encoded otherwise; by default it is an OpenAI-style
    ``{"error": {...}}`` naming the status. A ``Content-Type`` in ``headers`` replaces the
    default one.
    """

    status: int
    headers: Mapping[str, str] | None = None
    body: Any = None


@attrs.frozen(slots=True)
class SlowReply:
    """Answer one request with ``reply``, after ``delay_s`` seconds (for timeouts)."""

    reply: Any
    delay_s: float


@attrs.frozen(slots=True)
class CutReply:
    """Start answering with ``reply``, then drop the connection after ``after_chunks`` chunks.

    A streamed request gets that many SSE chunks; a plain one gets its headers and part of
    its body. For testing what a client does with a reply cut off mid-way.
    """

    reply: Any
    after_chunks: int = 1


ServerReply: TypeAlias = "str | Message | ErrorReply | SlowReply | CutReply"


@attrs.frozen(slots=True)
class _Response:
    """What to write back for one request: a body, or SSE chunks; maybe cut short."""

    status: int
    content_type: str
    body: bytes = b""
    events: tuple[bytes, ...] | None = None
    headers: Mapping[str, str] | None = None
    delay_s: float = 0.0
    cut: int | None = None


class OpenAIServer:
    """An OpenAI-compatible Chat Completions server on 127.0.0.1 (a free port), for tests.

    - ``replies``: answered in order, one per request: a string (``MockModel`` syntax,
      ``{tool(arg='x')}`` for tool calls), a ``Message``, ``ErrorReply``, ``SlowReply`` or
      ``CutReply``. ``.add(*replies)`` scripts more. A request beyond the script gets HTTP 500
      with a message saying that the script ran out.
    - ``.requests``: every request body received (parsed JSON), in order.
    - ``.base_url``: what the SDK needs (``http://127.0.0.1:PORT/v1``); ``port``: a fixed
      port instead of a free one.

    Streamed requests get SSE with text and tool-call arguments split across chunks and,
    with ``stream_options={"include_usage": True}``, a final usage chunk. Usage is counted in
    words (or taken from a ``Message`` reply's ``metadata["usage"]``). The server starts at
    once; ``close()`` (or leaving the ``with`` block) stops it and drops open connections.
    """

    def __init__(self, replies: Iterable[ServerReply] = (), *, port: int = 0) -> None:
        self._lock = threading.Lock()
        self._ids = CallIds()
        self._replies: list[Any] = []
        self._served = 0
        self.requests: list[dict[str, Any]] = []
        self._closed = False
        self._completion_ids = itertools.count(1)
        self.add(*replies)
        # One thread runs an asyncio loop that serves every connection: many concurrent
        # clients cost no threads, and the client's own thread is not starved of the GIL.
        self._loop = asyncio.new_event_loop()
        self._connections: set[asyncio.Task[None]] = set()
        self._server = self._loop.run_until_complete(asyncio.start_server(
            self._serve, "127.0.0.1", port, backlog=1024, limit=_LIMIT))
        self.port: int = self._server.sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._loop.run_forever,
                                        name=f"OpenAIServer:{self.port}", daemon=True)
        self._thread.start()

    # -- the script ------------------------------------------------------------------------

    def add(self, *replies: ServerReply) -> None:
        """Script more replies (string replies are parsed now, so tool-call ids are fixed)."""
        prepared = [self._prepare(r, len(self._replies) + i + 1) for i, r in enumerate(replies)]
        with self._lock:
            self._replies.extend(prepared)

    def _prepare(self, reply: Any, number: int) -> Any:
        if isinstance(reply, ErrorReply):
            return reply
        if isinstance(reply, SlowReply | CutReply):
            return attrs.evolve(reply, reply=self._prepare(reply.reply, number))
        return as_message(reply, self._ids, f"OpenAIServer reply {number}")

    @property
    def remaining(self) -> int:
        """How many scripted replies are still unanswered."""
        with self._lock:
            return len(self._replies) - self._served

    def assert_complete(self) -> None:
        """Fail if scripted replies were left unused."""
        left = self.remaining
        if left:
            raise AssertionError(
                f"OpenAIServer: {left} of {len(self._replies)} scripted replies were not used "
                f"({len(self.requests)} requests received)"
            )

    def _next(self, body: dict[str, Any]) -> tuple[int, Any]:
        """Record a request and pick its reply: ``(request number, reply)``.

        A subclass may override it to answer from the request instead of a script (the
        benchmarks' server does, for conversations that interleave).
        """
        with self._lock:
            self.requests.append(body)
            number = len(self.requests)
            if self._served >= len(self._replies):
                scripted = len(self._replies)
                return number, ErrorReply(500, body={"error": {
                    "message": f"OpenAIServer script ran out: {scripted} replies were scripted "
                               f"and request {number} asked for another",
                    "type": "server_error", "code": "script_exhausted",
                }})
            reply = self._replies[self._served]
            self._served += 1
            return number, reply

    # -- answering -------------------------------------------------------------------------

    def _respond(self, body: dict[str, Any]) -> _Response:
        _, reply = self._next(body)
        delay = 0.0
        if isinstance(reply, SlowReply):
            reply, delay = reply.reply, reply.delay_s
        cut: int | None = None
        if isinstance(reply, CutReply):
            reply, cut = reply.reply, reply.after_chunks
        if isinstance(reply, ErrorReply):
            return attrs.evolve(_error_response(reply), delay_s=delay)
        message: Message = reply
        model = str(body.get("model") or "convo-test")
        response_id = f"chatcmpl-{next(self._completion_ids)}"
        created = int(time.time())
        usage = _usage(body, message)
        if body.get("stream"):
            options = body.get("stream_options") or {}
            chunks = chunks_from_message(
                message, model=model, response_id=response_id, created=created,
                usage=usage if options.get("include_usage") else None,
            )
            events = (*(f"data: {json.dumps(c)}\n\n".encode() for c in chunks),
                      b"data: [DONE]\n\n")
            return _Response(200, "text/event-stream", events=events, delay_s=delay, cut=cut)
        response = response_from_message(message, model=model, response_id=response_id,
                                          created=created, usage=usage)
        return _Response(200, _JSON, json.dumps(response).encode(), delay_s=delay, cut=cut)

    # -- HTTP ------------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            while await self._serve_one(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
                asyncio.CancelledError, ValueError):
            pass  # the client went away, sent garbage, or the server is closing
        finally:
            self._connections.discard(task)
            writer.close()

    async def _serve_one(self, reader: asyncio.StreamReader,
                         writer: asyncio.StreamWriter) -> bool:
        """Answer one request; whether the connection stays open for another."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return False  # closed between requests: the normal end of keep-alive
        lines = head.decode("latin-1").split("\r\n")
        method, path, version = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name:
                headers[name.strip().lower()] = value.strip()
        raw = await reader.readexactly(int(headers.get("content-length") or 0))
        keep_alive = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
        response = self._route(method, path, raw)
        if response.delay_s:
            await asyncio.sleep(response.delay_s)
        if not await self._write(writer, response, keep_alive):
            return False
        return keep_alive

    def _route(self, method: str, path: str, raw: bytes) -> _Response:
        route = path.split("?", 1)[0].rstrip("/")
        if method == "GET" and route.endswith("/models"):
            return _json_response(200, {"object": "list", "data": [
                {"id": "convo-test", "object": "model", "created": 0, "owned_by": "convo"}]})
        if method != "POST" or not route.endswith("/chat/completions"):
            return _json_response(404, {"error": {
                "message": f"OpenAIServer serves POST /v1/chat/completions, not {method} {path}",
                "type": "invalid_request_error", "code": "unknown_url"}})
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return _json_response(400, {"error": {
                "message": "OpenAIServer: the request body is not a JSON object",
                "type": "invalid_request_error"}})
        return self._respond(body)

    @staticmethod
    async def _write(writer: asyncio.StreamWriter, response: _Response,
                     keep_alive: bool) -> bool:
        """Write a response; False when it was cut off (the connection is then dropped)."""
        headers = {} if response.headers is None else dict(response.headers)
        lines = [f"HTTP/1.1 {response.status} {_phrase(response.status)}",
                 "Server: convo-OpenAIServer"]
        if not any(name.lower() == "content-type" for name in headers):
            lines.append(f"Content-Type: {response.content_type}")
        if response.events is None:
            lines.append(f"Content-Length: {len(response.body)}")
        else:
            lines += ["Cache-Control: no-cache", "Transfer-Encoding: chunked"]
        if not keep_alive:
            lines.append("Connection: close")
        lines += [f"{name}: {value}" for name, value in headers.items()]
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        if response.events is None:
            if response.cut is not None:
                writer.write(head + response.body[: len(response.body) // 2])
                await writer.drain()
                return False
            writer.write(head + response.body)
            await writer.drain()
            return True
        writer.write(head)
        for sent, event in enumerate(response.events):
            if response.cut is not None and sent >= response.cut:
                await writer.drain()
                return False
            writer.write(b"%x\r\n%s\r\n" % (len(event), event))
            await writer.drain()  # one network write per chunk, as a real stream arrives
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True

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

    def __enter__(self) -> OpenAIServer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else self.base_url
        return (f"OpenAIServer({state}, {len(self._replies)} replies, "
                f"{len(self.requests)} requests)")


def _json_response(status: int, body: Any) -> _Response:
    return _Response(status, _JSON, json.dumps(body).encode())


def _error_response(reply: ErrorReply) -> _Response:
    body = reply.body
    content_type = _JSON
    if body is None:
        kind = "server_error" if reply.status >= 500 else "invalid_request_error"
        body = {"error": {"message": f"OpenAIServer: scripted HTTP {reply.status} "
                                     f"{_phrase(reply.status)}", "type": kind, "code": None}}
    if isinstance(body, str):
        body = body.encode()
        content_type = "text/plain; charset=utf-8"
    if not isinstance(body, bytes):
        body = json.dumps(body).encode()
    return _Response(reply.status, content_type, body, headers=reply.headers)


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _words(value: Any) -> int:
    if isinstance(value, str):
        return len(value.split())
    if isinstance(value, list):
        return sum(_words(part.get("text")) for part in value if isinstance(part, dict))
    return 0


def _usage(body: Mapping[str, Any], message: Message) -> dict[str, int]:
    given = message.metadata.get("usage")
    if given:
        return dict(given)
    prompt = sum(_words(m.get("content")) + 1 for m in body.get("messages") or ()
                 if isinstance(m, dict))
    completion = _words(message.content) + sum(
        1 + len(c.arguments) for c in message.tool_calls
    )
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}
