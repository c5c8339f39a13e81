"""What the fake server answers: the scripted reply values, and the HTTP response each becomes.

Pure functions over values: no sockets here (``connection.py`` writes the bytes).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any, Final, TypeAlias

import attrs

from ..._messages import Message
from . import responses_wire as responses
from .chat_wire import chunks_from_message, response_from_message

JSON: Final = "application/json"


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
class Response:
    """What to write back for one request: a body, or SSE chunks; maybe late, maybe cut short."""

    status: int
    content_type: str
    body: bytes = b""
    events: tuple[bytes, ...] | None = None
    headers: Mapping[str, str] | None = None
    delay_s: float = 0.0
    cut: int | None = None


def json_response(status: int, body: Any) -> Response:
    return Response(status, JSON, json.dumps(body).encode())


def json_object(raw: bytes) -> dict[str, Any] | None:
    """A request's body, when it is a JSON object (``None`` otherwise: each server says so
    in its API's error shape)."""
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def unwrapped(reply: Any) -> tuple[Any, float, int | None]:
    """A prepared reply without its ``SlowReply`` / ``CutReply`` wrapping: the reply, its
    delay in seconds, and after how many chunks it is cut (``None``: not cut)."""
    delay, cut = 0.0, None
    if isinstance(reply, SlowReply):
        reply, delay = reply.reply, reply.delay_s
    if isinstance(reply, CutReply):
        reply, cut = reply.reply, reply.after_chunks
    return reply, delay, cut


def answered(delay: float, cut: int | None, *, events: tuple[bytes, ...] | None = None,
             body: Any = None) -> Response:
    """A 200 (``delay`` and ``cut`` from ``unwrapped``): the SSE ``events`` when the request
    streams, else ``body`` as JSON."""
    if events is not None:
        return Response(200, "text/event-stream", events=events, delay_s=delay, cut=cut)
    return Response(200, JSON, json.dumps(body).encode(), delay_s=delay, cut=cut)


def error_as_given(reply: ErrorReply, body: Any) -> Response:
    """An error reply's response: ``body`` sent as is when it is text or bytes, else as
    JSON (the Anthropic and Gemini servers' errors)."""
    if isinstance(body, str | bytes):
        raw = body.encode() if isinstance(body, str) else body
        return Response(reply.status, "text/plain; charset=utf-8", raw, headers=reply.headers)
    return Response(reply.status, JSON, json.dumps(body).encode(), headers=reply.headers)


def server_error(message: str, code: str) -> ErrorReply:
    """An HTTP 500 in OpenAI's error shape, saying what went wrong in the fake server."""
    return ErrorReply(500, body={"error": {"message": message, "type": "server_error",
                                           "code": code}})


def response_for(reply: Any, body: Mapping[str, Any], response_id: str,
                 created: int, *, api: str = "chat") -> Response:
    """The response for a prepared reply (a ``Message`` or one of the reply values above),
    in the shape of ``api``: ``"chat"`` (Chat Completions) or ``"responses"``."""
    reply, delay, cut = unwrapped(reply)
    if isinstance(reply, ErrorReply):
        return attrs.evolve(_error_response(reply), delay_s=delay)
    message: Message = reply
    model = str(body.get("model") or "convo-test")
    usage = _usage(body, message)
    if api == "responses":
        return _responses(message, body, response_id, created, usage, delay, cut)
    if body.get("stream"):
        options = body.get("stream_options") or {}
        chunks = chunks_from_message(
            message, model=model, response_id=response_id, created=created,
            usage=usage if options.get("include_usage") else None,
        )
        events = (*(f"data: {json.dumps(c)}\n\n".encode() for c in chunks),
                  b"data: [DONE]\n\n")
        return answered(delay, cut, events=events)
    response = response_from_message(message, model=model, response_id=response_id,
                                      created=created, usage=usage)
    return answered(delay, cut, body=response)


def _responses(message: Message, body: Mapping[str, Any], response_id: str, created: int,
               usage: dict[str, int], delay: float, cut: int | None) -> Response:
    """A Responses API reply: a response, or its typed events (with no ``[DONE]``)."""
    model = str(body.get("model") or "convo-test")
    if body.get("stream"):
        events = responses.events_from_message(message, model=model, response_id=response_id,
                                               created=created, usage=usage)
        sse = tuple(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)
        return answered(delay, cut, events=sse)
    response = responses.response_from_message(message, model=model, response_id=response_id,
                                               created=created, usage=usage)
    return answered(delay, cut, body=response)


def _error_response(reply: ErrorReply) -> Response:
    body = reply.body
    content_type = JSON
    if body is None:
        kind = "server_error" if reply.status >= 500 else "invalid_request_error"
        body = {"error": {"message": f"OpenAIServer: scripted HTTP {reply.status} "
                                     f"{phrase(reply.status)}", "type": kind, "code": None}}
    if isinstance(body, str):
        body = body.encode()
        content_type = "text/plain; charset=utf-8"
    if not isinstance(body, bytes):
        body = json.dumps(body).encode()
    return Response(reply.status, content_type, body, headers=reply.headers)


def phrase(status: int) -> str:
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


def _item_words(item: Mapping[str, Any]) -> int:
    """The words of a chat message, or of a Responses input item of any type."""
    return sum(_words(item.get(key)) for key in ("content", "output", "arguments"))


def _usage(body: Mapping[str, Any], message: Message) -> dict[str, int]:
    given = message.metadata.get("usage")
    if given:
        return dict(given)
    sent = body.get("messages") or body.get("input") or ()
    if isinstance(sent, str):  # a Responses request's input may be one text
        sent = [{"content": sent}]
    prompt = sum(_item_words(m) + 1 for m in sent if isinstance(m, dict))
    completion = _words(message.content) + sum(
        1 + len(c.arguments) for c in message.tool_calls
    )
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}
