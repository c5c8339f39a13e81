"""OpenAIModel: Chat Completions or the Responses API through the official ``openai`` SDK
(``openai>=2,<4``).

(Over 300 lines: the client lifecycle, which is most of it, is shared by both APIs.)

Works with OpenAI and with any OpenAI-compatible server (vLLM, Ollama, llama.cpp, the test
server in ``convo.testing``). The wire formats live in ``wire.py`` and ``wire_responses.py``,
the request arguments in ``request.py``; this module only drives the SDK and turns its
failures into ``ModelError``\\ s that say what to check.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeAlias

import openai

from ...errors import ModelError
from ...messages import Message
from ..base import DeltaCallback, ToolSchemas
from ..deltas import reasoning_callback
from .errors import sdk_error
from .local import ServerWait
from .reading import Deadline, ReplyReader
from .request import APIS, chat_request, passed_as_is, responses_request
from .text_protocol import TOOL_FORMATS, hide_calls, read_reply

# Local servers ignore the key, but the SDK refuses to start without one.
PLACEHOLDER_API_KEY = "not-needed"


class OpenAIModel:
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
        self.model = model
        self.api_key = api_key
        self.base_url = base_url
        self.stream = stream
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.max_retries = max_retries
        self.extra = extra
        self._client = client
        self._async_client = async_client
        self._owns_client = client is None
        self._owns_async_client = async_client is None
        self._async_loop: asyncio.AbstractEventLoop | None = None
        self._async_keeper: AsyncGenerator[None, None] | None = None
        self._lock = threading.Lock()

    # -- clients ---------------------------------------------------------------------------

    def _client_options(self) -> dict[str, Any]:
        api_key = self.api_key or os.environ.get("OPENAI_API_KEY")
        base_url = self.base_url or os.environ.get("OPENAI_BASE_URL") or None
        if not api_key:
            if base_url is None:
                raise ModelError(
                    "OpenAIModel has no API key: set OPENAI_API_KEY or pass api_key=; for a "
                    "local OpenAI-compatible server (vLLM, Ollama) pass base_url= instead"
                )
            api_key = PLACEHOLDER_API_KEY
        options: dict[str, Any] = {"api_key": api_key, "base_url": base_url,
                                   "max_retries": self.max_retries}
        if self.timeout is not None:
            options["timeout"] = self.timeout
        return options

    @property
    def client(self) -> Any:
        """The synchronous SDK client (``openai.OpenAI``), made on first use."""
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = openai.OpenAI(**self._client_options())
        return self._client

    async def _aclient(self) -> Any:
        """The async SDK client for the running event loop, made on first use there.

        An async connection pool belongs to one event loop, so a model used from a new loop
        (a second ``asyncio.run``) makes a new pool there. Each pool is tied to its loop by an
        async generator: the loop closes it when it shuts down (``asyncio.run`` does), so no
        socket outlives its loop.
        """
        if not self._owns_async_client:
            return self._async_client
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._async_client is not None and self._async_loop is loop:
                return self._async_client
            stale = self._detach_async_client()
            client = openai.AsyncOpenAI(**self._client_options())
            self._async_client, self._async_loop = client, loop
            self._async_keeper = _keep(client)
            keeper = self._async_keeper
        _close_elsewhere(stale)
        await keeper.__anext__()
        return client

    def _detach_async_client(self) -> _Stale:
        stale = (self._async_keeper, self._async_loop)
        self._async_client = self._async_loop = self._async_keeper = None
        return stale

    def close(self) -> None:
        """Release the connection pools this model made (not injected clients)."""
        with self._lock:
            if self._owns_client and self._client is not None:
                self._client.close()
                self._client = None
            stale = self._detach_async_client() if self._owns_async_client else (None, None)
        _close_elsewhere(stale)

    async def aclose(self) -> None:
        """Release the connection pools this model made, from async code."""
        with self._lock:
            keeper = None
            if self._owns_async_client and self._async_loop is asyncio.get_running_loop():
                keeper, _ = self._detach_async_client()
        if keeper is not None:
            await keeper.aclose()
        self.close()

    def __enter__(self) -> OpenAIModel:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> OpenAIModel:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

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

    def _base_url(self) -> str:
        base_url = self.base_url or os.environ.get("OPENAI_BASE_URL") or ""
        client = self._client or self._async_client
        return str(getattr(client, "base_url", "") or base_url)

    def _where(self) -> str:
        base_url = self._base_url()
        return f"{base_url.rstrip('/') or 'https://api.openai.com/v1'} (model {self.model!r})"

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


async def _keep(client: Any) -> AsyncGenerator[None, None]:
    """Holds an async client open until closed, or until its event loop shuts down."""
    try:
        yield
    finally:
        await client.close()


_Stale: TypeAlias = "tuple[AsyncGenerator[None, None] | None, asyncio.AbstractEventLoop | None]"


def _close_elsewhere(stale: _Stale) -> None:
    """Close a pool that belongs to another event loop, if that loop can still run it."""
    keeper, loop = stale
    if keeper is None or loop is None or loop.is_closed():
        return  # a closed loop closed its pools when it shut down
    if loop.is_running():
        asyncio.run_coroutine_threadsafe(keeper.aclose(), loop)
        return
    with contextlib.suppress(RuntimeError):  # another loop runs in this thread: leave it
        loop.run_until_complete(keeper.aclose())
