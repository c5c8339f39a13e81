"""OpenAIModel: Chat Completions or the Responses API through the official ``openai`` SDK
(``openai>=2,<4``).

(Over 300 lines: both APIs, each called sync and async, streamed and not; the client
lifecycle is the shared ``SDKModel``'s, in ``../sdk_clients.py``.)

Works with OpenAI and with any OpenAI-compatible server (vLLM, Ollama, llama.cpp, the test
server in ``convo.testing``). The wire formats live in ``wire.py`` and ``wire_responses.py``,
the request arguments in ``request.py``; this module only drives the SDK and turns its
failures into ``ModelError``\\ s that say what to check.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from typing import Any

import openai

from ..._errors import ModelError
from ..._messages import Message
from .._base import DeltaCallback, ToolSchemas
from .._deltas import reasoning_callback
from .._sdk_clients import SDKModel
from .errors import sdk_error
from .local import ServerWait
from .reading import Deadline, ReplyReader
from .request import APIS, chat_request, passed_as_is, responses_request
from .text_protocol import TOOL_FORMATS, hide_calls, read_reply


class OpenAIModel(SDKModel):
    """A chat model behind the Chat Completions API (``api="chat"``) or the Responses API
    (``api="responses"``, API.md §15).

    ``api_key`` and ``base_url`` default to ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL``, as in
    the SDK; with a base URL but no key (a local server) a placeholder key is sent. The SDK
    clients are made on first use and kept, one connection pool per model (``close()`` /
    ``aclose()`` or ``with`` releases them); ``client`` / ``async_client`` inject your own.
    ``stream=True`` streams: text deltas reach the runner as they arrive. ``timeout`` (seconds)
    and ``max_retries`` configure the SDK; ``temperature``, ``max_tokens`` and any ``extra``
    keyword arguments are passed to ``chat.completions.create``.

    Tools (API.md §12): ``tool_format="native"`` sends them natively, with ``tool_choice``
    (default ``"auto"``; ``None`` leaves it out), and reads a reply whose whole text is a
    call of an offered tool as that call (``recover_tool_calls=False`` turns it off);
    ``tool_format="text"`` describes them in the system message and reads ``<tool_call>``
    blocks from the text, for models and servers without native tools. ``start_wait``:
    seconds to wait for a server that refuses connections (default 30 for a local base URL,
    0 otherwise).

    The Responses API (``api="responses"``): every message goes into ``input`` in order;
    ``store`` (default ``False``: stateless) is sent as is; ``reasoning`` (such as
    ``{"effort": "low", "summary": "auto"}``) is sent as ``reasoning``, with the reasoning
    items asked for encrypted while ``store`` is false. A reply's reasoning items are kept in
    its ``metadata["reasoning"]`` and sent back, in place, in every later request, so a
    resumed or rebuilt conversation keeps its reasoning; streamed reasoning summaries go to
    an ``on_delta`` that has a ``reasoning`` callback (``Deltas``). ``max_tokens`` is sent as
    ``max_output_tokens``.
    """

    KEY_ENV = ("OPENAI_API_KEY",)
    BASE_URL_ENV = "OPENAI_BASE_URL"
    DEFAULT_URL = "https://api.openai.com/v1"
    NO_KEY = ("OpenAIModel has no API key: set OPENAI_API_KEY or pass api_key=; for a local "
              "OpenAI-compatible server (vLLM, Ollama) pass base_url= instead")

    def __init__(  # Why longer than 40 lines: one parameter and one check per setting.
        self,
        model: str = "gpt-4o-mini",
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: Any = None,
        async_client: Any = None,
        stream: bool = False,
        temperature: float | None = None,
        max_tokens: int | None = None,
        timeout: float | None = None,
        max_retries: int = 2,
        tool_format: str = "native",
        tool_choice: Any = "auto",
        recover_tool_calls: bool = True,
        start_wait: float | None = None,
        api: str = "chat",
        store: bool = False,
        reasoning: Mapping[str, Any] | None = None,
        **extra: Any,
    ) -> None:
        # Why longer than 40 lines: every option of both APIs is checked where it is given, once.
        if tool_format not in TOOL_FORMATS:
            raise ValueError(f"OpenAIModel: tool_format must be 'native' or 'text', "
                             f"got {tool_format!r}")
        if api not in APIS:
            raise ValueError(f"OpenAIModel: api must be 'chat' (Chat Completions) or "
                             f"'responses' (the Responses API), got {api!r}")
        if api == "chat" and (store or reasoning is not None):
            raise ValueError("OpenAIModel: store= and reasoning= are Responses API settings: "
                             "pass api='responses' with them")
        self.api = api
        self.store = store
        self.reasoning = reasoning
        self.tool_format = tool_format
        self.tool_choice = tool_choice
        self.recover_tool_calls = recover_tool_calls
        self.start_wait = start_wait
        super().__init__(model, api_key=api_key, base_url=base_url, client=client,
                         async_client=async_client, stream=stream, temperature=temperature,
                         max_tokens=max_tokens, timeout=timeout, max_retries=max_retries,
                         extra=extra)

    # -- clients ---------------------------------------------------------------------------

    def _new_client(self, options: dict[str, Any]) -> Any:
        return openai.OpenAI(**options)

    def _new_async_client(self, options: dict[str, Any]) -> Any:
        return openai.AsyncOpenAI(**options)

    # -- calls -----------------------------------------------------------------------------

    def request(self, messages: Sequence[Message], tools: ToolSchemas = ()) -> dict[str, Any]:
        """The keyword arguments for ``chat.completions.create`` (or ``responses.create``)."""
        if self.api == "responses":
            return responses_request(self, messages, tools)
        return chat_request(self, messages, tools)

    def _endpoint(self, client: Any) -> Any:
        return client.responses if self.api == "responses" else client.chat.completions

    def _kwargs(self, messages: Sequence[Message], tools: ToolSchemas, completions: Any
                ) -> dict[str, Any]:
        """``request``'s arguments as they are passed to ``completions.create``."""
        return passed_as_is(self.request(messages, tools), completions)

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        api = ", api='responses'" if self.api == "responses" else ""
        return f"OpenAIModel({self.model!r}{where}{api}, stream={self.stream})"

    def complete(
        self, messages: Sequence[Message], tools: ToolSchemas = (), *,
        on_delta: DeltaCallback | None = None,
    ) -> Message:
        wait = ServerWait(self._base_url(), self._where(), self.start_wait)
        shown, flush = self._deltas(on_delta, tools)
        while True:
            try:
                reply = self._complete_once(messages, tools, shown,
                                            reasoning_callback(on_delta))
                break
            except ModelError as exc:
                delay = _retry_after(wait, exc)
                if delay is None:
                    raise
                time.sleep(delay)
        flush()
        return self._read(reply, tools)

    async def acomplete(
        self, messages: Sequence[Message], tools: ToolSchemas = (), *,
        on_delta: DeltaCallback | None = None,
    ) -> Message:
        wait = ServerWait(self._base_url(), self._where(), self.start_wait)
        shown, flush = self._deltas(on_delta, tools)
        while True:
            try:
                reply = await self._acomplete_once(messages, tools, shown,
                                                   reasoning_callback(on_delta))
                break
            except ModelError as exc:
                delay = _retry_after(wait, exc)
                if delay is None:
                    raise
                await asyncio.sleep(delay)
        flush()
        return self._read(reply, tools)

    def _deltas(self, on_delta: DeltaCallback | None, tools: ToolSchemas
                ) -> tuple[DeltaCallback | None, Any]:
        """Streamed text as shown: text-format calls are held back."""
        if tools and self.tool_format == "text":
            return hide_calls(on_delta)
        return on_delta, _nothing

    def _read(self, message: Message, tools: ToolSchemas) -> Message:
        return read_reply(message, tools, tool_format=self.tool_format,
                          recover=self.recover_tool_calls)

    def _reader(self, kwargs: dict[str, Any], deadline: Deadline,
                on_reasoning: DeltaCallback | None) -> ReplyReader:
        return ReplyReader(self._where(), stream=bool(kwargs.get("stream")), deadline=deadline,
                           api=self.api, on_reasoning=on_reasoning)

    def _complete_once(self, messages: Sequence[Message], tools: ToolSchemas,
                       on_delta: DeltaCallback | None,
                       on_reasoning: DeltaCallback | None) -> Message:
        completions = self._endpoint(self.client)
        kwargs = self._kwargs(messages, tools, completions)
        reader = self._reader(kwargs, Deadline(self.timeout), on_reasoning)
        streaming = getattr(completions, "with_streaming_response", None)
        try:
            if streaming is None:  # an injected client without raw responses
                return self._complete_parsed(completions, kwargs, reader, on_delta)
            with streaming.create(**kwargs) as response:
                pieces = response.http_response.iter_bytes()
                while not reader.done:
                    try:
                        piece = next(pieces)
                    except StopIteration:
                        break
                    except Exception as exc:
                        raise reader.broke(exc) from exc
                    for text in reader.feed(piece):
                        if on_delta is not None:
                            on_delta(text)
        except openai.OpenAIError as exc:
            raise self._error(exc) from exc
        return reader.finish()

    async def _acomplete_once(self, messages: Sequence[Message], tools: ToolSchemas,
                              on_delta: DeltaCallback | None,
                              on_reasoning: DeltaCallback | None) -> Message:
        deadline = Deadline(self.timeout)
        completions = self._endpoint(await self._aclient())
        kwargs = self._kwargs(messages, tools, completions)
        reader = self._reader(kwargs, deadline, on_reasoning)
        streaming = getattr(completions, "with_streaming_response", None)
        try:
            if streaming is None:  # an injected client without raw responses
                return await self._acomplete_parsed(completions, kwargs, reader, on_delta)
            async with streaming.create(**kwargs) as response:
                pieces = response.http_response.aiter_bytes()
                try:
                    async with asyncio.timeout(deadline.remaining()):
                        while not reader.done:
                            try:
                                piece = await anext(pieces)
                            except StopAsyncIteration:
                                break
                            except Exception as exc:
                                raise reader.broke(exc) from exc
                            for text in reader.feed(piece):
                                if on_delta is not None:
                                    on_delta(text)
                except TimeoutError as exc:
                    raise reader.timed_out() from exc
        except openai.OpenAIError as exc:
            raise self._error(exc) from exc
        return reader.finish()

    def _complete_parsed(self, completions: Any, kwargs: dict[str, Any], reader: ReplyReader,
                         on_delta: DeltaCallback | None) -> Message:
        response = completions.create(**kwargs)
        if not reader.stream:
            return reader.parsed(response)
        try:
            for chunk in response:
                text = reader.chunk(chunk)
                if text and on_delta is not None:
                    on_delta(text)
        finally:
            response.close()
        return reader.finish()

    async def _acomplete_parsed(self, completions: Any, kwargs: dict[str, Any],
                                reader: ReplyReader, on_delta: DeltaCallback | None
                                ) -> Message:
        response = await completions.create(**kwargs)
        if not reader.stream:
            return reader.parsed(response)
        try:
            async for chunk in response:
                text = reader.chunk(chunk)
                if text and on_delta is not None:
                    on_delta(text)
        finally:
            await response.close()
        return reader.finish()

    # -- replies and failures ----------------------------------------------------------------

    def _error(self, exc: openai.OpenAIError) -> ModelError:
        """A ModelError that names the server's status and what to check."""
        error = sdk_error(exc, self._where(), model=self.model, timeout=self.timeout,
                          max_retries=self.max_retries)
        if self.api == "responses" and getattr(exc, "status_code", None) in (404, 405):
            return type(error)(f"{error}. Or the server does not serve the Responses API "
                               "(POST /v1/responses): use api='chat' (--api chat) with it")
        return error


def _nothing() -> None:
    pass


def _retry_after(wait: ServerWait, error: ModelError) -> float | None:
    """How long to wait before trying a local server that refused to connect again."""
    cause = error.__cause__
    return wait.retry_after(cause) if isinstance(cause, openai.APIConnectionError) else None

