"""One open MCP session, owned by a task on its server's home loop (``home.py``); the ``mcp``
SDK is imported here, when a connection first opens.

The SDK's transports and ``ClientSession`` are anyio context managers: they must be entered
and left by one task. So a connection is an *owner task* that enters them, says "ready", and
waits to be told to close; calls from other tasks on the same loop use the session meanwhile.
Every wait is bounded by the caller (``asyncio.wait_for``); nothing here blocks a thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Callable, Mapping
from typing import IO, Any, Final, TextIO, cast

import attrs

from ..._errors import MCPServerError

#: How long closing may take before the owner task is cancelled (the SDK's own stdio shutdown
#: waits up to ~4.5 s for a server that ignores its closed stdin and SIGTERM).
CLOSE_TIMEOUT: Final = 6.0
#: The key of a call's id in a ``tools/call`` request's ``_meta`` (a prefix of convo's own, as
#: MCP's ``_meta`` key rules ask; the name as ``ToolContext.call_id``).
CALL_ID_META: Final = "convo/call_id"
#: How much of the server's stderr an error message quotes.
STDERR_TAIL: Final = 400
#: ``MCPServer(max_result_bytes=...)``'s default: the most an answer over Streamable HTTP (a
#: JSON body, or one event of a stream) may hold. Room for a few megabytes of image in a result.
MAX_RESULT_BYTES: Final = 4 * 1024 * 1024
#: Words of the error an answer over that limit gives (``capped.py``'s, and the SDK's own for
#: an event of a stream): the SDK passes the text on, and ``MCPServer`` recognises it.
OVER_LIMIT: Final = "byte limit"


@attrs.frozen(slots=True)
class Endpoint:
    """How to reach a server: a command (stdio) or a URL (Streamable HTTP)."""

    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] | None = None

    def fallback_name(self) -> str:
        """The command's file name, or the URL's host."""
        if self.url is not None:
            from urllib.parse import urlsplit

            return urlsplit(self.url).hostname or self.url
        import os.path

        return os.path.basename(self.command or "") or "mcp"


#: Connections being closed in the background (on any loop); a loop's are waited for when a
#: server closes there and at exit, so that no server process outlives the program.
_closing: set[asyncio.Task[None]] = set()


def close_later(connection: Connection) -> None:
    """Close ``connection`` without making the caller wait (on the connection's loop)."""
    keep(asyncio.get_running_loop().create_task(connection.close()))


def keep(task: asyncio.Task[None]) -> None:
    """Hold a closing task until it is done (the loop keeps only a weak reference)."""
    _closing.add(task)
    task.add_done_callback(_closing.discard)


async def finish_closing() -> None:
    """Wait for the background closes on this loop (each bounded by ``CLOSE_TIMEOUT``)."""
    loop, this = asyncio.get_running_loop(), asyncio.current_task()
    here = {task for task in _closing if task.get_loop() is loop and task is not this}
    if here:
        await asyncio.wait(here, timeout=CLOSE_TIMEOUT + 1)


def _import_mcp() -> Any:
    try:
        import mcp
    except ImportError as exc:
        raise MCPServerError(
            "MCPServer needs the MCP SDK, which is not installed: "
            'pip install -e ".[mcp]" in convo\'s checkout') from exc
    import logging

    # The SDK logs a lost session as a warning; without a handler Python would print it on
    # stderr, across a terminal chat. convo reports failures in the calls' results instead.
    logging.getLogger("mcp").addHandler(logging.NullHandler())
    return mcp


def cause(exc: BaseException) -> str:
    """What went wrong, in one line: the first real error inside exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError) and exc.filename:
        return f"the command {exc.filename!r} was not found"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Connection:
    """An open session to one server (see the module docstring)."""

    def __init__(self, endpoint: Endpoint, on_list_changed: Callable[[], None], *,
                 max_result_bytes: int = MAX_RESULT_BYTES) -> None:
        self.endpoint = endpoint
        self.max_result_bytes = max_result_bytes
        self.session: Any = None
        self.reported_name: str | None = None
        self.broken: str | None = None  # why the session ended, once it has
        self._on_list_changed = on_list_changed
        self._closing = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stderr: IO[str] | None = (tempfile.TemporaryFile("w+", encoding="utf-8")
                                        if endpoint.url is None else None)

    async def open(self, timeout: float, label: str) -> None:
        """Start the server (or reach it) and initialize, within ``timeout``."""
        _import_mcp()
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._own(ready), name=f"MCP server {label}")
        http = self.endpoint.url is not None
        try:
            await asyncio.wait_for(asyncio.shield(ready), timeout)
        except TimeoutError:
            late = "did not answer" if http else "did not start"
            raise self._failed(f"MCP server {label!r} {late} within {timeout:g} s") from None
        except Exception as exc:
            failed = "could not be reached" if http else "could not start"
            raise self._failed(f"MCP server {label!r} {failed}: {cause(exc)}") from exc

    def _failed(self, message: str) -> MCPServerError:
        """The error of a failed start; the half-started server is stopped meanwhile, not on
        the caller's time."""
        error = MCPServerError(f"{message}{self.stderr_tail()}")
        close_later(self)
        return error

    async def _own(self, ready: asyncio.Future[None]) -> None:
        from mcp import ClientSession

        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(await self._transport(stack))
                session = await stack.enter_async_context(
                    ClientSession(read, write, message_handler=self._on_message))
                result = await session.initialize()
                info = getattr(result, "server_info", None)
                self.reported_name = getattr(info, "name", None) or None
                self.session = session
                ready.set_result(None)
                await self._closing.wait()
        except asyncio.CancelledError:  # close() gave up waiting, or the loop's teardown
            self._close_stderr()
            raise
        except Exception as exc:
            self.broken = cause(exc)
            if not ready.done():
                ready.set_exception(exc)
        finally:
            self.session = None
            self.broken = self.broken or "the connection was closed"

    async def _transport(self, stack: contextlib.AsyncExitStack) -> Any:
        e = self.endpoint
        if e.url is None:
            from mcp.client.stdio import (
                StdioServerParameters,
                get_default_environment,
                stdio_client,
            )

            from .guard import guarded

            assert e.command is not None and self._stderr is not None
            command, args = guarded(e.command, e.args, get_default_environment() | dict(
                e.env or {}))  # the server must not outlive this process (guard.py)
            params = StdioServerParameters(command=command, args=args,
                                           env=dict(e.env) if e.env else None, cwd=e.cwd)
            return stdio_client(params, errlog=cast(TextIO, self._stderr))
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        from .capped import Capped

        # Each MCP request is bounded by the caller; the long read timeout only keeps the
        # server's event stream open between requests. An answer is read whole into memory
        # (the SDK's ``aread``), so its size is bounded too: a JSON body by the hook, which
        # wraps the body before anything of it is read (whatever the transport or proxy), an
        # event of a stream by the SDK. Bodies come uncompressed unless the caller's headers
        # ask otherwise, so that the bytes counted are the bytes kept.
        limit = self.max_result_bytes

        async def capped(response: httpx2.Response) -> None:
            kind = response.headers.get("content-type", "").lower()
            if kind.startswith("application/json") and \
                    isinstance(response.stream, httpx2.AsyncByteStream):
                response.stream = Capped(response.stream, limit, OVER_LIMIT)

        headers = dict(e.headers or {})
        if not any(k.lower() == "accept-encoding" for k in headers):
            headers["Accept-Encoding"] = "identity"
        client = await stack.enter_async_context(httpx2.AsyncClient(
            headers=headers, timeout=httpx2.Timeout(30.0, read=300.0),
            event_hooks={"response": [capped]}))
        return streamable_http_client(e.url, http_client=client, max_sse_event_size=limit)

    async def _on_message(self, message: Any) -> None:
        method = getattr(getattr(message, "root", message), "method", None)
        if method == "notifications/tools/list_changed":
            self._on_list_changed()

    async def list_tools(self) -> list[Any]:
        """Every tool the server lists (following pagination)."""
        from mcp import types

        tools: list[Any] = []
        cursor: str | None = None
        while True:
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await self.session.list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools

    async def call(self, name: str, arguments: dict[str, Any], call_id: str | None = None
                   ) -> Any:
        """The server's result; the caller bounds it (the SDK's own read timeout would cost
        one more cancel scope per call). ``call_id`` (the model's id of the call, the same
        when a served turn is retried) goes in the request's ``_meta``, for servers with side
        effects to recognise a call made again."""
        meta = None if call_id is None else {CALL_ID_META: call_id}
        return await self.session.call_tool(name, arguments, meta=meta)

    async def close(self) -> None:
        """End the session (and its subprocess); bounded by ``CLOSE_TIMEOUT``."""
        self._closing.set()
        task = self._task
        if task is not None and not task.done():
            if self.session is None:
                task.cancel()  # still starting: nothing to close politely
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(task), CLOSE_TIMEOUT)
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(task, 1.0)
        self._close_stderr()

    def _close_stderr(self) -> None:
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def stderr_tail(self) -> str:
        """``"; its stderr ends: ..."``, when a stdio server wrote anything."""
        if self._stderr is None or self._stderr.closed:
            return ""
        try:
            self._stderr.flush()
            self._stderr.seek(0)
            text = self._stderr.read().strip()
        except (OSError, ValueError):
            return ""
        if not text:
            return ""
        return f"; its stderr ends: {text[-STDERR_TAIL:]!r}"

