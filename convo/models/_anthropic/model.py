"""AnthropicModel: the Messages API through the official ``anthropic`` SDK (API.md §23).

The wire format is ``wire.py``'s; this module drives the SDK (sync and async clients, plain
or streamed) and turns its failures into ``ModelError``\\ s (``_errors.py``). Retries are the
SDK's: ``max_retries`` covers a 429 (waiting its ``retry-after``), a 529 overloaded and other
5xx alike.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from types import FunctionType
from typing import Any, Final

import anthropic
import httpx2

from ..._errors import ModelError
from ..._messages import Message
from .._base import DeltaCallback, ToolSchemas
from .._deltas import hand_on
from .._idle_checks import cheap_idle_checks
from .._sdk_clients import SDKModel
from .errors import sdk_error
from .wire import (
    StreamAccumulator,
    WireError,
    message_from_response,
    request_body,
    response_json,
)

_STREAMING_REQUIRED: Final = "Streaming is required"
# ``messages.create`` arguments that are the SDK's request options, not the body's.
_REQUEST_OPTIONS: Final = frozenset({"extra_headers", "extra_query", "extra_body", "timeout"})
# The SDK's lowest ``max_tokens`` for a model it sends unstreamed (its per-model table); above
# it, ``messages.create`` decides whether the call must stream.
_PLAIN_MAX_TOKENS: Final = 8192


class AnthropicModel(SDKModel):
    """A Claude model behind the Messages API.

    ``api_key`` and ``base_url`` default to ``ANTHROPIC_API_KEY`` and ``ANTHROPIC_BASE_URL``,
    as in the SDK (``base_url`` is the origin, without ``/v1``). ``client`` /
    ``async_client`` inject SDK clients of your own; otherwise they are made on first use and
    kept (``close()`` / ``aclose()`` or ``with`` releases them). ``stream=True`` streams:
    text reaches ``on_delta`` as it arrives, thinking its ``reasoning`` callback (the
    runner's ``ReasoningDelta``). ``thinking`` (``{"type": "enabled", "budget_tokens": N}``)
    is sent as is; the reply's thinking blocks are kept in ``metadata["reasoning"]`` and sent
    back in place. ``cache=True`` marks the last tool, system block and block for prompt
    caching. ``temperature``, ``max_tokens`` and any ``extra`` keyword arguments go to
    ``messages.create``; ``timeout`` (seconds) and ``max_retries`` configure the SDK.
    """

    KEY_ENV = ("ANTHROPIC_API_KEY",)
    BASE_URL_ENV = "ANTHROPIC_BASE_URL"
    DEFAULT_URL = "https://api.anthropic.com"
    NO_KEY = ("AnthropicModel has no API key: set ANTHROPIC_API_KEY or pass api_key= (or "
              "base_url= for a proxy that needs none)")
    STREAM_END = "its message_stop event"

    def __init__(  # Why longer than 40 lines: one parameter and one line per setting.
        self,
        model: str = "claude-sonnet-4-5",
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: Any = None,
        async_client: Any = None,
        stream: bool = False,
        temperature: float | None = None,
        max_tokens: int = 4096,
        timeout: float | None = None,
        max_retries: int = 2,
        thinking: Mapping[str, Any] | None = None,
        cache: bool = True,
        **extra: Any,
    ) -> None:
        super().__init__(model, api_key=api_key, base_url=base_url, client=client,
                         async_client=async_client, stream=stream, temperature=temperature,
                         max_tokens=max_tokens, timeout=timeout, max_retries=max_retries,
                         extra=extra)
        self.max_tokens: int = max_tokens
        self.thinking = thinking
        self.cache = cache

    def _new_client(self, options: dict[str, Any]) -> Any:
        return anthropic.Anthropic(**options)

    def _new_async_client(self, options: dict[str, Any]) -> Any:
        client = anthropic.AsyncAnthropic(**options)
        cheap_idle_checks(getattr(client, "_client", None))  # its httpx client (_idle_checks)
        return client

    # -- calls -------------------------------------------------------------------------------

    def request(self, messages: Sequence[Message], tools: ToolSchemas = ()) -> dict[str, Any]:
        """The keyword arguments for ``messages.create``."""
        body = request_body(messages, tools, model=self.model, max_tokens=self.max_tokens,
                            cache=self.cache)
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.thinking is not None:
            body["thinking"] = dict(self.thinking)
        return body | self.extra

    def complete(self, messages: Sequence[Message], tools: ToolSchemas = (), *,
                 on_delta: DeltaCallback | None = None) -> Message:
        kwargs = self.request(messages, tools)
        client = self.client
        messages_api = client.messages
        try:
            if not self.stream:
                try:
                    if self._posts_directly(messages_api, kwargs, self._owns_client):
                        return message_from_response(response_json(client.post(
                            "/v1/messages", body=kwargs, cast_to=httpx2.Response).content))
                    return message_from_response(_read(messages_api, kwargs))
                except ValueError as exc:  # a large max_tokens: the SDK wants a stream
                    if _STREAMING_REQUIRED not in str(exc):
                        raise
                    on_delta = None
            stream = StreamAccumulator()
            with messages_api.create(**kwargs, stream=True) as events:
                for event in events:
                    hand_on(stream.add(event), on_delta)
        except anthropic.AnthropicError as exc:
            raise self._error(exc) from exc
        except WireError as exc:
            raise self._malformed(exc) from exc
        return self._finished(stream)

    async def acomplete(self, messages: Sequence[Message], tools: ToolSchemas = (), *,
                        on_delta: DeltaCallback | None = None) -> Message:
        kwargs = self.request(messages, tools)
        client = await self._aclient()
        messages_api = client.messages
        try:
            if not self.stream:
                try:
                    if self._posts_directly(messages_api, kwargs, self._owns_async_client):
                        response = await client.post("/v1/messages", body=kwargs,
                                                     cast_to=httpx2.Response)
                        return message_from_response(response_json(response.content))
                    return message_from_response(await _aread(messages_api, kwargs))
                except ValueError as exc:
                    if _STREAMING_REQUIRED not in str(exc):
                        raise
                    on_delta = None
            stream = StreamAccumulator()
            async with await messages_api.create(**kwargs, stream=True) as events:
                async for event in events:
                    hand_on(stream.add(event), on_delta)
        except anthropic.AnthropicError as exc:
            raise self._error(exc) from exc
        except WireError as exc:
            raise self._malformed(exc) from exc
        return self._finished(stream)

    def _posts_directly(self, messages_api: Any, kwargs: Mapping[str, Any], owned: bool
                        ) -> bool:
        """Whether an unstreamed call may go through the client's ``post`` with the body as
        it is, rather than ``messages.create``: the same request, the same retries, headers
        and errors, without what ``create`` adds around it (its options, the response wrapper,
        a span that records nothing) — about a fifth of a call's CPU here.

        Only on a client convo made (an injected one may be wrapped or traced), whose
        ``create`` is the SDK's own, with no request option among the arguments, no thinking
        (``create`` warns of deprecated thinking settings), a ``max_tokens`` the SDK sends
        unstreamed for every model, and no OpenTelemetry tracer provider set up (then
        ``create``'s span records, and it is kept).
        """
        create = getattr(type(messages_api), "create", None)
        return (owned and isinstance(create, FunctionType)
                and type(messages_api).__module__.startswith("anthropic.")
                and "create" not in vars(messages_api)
                and kwargs["max_tokens"] <= _PLAIN_MAX_TOKENS and "thinking" not in kwargs
                and _REQUEST_OPTIONS.isdisjoint(kwargs) and not _traced())

    # -- failures ----------------------------------------------------------------------------

    def _error(self, exc: anthropic.AnthropicError) -> ModelError:
        return sdk_error(exc, self._where(), model=self.model, timeout=self.timeout,
                         max_retries=self.max_retries)

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        return f"AnthropicModel({self.model!r}{where}, stream={self.stream})"


def _traced() -> bool:
    """Whether an OpenTelemetry tracer provider is set up (the SDK's spans would record)."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return False
    provider = trace.get_tracer_provider()
    return not isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)


def _read(messages_api: Any, kwargs: dict[str, Any]) -> Any:
    """A reply's JSON as sent, read from the body: the SDK would build its objects of it,
    which ``wire`` dumps back to JSON (a tenth of a call's CPU). An injected client without
    raw responses gives its objects."""
    raw = getattr(messages_api, "with_raw_response", None)
    if raw is None:
        return messages_api.create(**kwargs)
    return response_json(raw.create(**kwargs).http_response.content)


async def _aread(messages_api: Any, kwargs: dict[str, Any]) -> Any:
    raw = getattr(messages_api, "with_raw_response", None)
    if raw is None:
        return await messages_api.create(**kwargs)
    return response_json((await raw.create(**kwargs)).http_response.content)
