"""MCPServer: the tools of one MCP server (stdio or Streamable HTTP), without hangs.

The connection opens on first use, on its home loop (``home.py``: the first async user's
loop, or a background loop for a blocking ``run()``), and is shared by every run of the
process; work from another loop or thread is handed to it. Every step is bounded by
``timeout``: starting, listing, each call. A call never raises: what fails becomes an
``MCPServerError`` whose text names the server, the tool and the cause, which the runner turns
into the call's error result; a connection that broke is dropped, and the next call starts a
new one.

(About 400 lines: the options, the listing, the calls and the connection's life are one
object's, and its waits must stay side by side to stay bounded; which loop the connection
lives on is ``home.py``'s.)
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import weakref
from collections.abc import Callable, Collection, Coroutine, Mapping
from concurrent.futures import CancelledError
from typing import Any, Final, TypeAlias, TypeVar

import attrs

from ..._errors import DefinitionError, MCPServerError
from ..._parts import Part, shown
from .connection import (
    CLOSE_TIMEOUT,
    MAX_RESULT_BYTES,
    OVER_LIMIT,
    Connection,
    Endpoint,
    cause,
    close_later,
    finish_closing,
    keep,
)
from .home import Home, Where
from .loop import hand_off, running_loop, started, submit
from .tool import BadResult, MCPTool, result_content

T = TypeVar("T")
MCPApproval: TypeAlias = "bool | Callable[[str, dict[str, Any]], bool]"
#: Extra seconds a caller waits beyond the server's own bounds before giving up on the loop.
GRACE: Final = 5.0

_open: weakref.WeakSet[MCPServer] = weakref.WeakSet()
logger = logging.getLogger("convo")


def _names(value: Collection[str] | None, what: str) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):
        raise DefinitionError(f"MCPServer: {what} must be a collection of tool names, "
                              f"got {value!r}")
    return frozenset(value)


def _timeout(value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise DefinitionError(f"MCPServer: timeout must be a number of seconds > 0, "
                              f"got {value!r}")
    return float(value)


def _max_bytes(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise DefinitionError(f"MCPServer: max_result_bytes must be a whole number of bytes "
                              f">= 1, got {value!r}")
    return value


@attrs.define(slots=True, eq=False, weakref_slot=True)
class MCPServer:
    """The tools of an MCP server. Build one with ``MCPServer.stdio(...)``,
    ``MCPServer.http(...)`` or ``MCPServer.from_config(...)``; see docs/mcp.md."""

    endpoint: Endpoint
    given_name: str | None = attrs.field(default=None, kw_only=True)
    prefix: str | None = attrs.field(default=None, kw_only=True)
    include: frozenset[str] | None = attrs.field(default=None, kw_only=True)
    exclude: frozenset[str] | None = attrs.field(default=None, kw_only=True)
    needs_approval: MCPApproval = attrs.field(default=False, kw_only=True)
    timeout: float = attrs.field(default=30.0, kw_only=True, converter=_timeout)
    max_result_bytes: int = attrs.field(default=MAX_RESULT_BYTES, kw_only=True,
                                        converter=_max_bytes)
    _where: Where = attrs.field(factory=Where, init=False)  # the connection's loop
    _tools: dict[str, MCPTool] = attrs.field(factory=dict, init=False)
    _catalog: tuple[MCPTool, ...] = attrs.field(default=(), init=False)  # _tools' values
    _reported: str | None = attrs.field(default=None, init=False)  # the server's own name
    _listed_once: bool = attrs.field(default=False, init=False)  # a later tool is "late"

    @classmethod
    def stdio(cls, command: str, args: Collection[str] = (), *,
              env: Mapping[str, str] | None = None, cwd: str | None = None,
              **options: Any) -> MCPServer:
        """A server run as a subprocess, spoken to over its stdin and stdout."""
        if not isinstance(command, str) or not command:
            raise DefinitionError(f"MCPServer.stdio: command must be a non-empty string, "
                                  f"got {command!r}")
        if isinstance(args, str):
            raise DefinitionError(f"MCPServer.stdio: args must be a list of strings, got the "
                                  f"string {args!r}")
        endpoint = Endpoint(command=command, args=tuple(str(a) for a in args),
                            env=dict(env) if env else None,
                            cwd=None if cwd is None else str(cwd))
        return cls._build(endpoint, **options)

    @classmethod
    def http(cls, url: str, *, headers: Mapping[str, str] | None = None,
             **options: Any) -> MCPServer:
        """A server reached over Streamable HTTP at ``url``."""
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise DefinitionError(f"MCPServer.http: url must start with http:// or https://, "
                                  f"got {url!r}")
        return cls._build(Endpoint(url=url, headers=dict(headers) if headers else None),
                          **options)

    @classmethod
    def _build(cls, endpoint: Endpoint, *, name: str | None = None, prefix: str | None = None,
               include: Collection[str] | None = None, exclude: Collection[str] | None = None,
               needs_approval: MCPApproval = False, timeout: float = 30.0,
               max_result_bytes: int = MAX_RESULT_BYTES) -> MCPServer:
        if prefix is not None and not isinstance(prefix, str):
            raise DefinitionError(f"MCPServer: prefix must be a string, got {prefix!r}")
        return cls(endpoint, given_name=name, prefix=prefix,
                   include=_names(include, "include"), exclude=_names(exclude, "exclude"),
                   needs_approval=needs_approval, timeout=timeout,
                   max_result_bytes=max_result_bytes)

    @classmethod
    def from_config(cls, config: Any) -> list[MCPServer]:
        """The servers of an ``{"mcpServers": {...}}`` file (a path) or mapping."""
        from .config import servers_from_config

        servers: list[MCPServer] = servers_from_config(config, cls)
        return servers

    @property
    def name(self) -> str:
        """The given name, else the name the server reports, else the command or host."""
        return self.given_name or self._reported or self.endpoint.fallback_name()

    # -- tools ------------------------------------------------------------------------------

    def tools(self) -> list[MCPTool]:
        """The server's tools (prefixed and filtered), listed once and cached; connects first
        when needed. Raises ``MCPServerError`` naming the server and the cause."""
        cached = self._cached()
        if cached is not None:
            return list(cached)
        home = self._where.for_thread()
        return self._wait(home, self._list(home), self.timeout * 2)

    async def atools(self) -> list[MCPTool]:
        cached = self._cached()
        if cached is not None:
            return list(cached)
        home = self._where.for_loop(asyncio.get_running_loop())
        return await self._await(home, self._list(home), self.timeout * 2)

    def _cached(self) -> tuple[MCPTool, ...] | None:
        """The tools as last listed, while the connection is up and the list has not changed:
        a turn takes them without a hop to the connection's loop."""
        home = self._where.current()
        if home is None or home.listed is None or not home.open():
            return None
        return self._catalog

    def __iter__(self) -> Any:
        """``ToolingTemplate([*server, other_tool])``: the server's tools."""
        return iter(self.tools())

    def _keep(self, remote: str) -> bool:
        if self.include is not None and remote not in self.include:
            return False
        return self.exclude is None or remote not in self.exclude

    async def _list(self, home: Home) -> list[MCPTool]:
        async with home.guard():
            if home.moved:  # the connection moved meanwhile: list there
                return await self.atools()
            connection = await self._connect(home)
            if home.listed is None:
                try:
                    listed = await asyncio.wait_for(connection.list_tools(), self.timeout)
                except TimeoutError:
                    raise MCPServerError(f"MCP server {self.name!r} did not list its tools "
                                         f"within {self.timeout:g} s") from None
                except Exception as exc:
                    self._drop(home, connection)
                    raise MCPServerError(f"MCP server {self.name!r} could not list its tools: "
                                         f"{cause(exc)}") from exc
                listed = [d for d in listed if self._keep(d.name) and self._callable(d)]
                self._tools = {d.name: self._tools.get(d.name) or MCPTool(
                    self, d.name, d.description, d.input_schema,
                    listed_late=self._listed_once) for d in listed}
                self._listed_once = True
                # The catalog before the mark: another thread's ``_cached`` reads them.
                self._catalog, home.listed = tuple(self._tools.values()), listed
            return list(self._catalog)

    def _callable(self, listed: Any) -> bool:
        """Whether convo can call a listed tool: one that requires task-augmented execution
        (``execution.taskSupport: "required"``) cannot be called without MCP tasks, which
        the SDK's client does not offer; it is left out, and a warning names it."""
        execution = getattr(listed, "execution", None)
        if getattr(execution, "task_support", None) != "required":
            return True
        logger.warning("MCP server %r: tool %r requires task-augmented execution "
                       '(execution.taskSupport "required"), which convo does not support: left '
                       "out of the server's tools", self.name, listed.name)
        return False

    # -- calls ------------------------------------------------------------------------------

    async def call(self, remote: str, arguments: dict[str, Any], call_id: str | None = None
                   ) -> str | tuple[Part, ...]:
        """Call the server's tool ``remote``: its result as a tool message's content (text, or
        parts when it holds images, audio or files), or ``MCPServerError`` saying why not.
        ``call_id`` goes in the request's ``_meta`` (``"convo/call_id"``). On the
        connection's own loop the call goes straight to the session."""
        here = asyncio.get_running_loop()
        home = self._where.for_loop(here)
        if home.loop is here:
            return await self._call(home, remote, arguments, call_id)
        return await self._await(home, self._call(home, remote, arguments, call_id),
                                 self.timeout * 2)

    def call_blocking(self, remote: str, arguments: dict[str, Any], call_id: str | None = None
                      ) -> str | tuple[Part, ...]:
        """``call`` for a caller without a running loop (a blocking ``Runner.run()``)."""
        home = self._where.for_thread()
        return self._wait(home, self._call(home, remote, arguments, call_id), self.timeout * 2)

    async def _call(self, home: Home, remote: str, arguments: dict[str, Any],
                    call_id: str | None, again: bool = True) -> str | tuple[Part, ...]:
        connection = home.connection
        if connection is None or connection.session is None:
            async with home.guard():
                if not home.moved:
                    connection = await self._connect(home)
        if home.moved:  # the connection moved while this call was on its way: call there
            return await self.call(remote, arguments, call_id)
        assert connection is not None
        task = asyncio.current_task()
        assert task is not None
        home.calls += 1
        home.start(task, self.timeout)  # its bound cancels the call (the SDK tells the server)
        try:
            result = await connection.call(remote, arguments, call_id)
        except asyncio.CancelledError:
            if not home.end(task):
                raise  # the caller is cancelled
            raise MCPServerError(f"MCP server {self.name!r} did not answer a call of "
                                 f"{remote!r} within {self.timeout:g} s") from None
        except Exception as exc:
            home.end(task)
            if "timed out" in str(exc).lower():  # the SDK's own read timeout
                raise MCPServerError(f"MCP server {self.name!r} did not answer a call of "
                                     f"{remote!r} within {self.timeout:g} s") from None
            if OVER_LIMIT in str(exc):  # the answer was refused; the session goes on
                raise MCPServerError(
                    f"MCP server {self.name!r} sent an answer to a call of {remote!r} larger "
                    f"than max_result_bytes ({self.max_result_bytes} bytes); it was not "
                    "kept") from None
            tail = connection.stderr_tail()
            self._drop(home, connection)
            if again and "session not found" in str(exc).lower():
                # The HTTP server forgot the session (it restarted) before running anything:
                # a new session, and the call once more.
                return await self._call(home, remote, arguments, call_id, again=False)
            raise MCPServerError(
                f"MCP server {self.name!r} failed during a call of {remote!r}: {cause(exc)}"
                f"{tail}; the next call will start it again") from exc
        else:
            home.end(task)
        finally:
            home.call_ended()
        return self._content(remote, result)

    def _content(self, remote: str, result: Any) -> str | tuple[Part, ...]:
        try:
            content = result_content(result)
        except BadResult as exc:
            raise MCPServerError(f"MCP server {self.name!r} sent a result of {remote!r} that "
                                 f"cannot be shown: {exc}") from None
        if getattr(result, "is_error", False):
            raise MCPServerError(f"MCP server {self.name!r} says the call of {remote!r} "
                                 f"failed: {shown(content) or 'no details'}")
        return content

    # -- the connection (on its home loop) --------------------------------------------------

    @property
    def _connection(self) -> Connection | None:
        """The connection of this process, if one is open or opening."""
        home = self._where.current()
        return None if home is None or home.loop.is_closed() else home.connection

    async def _connect(self, home: Home) -> Connection:
        """The open connection, or a new one (one attempt, bounded by ``timeout``)."""
        current = home.connection
        if current is not None and current.session is not None:
            return current
        if current is not None:
            self._drop(home, current)
        connection = Connection(self.endpoint, home.list_changed,
                                max_result_bytes=self.max_result_bytes)
        await connection.open(self.timeout, self.name)
        home.connection, home.listed = connection, None
        self._reported = connection.reported_name or self._reported
        _open.add(self)
        return connection

    def _drop(self, home: Home, connection: Connection) -> None:
        if home.connection is connection:
            home.forget()  # it may wait for a stubborn subprocess: not on the caller's time
        else:
            close_later(connection)

    async def _close(self, home: Home) -> None:
        connection, home.connection, home.listed = home.connection, None, None
        if connection is not None:
            await connection.close()
        await finish_closing()  # what was dropped on this loop before

    # -- waiting for the connection's loop, from anywhere -----------------------------------

    def _wait(self, home: Home, coro: Coroutine[Any, Any, T], limit: float) -> T:
        if running_loop() is home.loop:
            coro.close()
            raise RuntimeError(f"MCPServer {self.name!r}: a blocking call on the event loop "
                               f"its connection lives on would never end; await it (atools(), "
                               f"aclose())")
        try:
            future = submit(coro, home.loop)
        except RuntimeError as exc:  # its loop closed just now
            coro.close()
            raise self._loop_ended() from exc
        try:
            return future.result(limit + GRACE)
        except TimeoutError:
            future.cancel()
            raise self._no_answer(limit) from None
        except CancelledError:  # its loop ended meanwhile, and cancelled the work
            raise self._loop_ended() from None

    async def _await(self, home: Home, coro: Coroutine[Any, Any, T], limit: float) -> T:
        if home.loop is asyncio.get_running_loop():
            return await coro
        try:
            future = hand_off(coro, home.loop)
        except RuntimeError as exc:  # its loop closed just now
            coro.close()
            raise self._loop_ended() from exc
        try:
            async with asyncio.timeout(limit + GRACE):  # cancels the future, and so ``coro``
                return await future
        except TimeoutError:
            raise self._no_answer(limit) from None
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # the caller is cancelled
            raise self._loop_ended() from None  # the loop it was handed to ended meanwhile

    def _no_answer(self, limit: float) -> MCPServerError:
        return MCPServerError(f"MCP server {self.name!r} did not answer within "
                              f"{limit + GRACE:g} s")

    def _loop_ended(self) -> MCPServerError:
        return MCPServerError(f"MCP server {self.name!r}: the event loop its connection lived "
                              f"on ended during the call; the next call will start it again")

    # -- closing ----------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection (and stop a stdio server's process). Safe to call twice."""
        home = self._where.current()
        if home is None or home.connection is None or home.loop.is_closed():
            return  # a closed loop's teardown has closed its connection
        here = running_loop()
        if home.loop is here:  # cannot wait here: closed as soon as this loop can
            keep(here.create_task(self._close(home)))
        elif home.loop.is_running():
            self._wait(home, self._close(home), 10.0)
        elif here is None:  # its loop was run and stopped, and runs nowhere: once more
            home.loop.run_until_complete(asyncio.wait_for(self._close(home), 10.0))
        else:
            self._close_when_it_runs(home)

    async def aclose(self) -> None:
        home = self._where.current()
        if home is None or home.connection is None or home.loop.is_closed():
            return
        if home.loop is asyncio.get_running_loop() or home.loop.is_running():
            await self._await(home, self._close(home), 10.0)
        else:
            self._close_when_it_runs(home)

    def _close_when_it_runs(self, home: Home) -> None:
        """Close on a stopped loop when it runs again (its teardown would close it too)."""
        def start() -> None:
            keep(home.loop.create_task(self._close(home)))

        home.loop.call_soon_threadsafe(start)

    def __enter__(self) -> MCPServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> MCPServer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        where = self.endpoint.url or " ".join((self.endpoint.command or "", *self.endpoint.args))
        return f"<MCPServer {self.name!r} {where}>"


@atexit.register
def _close_all() -> None:
    for server in list(_open):
        try:
            server.close()
        except Exception:  # at exit, a server that will not close is left to the OS
            pass
    if not started():
        return
    try:
        submit(finish_closing()).result(CLOSE_TIMEOUT + 2)
    except Exception:
        pass
