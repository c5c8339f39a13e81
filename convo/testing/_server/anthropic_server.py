"""AnthropicServer: the Messages API (``POST /v1/messages``) on 127.0.0.1, for tests.

The real ``anthropic`` SDK talks HTTP to it (``anthropic.Anthropic(base_url=server.base_url)``
or ``AnthropicModel(base_url=server.base_url)``); it is scripted like ``OpenAIServer``, whose
script, handler and HTTP it shares::

    with AnthropicServer(["Let me look. {lookup(city='Oslo')}", "Sunny."]) as server:
        model = AnthropicModel(base_url=server.base_url, api_key="test")
        ...
        assert server.requests[1]["messages"][-1]["content"][0]["type"] == "tool_result"

Replies are Messages API responses, or its SSE events when the request streams (text, tool
input, thinking and its signature in deltas); a ``Message`` reply's ``metadata["reasoning"]``
thinking blocks are served before its text. ``ErrorReply`` is Anthropic's error JSON. The
prompt cache is counted as API.md §23 defines it (``anthropic_wire.PromptCache``); a
``Message`` reply's ``metadata["usage"]`` is served instead when it has one.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from .anthropic_wire import (
    PromptCache,
    error_body,
    error_response,
    events_from_message,
    response_from_message,
    sse,
    usage_of,
)
from .openai_server import Handler, OpenAIServer
from .replies import JSON, CutReply, ErrorReply, Response, ServerReply, SlowReply


class AnthropicServer(OpenAIServer):
    """A Messages API server on 127.0.0.1 (a free port), for tests.

    Scripted as ``OpenAIServer`` is (``replies``, ``handler``, ``.add()``, ``.requests``,
    ``assert_complete()``, the ``anthropic_server`` fixture); ``.base_url`` is the origin,
    without ``/v1``, as the ``anthropic`` SDK takes it.
    """

    name = "AnthropicServer"

    def __init__(self, replies: Iterable[ServerReply] = (), *, handler: Handler | None = None,
                 keep_requests: bool = True, check_complete: bool = True,
                 port: int = 0) -> None:
        self.cache = PromptCache()
        self._message_ids = itertools.count(1)
        super().__init__(replies, handler=handler, keep_requests=keep_requests,
                         check_complete=check_complete, port=port)
        self.base_url = f"http://127.0.0.1:{self.port}"

    def _route(self, method: str, path: str, raw: bytes,
               headers: Mapping[str, str] | None = None) -> Response:
        route = path.split("?", 1)[0].rstrip("/")
        if method != "POST" or not route.endswith("/v1/messages"):
            return _json(404, error_body(404, f"AnthropicServer serves POST /v1/messages, not "
                                              f"{method} {path}"))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return _json(400, error_body(400, "AnthropicServer: the request body is not a "
                                              "JSON object"))
        if not body.get("messages"):  # the API's own words for a request with no message
            return _json(400, error_body(400, "messages: at least one message is required"))
        counted = self.cache.count(body)
        try:
            reply = self._next(body, route)
        except Exception as exc:  # a handler's reply that is not a reply
            reply = ErrorReply(500, body=error_body(500, str(exc)))
        return self._answer(reply, body, counted)

    def _answer(self, reply: Any, body: dict[str, Any], counted: tuple[int, int, int]
                ) -> Response:
        delay, cut = 0.0, None
        if isinstance(reply, SlowReply):
            reply, delay = reply.reply, reply.delay_s
        if isinstance(reply, CutReply):
            reply, cut = reply.reply, reply.after_chunks
        if isinstance(reply, ErrorReply):
            return attrs.evolve(error_response(reply), delay_s=delay)
        model = str(body.get("model") or "claude-test")
        message_id = f"msg_{next(self._message_ids):06d}"
        usage = usage_of(reply, counted)
        if body.get("stream"):
            events = events_from_message(reply, model=model, message_id=message_id,
                                         usage=usage)
            return Response(200, "text/event-stream", events=sse(events), delay_s=delay,
                            cut=cut)
        response = response_from_message(reply, model=model, message_id=message_id,
                                         usage=usage)
        return Response(200, JSON, json.dumps(response).encode(), delay_s=delay, cut=cut)

    def __enter__(self) -> AnthropicServer:
        return self

    def __repr__(self) -> str:
        state = "closed" if self._closed else self.base_url
        return (f"AnthropicServer({state}, {len(self._script)} replies, "
                f"{self._received} requests)")


def _json(status: int, body: Any) -> Response:
    return Response(status, JSON, json.dumps(body).encode())
