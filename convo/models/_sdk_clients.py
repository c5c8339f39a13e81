"""What every model on a vendor's SDK shares: its settings, and the SDK clients it owns.

``SDKModel`` is the base of ``OpenAIModel``, ``AnthropicModel`` and ``GeminiModel``. It holds
the settings they all take (``model``, ``api_key``, ``base_url``, ``stream``,
``temperature``, ``max_tokens``, ``timeout``, ``max_retries``, ``extra``), reads the key and
base URL from the environment as the SDK does, and keeps the clients: a synchronous one made
on first use, and an asynchronous one per event loop (a connection pool belongs to one loop,
and is closed when that loop shuts down). Injected clients are used as they are and never
closed. A provider's room says only how its SDK makes and closes a client, and how it calls;
what a malformed or unfinished reply is said as is written here once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import AsyncGenerator
from types import TracebackType
from typing import Any, ClassVar, Protocol, Self, TypeAlias

from .._errors import ModelError
from .._messages import Message

# A fake or local server at a base URL may need no key, but the SDKs send one.
PLACEHOLDER_API_KEY = "not-needed"

_Stale: TypeAlias = "tuple[AsyncGenerator[None, None] | None, asyncio.AbstractEventLoop | None]"


class Accumulated(Protocol):
    """A provider's stream, read so far: whether its end came, and the reply it makes."""

    @property
    def done(self) -> bool: ...

    def message(self) -> Message: ...


class SDKModel:
    """The settings and client lifecycle of a model on a vendor's SDK (subclassed).

    A subclass sets ``KEY_ENV`` (the key's environment variables, first found wins),
    ``BASE_URL_ENV``, ``DEFAULT_URL``, ``NO_KEY`` (what to say when there is no key nor
    base URL) and ``STREAM_END`` (what ends its stream, for a stream cut short), and makes
    its clients in ``_new_client`` / ``_new_async_client`` from ``_client_options()``.
    """

    KEY_ENV: ClassVar[tuple[str, ...]] = ()
    BASE_URL_ENV: ClassVar[str | None] = None
    DEFAULT_URL: ClassVar[str] = ""
    NO_KEY: ClassVar[str] = "no API key"
    STREAM_END: ClassVar[str] = "its last event"

    def __init__(  # Why longer than 40 lines: one parameter and one line per setting.
        self,
        model: str,
        *,
        api_key: str | None,
        base_url: str | None,
        client: Any,
        async_client: Any,
        stream: bool,
        temperature: float | None,
        max_tokens: int | None,
        timeout: float | None,
        max_retries: int,
        extra: dict[str, Any],
    ) -> None:
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

    # -- what a provider says ----------------------------------------------------------------

    def _new_client(self, options: dict[str, Any]) -> Any:
        raise NotImplementedError

    def _new_async_client(self, options: dict[str, Any]) -> Any:
        raise NotImplementedError

    @staticmethod
    async def _close_async_client(client: Any) -> None:
        await client.close()

    # -- settings ----------------------------------------------------------------------------

    def _env_key(self) -> str | None:
        return next((os.environ[k] for k in self.KEY_ENV if os.environ.get(k)), None)

    def _configured_base_url(self) -> str | None:
        """``base_url=``, else the SDK's environment variable; ``None`` for the default."""
        env = os.environ.get(self.BASE_URL_ENV) if self.BASE_URL_ENV else None
        return self.base_url or env or None

    def _client_options(self) -> dict[str, Any]:
        """``api_key``, ``base_url``, ``max_retries`` and ``timeout`` (when set) for the SDK;
        a placeholder key for a base URL without one."""
        api_key = self.api_key or self._env_key()
        base_url = self._configured_base_url()
        if not api_key:
            if base_url is None:
                raise ModelError(self.NO_KEY)
            api_key = PLACEHOLDER_API_KEY
        options: dict[str, Any] = {"api_key": api_key, "base_url": base_url,
                                   "max_retries": self.max_retries}
        if self.timeout is not None:
            options["timeout"] = self.timeout
        return options

    def _base_url(self) -> str:
        """Where the requests go ("" when only the SDK knows; telemetry reads it too)."""
        client = self._client or self._async_client
        return str(getattr(client, "base_url", "") or self._configured_base_url() or "")

    def _where(self) -> str:
        """The server and model, as error messages name them."""
        return f"{(self._base_url() or self.DEFAULT_URL).rstrip('/')} (model {self.model!r})"

    # -- replies -----------------------------------------------------------------------------

    def _malformed(self, exc: Exception) -> ModelError:
        """A reply its converter could not read (its ``WireError``)."""
        return ModelError(f"malformed reply from {self._where()}: {exc}")

    def _finished(self, stream: Accumulated) -> Message:
        """The reply a stream made; a ``ModelError`` when it ended before ``STREAM_END``."""
        if not stream.done:
            raise ModelError(f"no complete reply: the stream from {self._where()} ended before "
                             f"{self.STREAM_END}. Check the server and the network; try again")
        return stream.message()

    # -- clients -----------------------------------------------------------------------------

    @property
    def client(self) -> Any:
        """The synchronous SDK client, made on first use."""
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = self._new_client(self._client_options())
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
            client = self._new_async_client(self._client_options())
            self._async_client, self._async_loop = client, loop
            keeper = self._async_keeper = self._keep(client)
        _close_elsewhere(stale)
        await keeper.__anext__()
        return client

    async def _keep(self, client: Any) -> AsyncGenerator[None, None]:
        """Holds an async client open until closed, or until its event loop shuts down."""
        try:
            yield
        finally:
            await self._close_async_client(client)

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

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()


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
