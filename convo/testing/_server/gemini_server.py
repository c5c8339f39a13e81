"""GeminiServer: the Gemini API (``generateContent`` and ``streamGenerateContent``) on
127.0.0.1, for tests.

The real ``google-genai`` SDK talks HTTP to it (``genai.Client(api_key="test",
http_options={"base_url": server.base_url})`` or ``GeminiModel(base_url=server.base_url)``);
it is scripted like ``OpenAIServer``, whose script, handler and HTTP it shares::

    with GeminiServer(["Let me look. {lookup(city='Oslo')}", "Sunny."]) as server:
        model = GeminiModel(base_url=server.base_url, api_key="test")
        ...
        assert "functionResponse" in server.requests[1]["contents"][-1]["parts"][0]

It answers ``POST /{version}/models/{model}:generateContent`` and
``:streamGenerateContent?alt=sse`` (SSE chunks: text in pieces, each call whole, the finish
reason and usage last), with the key in the ``x-goog-api-key`` header or the ``key`` query
parameter (a request with neither gets 401, as the API answers). A ``Message`` reply's
``metadata["reasoning"]`` items (``{"index", "part"}``) are served as parts with their
``thoughtSignature``; a scripted call with an id is sent with it (``functionCall.id``).
``ErrorReply`` is Google's error JSON. Usage is counted (``gemini_wire.usage_of``), or a
``Message`` reply's ``metadata["usage"]`` served.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final
from urllib.parse import parse_qs, unquote

import attrs

from .gemini_wire import (
    chunks_from_message,
    error_body,
    error_response,
    refused,
    response_from_message,
    sse,
    undecodable,
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

_PATH: Final = re.compile(r"/(?P<version>[^/]+)/models/(?P<model>[^/:]+)"
                          r":(?P<method>generateContent|streamGenerateContent)")


class GeminiServer(OpenAIServer):
    """A Gemini API server on 127.0.0.1 (a free port), for tests.

    Scripted as ``OpenAIServer`` is (``replies``, ``handler``, ``.add()``, ``.requests``
    (each body as parsed JSON), ``assert_complete()``, the ``gemini_server`` fixture);
    ``.base_url`` (the origin) goes in ``http_options={"base_url": ...}``; ``.paths`` holds
    each request's path (``/v1beta/models/NAME:generateContent``) and ``.keys`` the API key
    each carried.
    """

    name = "GeminiServer"

    def __init__(self, replies: Iterable[ServerReply] = (), *, handler: Handler | None = None,
                 keep_requests: bool = True, check_complete: bool = True,
                 port: int = 0) -> None:
        self.keys: list[str] = []
        self._response_ids = itertools.count(1)
        super().__init__(replies, handler=handler, keep_requests=keep_requests,
                         check_complete=check_complete, port=port)
        self.base_url = f"http://127.0.0.1:{self.port}"

    def _route(self, method: str, path: str, raw: bytes,
               headers: Mapping[str, str] | None = None) -> Response:
        route, _, query = path.partition("?")
        found = _PATH.fullmatch(unquote(route).rstrip("/"))
        if method != "POST" or found is None:
            return refused(404, f"GeminiServer serves POST /VERSION/models/MODEL:generateContent "
                                f"and :streamGenerateContent, not {method} {path}")
        params = parse_qs(query)
        key = (headers or {}).get("x-goog-api-key") or next(iter(params.get("key", ())), "")
        if not key:
            return refused(401, "GeminiServer: no API key (the x-goog-api-key header or the key "
                                "query parameter)")
        body = json_object(raw)
        if body is None:
            return refused(400, "GeminiServer: the request body is not a JSON object")
        if not body.get("contents"):  # the API's own words for a request with no contents
            return refused(400, "* GenerateContentRequest.contents: contents is not specified\n")
        stream = found["method"] == "streamGenerateContent"
        if stream and params.get("alt") != ["sse"]:
            return refused(400, "GeminiServer streams as SSE only: ask with ?alt=sse, as the "
                                "google-genai SDK does")
        broken = undecodable(body)
        if broken is not None:
            return refused(400, f"GeminiServer: {broken} is not base64")
        if self.keep_requests:
            with self._lock:
                self.keys.append(key)
        try:
            reply = self._next(body, route)
        except Exception as exc:  # a handler's reply that is not a reply
            reply = ErrorReply(500, body=error_body(500, str(exc)))
        return self._answer(reply, body, found["model"], stream)

    def _answer(self, reply: Any, body: dict[str, Any], model: str, stream: bool) -> Response:
        reply, delay, cut = unwrapped(reply)
        if isinstance(reply, ErrorReply):
            return attrs.evolve(error_response(reply), delay_s=delay)
        response_id = f"gemini-{next(self._response_ids):06d}"
        usage = usage_of(reply, body)
        if stream:
            return answered(delay, cut, events=sse(chunks_from_message(
                reply, model=model, response_id=response_id, usage=usage)))
        return answered(delay, cut, body=response_from_message(
            reply, model=model, response_id=response_id, usage=usage))

