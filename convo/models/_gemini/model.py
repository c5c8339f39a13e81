"""GeminiModel: ``generateContent`` through the official ``google-genai`` SDK (API.md §23).

The wire format is ``wire.py``'s; this module drives the SDK (sync and async, plain or
streamed), tries again what is worth it and turns the SDK's failures into ``ModelError``\\ s
(``_errors.py``). Retries are convo's, not the SDK's (whose waits ignore ``Retry-After``): as
the openai and anthropic SDKs do, a 408, 429 or 5xx and a failed connection are tried again up
to ``max_retries`` times, after the server's ``Retry-After`` or a short backoff; a stream is
tried again only while nothing of it has been shown.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final

from google import genai
from google.genai import types

from ..._errors import ModelError
from ..._messages import Message
from .._base import DeltaCallback, ToolSchemas
from .._deltas import hand_on
from .._idle_checks import cheap_idle_checks
from .._sdk_clients import SDKModel
from .errors import FAILURES, retried, retry_after, sdk_error
from .wire import StreamAccumulator, WireError, message_from_response, request, response_json

_LONGEST_WAIT: Final = 60.0  # a longer Retry-After is not waited for
_BACKOFF: Final = 0.5


class GeminiModel(SDKModel):
    """A Gemini model behind ``generateContent``.

    ``api_key`` defaults to ``GEMINI_API_KEY``, then ``GOOGLE_API_KEY``; ``base_url`` goes to
    the SDK's ``http_options`` (a proxy, or ``GeminiServer`` in tests; a placeholder key is
    sent when there is none). ``client`` injects a ``google.genai.Client`` of your own (its
    ``.aio`` serves async calls); otherwise clients are made on first use and kept
    (``close()`` / ``aclose()`` or ``with`` releases them). ``stream=True`` streams: text
    reaches ``on_delta`` as it arrives, thought summaries its ``reasoning`` callback (the
    runner's ``ReasoningDelta``). ``thinking`` (``{"include_thoughts": True,
    "thinking_budget": N}`` or ``{"thinking_level": "low"}``) is sent as the
    ``thinking_config``; the reply's parts with thought signatures are kept in
    ``metadata["reasoning"]`` and sent back in place. ``temperature``, ``max_tokens`` (as
    ``max_output_tokens``) and any ``extra`` keyword arguments go into the request's
    ``config``; ``timeout`` (seconds) bounds each HTTP request and ``max_retries`` the tries
    again.
    """

    KEY_ENV = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    DEFAULT_URL = "https://generativelanguage.googleapis.com"
    NO_KEY = ("GeminiModel has no API key: set GEMINI_API_KEY (or GOOGLE_API_KEY) or pass "
              "api_key= (or base_url= for a proxy that needs none)")
    STREAM_END = "a chunk said how the reply finished (finishReason)"

    def __init__(  # Why longer than 40 lines: one parameter and one line per setting.
        self,
        model: str = "gemini-2.5-flash",
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: Any = None,
        stream: bool = False,
        temperature: float | None = None,
        max_tokens: int | None = None,
        thinking: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        max_retries: int = 2,
        **extra: Any,
    ) -> None:
        super().__init__(model, api_key=api_key, base_url=base_url, client=client,
                         async_client=None if client is None else client.aio, stream=stream,
                         temperature=temperature, max_tokens=max_tokens, timeout=timeout,
                         max_retries=max_retries, extra=extra)
        self.thinking = thinking
        unknown = sorted(set(extra) - set(types.GenerateContentConfig.model_fields))
        if unknown:
            raise TypeError(f"GeminiModel: {', '.join(unknown)} is not a setting of the "
                            "request's config (google.genai.types.GenerateContentConfig): "
                            "pass its fields, such as top_k= or stop_sequences=")

    # -- clients -----------------------------------------------------------------------------

    def _new_client(self, options: dict[str, Any]) -> Any:
        http = types.HttpOptions(base_url=options["base_url"],
                                 timeout=(None if self.timeout is None
                                          else max(1, round(self.timeout * 1000))))
        return genai.Client(api_key=options["api_key"], http_options=http)

    def _new_async_client(self, options: dict[str, Any]) -> Any:
        client = self._new_client(options).aio
        cheap_idle_checks(_loop_pool(client))
        return client

    @staticmethod
    async def _close_async_client(client: Any) -> None:
        await client.aclose()

    # -- calls -------------------------------------------------------------------------------

    def request(self, messages: Sequence[Message], tools: ToolSchemas = ()) -> dict[str, Any]:
        """The keyword arguments for ``models.generate_content``."""
        contents, config = request(messages, tools)
        if self.temperature is not None:
            config["temperature"] = self.temperature
        if self.max_tokens is not None:
            config["max_output_tokens"] = self.max_tokens
        if self.thinking is not None:
            config["thinking_config"] = dict(self.thinking)
        return {"model": self.model, "contents": contents, "config": config | self.extra}

    def complete(self, messages: Sequence[Message], tools: ToolSchemas = (), *,
                 on_delta: DeltaCallback | None = None) -> Message:
        kwargs = self.request(messages, tools)
        models = self.client.models
        for attempt in range(self.max_retries + 1):
            stream = StreamAccumulator()
            try:
                if not self.stream:
                    return message_from_response(_body(models.generate_content(
                        **_unparsed(kwargs))))
                for chunk in models.generate_content_stream(**kwargs):
                    hand_on(stream.add(chunk), on_delta)
                return self._finished(stream)
            except FAILURES as exc:
                delay = self._retry(exc, attempt, stream)
                if delay is None:
                    raise self._error(exc) from exc
            except WireError as exc:
                raise self._malformed(exc) from exc
            time.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    async def acomplete(self, messages: Sequence[Message], tools: ToolSchemas = (), *,
                        on_delta: DeltaCallback | None = None) -> Message:
        kwargs = self.request(messages, tools)
        models = (await self._aclient()).models
        for attempt in range(self.max_retries + 1):
            stream = StreamAccumulator()
            try:
                if not self.stream:
                    return message_from_response(_body(await models.generate_content(
                        **_unparsed(kwargs))))
                async for chunk in await models.generate_content_stream(**kwargs):
                    hand_on(stream.add(chunk), on_delta)
                return self._finished(stream)
            except FAILURES as exc:
                delay = self._retry(exc, attempt, stream)
                if delay is None:
                    raise self._error(exc) from exc
            except WireError as exc:
                raise self._malformed(exc) from exc
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def _retry(self, exc: BaseException, attempt: int, stream: StreamAccumulator
               ) -> float | None:
        """How long to wait before trying again; ``None``: not again."""
        if attempt >= self.max_retries or stream.chunks or not retried(exc):
            return None
        said = retry_after(exc)
        if said is not None and said <= _LONGEST_WAIT:
            return float(said)
        return min(_BACKOFF * 2.0 ** attempt, 8.0) * (1 - 0.25 * random.random())

    # -- failures ----------------------------------------------------------------------------

    def _configured_base_url(self) -> str | None:
        return self.base_url or None

    def _error(self, exc: BaseException) -> ModelError:
        return sdk_error(exc, self._where(), model=self.model, timeout=self.timeout,
                         max_retries=self.max_retries)

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        return f"GeminiModel({self.model!r}{where}, stream={self.stream})"


# An unstreamed reply is read from its body: the SDK would build its objects of it, which
# ``wire`` dumps back to JSON (a fifth of a call's CPU). ``should_return_http_response`` asks
# the SDK for the body instead. The config stays a dict: the SDK builds its config object of
# a dict once, but deep-copies one it is given (its tools' schemas and all).
def _unparsed(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {**kwargs, "config": {**kwargs["config"], "should_return_http_response": True}}


def _body(response: Any) -> Any:
    """The reply's REST JSON from its body; a client that gave no body (one of the user's
    own, say) gives its response object, read as before."""
    http = getattr(response, "sdk_http_response", None)
    body = getattr(http, "body", None)
    if not isinstance(body, str) or getattr(response, "candidates", None) is not None:
        return response
    return response_json(body)


def _loop_pool(client: Any) -> Any:
    """The httpx client whose pool ``client`` (a ``genai`` async client) sends through on the
    running event loop (``_idle_checks``), or ``None``.

    The SDK's async httpx client keeps one inner client per event loop and sends through it,
    never through its own pool; ``_aclient`` makes a client on the loop it serves, so the
    inner one is made here, as the first request would make it.
    """
    http = getattr(getattr(client, "_api_client", None), "_async_httpx_client", None)
    for_loop = getattr(http, "_client_for_running_loop", None)
    if getattr(http, "_per_loop", False) and callable(for_loop):
        return for_loop()
    return http
