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
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from .anthropic_wire import (
    PromptCache,
    error_body,
    error_response,
    events_from_message,
    refused,
    response_from_message,
    sse,
    usage_of,
)
from .openai_server import Handler, OpenAIServer
from .replies import (
    ErrorReply,
    Response,
    ServerReply,
    answered,
    json_object,
    unwrapped,
)


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
            return refused(404, f"AnthropicServer serves POST /v1/messages, not {method} {path}")
        body = json_object(raw)
        if body is None:
            return refused(400, "AnthropicServer: the request body is not a JSON object")
        if not body.get("messages"):  # the API's own words for a request with no message
            return refused(400, "messages: at least one message is required")
        counted = self.cache.count(body)
        try:
            reply = self._next(body, route)
        except Exception as exc:  # a handler's reply that is not a reply
            reply = ErrorReply(500, body=error_body(500, str(exc)))
        return self._answer(reply, body, counted)

    def _answer(self, reply: Any, body: dict[str, Any], counted: tuple[int, int, int]
                ) -> Response:
        reply, delay, cut = unwrapped(reply)
        if isinstance(reply, ErrorReply):
            return attrs.evolve(error_response(reply), delay_s=delay)
        model = str(body.get("model") or "claude-test")
        message_id = f"msg_{next(self._message_ids):06d}"
        usage = usage_of(reply, counted)
        if body.get("stream"):
            return answered(delay, cut, events=sse(events_from_message(
                reply, model=model, message_id=message_id, usage=usage)))
        return answered(delay, cut, body=response_from_message(
            reply, model=model, message_id=message_id, usage=usage))

