"""The MCP face of ``convo serve`` (API.md §25): ``/mcp``, Streamable HTTP, the bot as one tool
(``convo.serve._mcp_face``), under §19's sign-in: every request to ``/mcp`` is signed in as
every other route is (401 else), and a call acts only on its caller's conversations. A call's
idempotency key is its ``_meta`` key or the POST's ``Idempotency-Key`` header.

The ``mcp`` SDK's session manager serves the transport; it runs in a task of its own started
on the first request to ``/mcp`` (so an app mounted in another app, whose lifespan does not
run this one's, serves it too) and stopped when the app stops. The SDK is the mcp extra's,
not the serve extra's, and costs about a second to import: this module imports none of it
(nor ``convo.serve._mcp_face``); the first signed-in request to ``/mcp`` does, and without the
SDK answers 501 saying how to install it (``MCP_MISSING``).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from .._problems import MCP_MISSING, Unsupported
from .faces import installed

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from .app import API

#: Where the caller of a request to /mcp is kept in its ASGI scope, for the tool to read.
CALLER_KEY = "convo.caller"

APPROVE_HINT = ("; this MCP client did not declare form elicitation, so it cannot be asked "
                "here: approve or reject it on the chat page, or with POST "
                "/api/conversations/{id}/approvals")


def mcp_routes(api: API) -> list[BaseRoute]:
    """``/mcp``: the bot as an MCP tool."""
    return [Route("/mcp", MCPEndpoint(api))]


async def _owner(ctx: Any) -> str:
    request = ctx.request
    caller = None if request is None else request.scope.get(CALLER_KEY)
    if caller is None:  # (every request to /mcp is signed in before the SDK sees it)
        from .._mcp_face import ToolProblem

        raise ToolProblem("this call came without a signed-in caller")
    user: str = caller.user
    return user


def _header_key(ctx: Any) -> str | None:
    """The ``Idempotency-Key`` header of the POST that carries the call (§25: keys hold on
    every face), beside the call's own ``_meta`` key (``convo.serve._mcp_keys``)."""
    request = ctx.request
    key: str | None = None if request is None else request.headers.get("idempotency-key")
    return key


class MCPEndpoint:
    """The ASGI app at ``/mcp``: signs the caller in, then hands the request to the SDK (the
    face and the SDK's session manager are made by the first request)."""

    def __init__(self, api: API) -> None:
        self.api = api
        self.manager: StreamableHTTPSessionManager | None = None
        self._started: asyncio.Future[None] | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        caller = await self.api.caller(Request(scope))  # 401 before the SDK sees it
        scope[CALLER_KEY] = caller
        manager = await self._running()
        await manager.handle_request(scope, receive, send)

    def _make(self) -> StreamableHTTPSessionManager:
        """The bot's MCP face and the SDK's session manager serving it (``Unsupported``, a
        501, without the SDK)."""
        if not installed("mcp"):
            raise Unsupported(MCP_MISSING)
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        from .._mcp_face import BotTool, MCPFace, default_description, tool_name

        name = self.api.tool_name or self.api.pages.title
        tool = BotTool(tool_name(name), self.api.tool_description or default_description(name))
        face = MCPFace(self.api.engine, tool, _owner, approve_hint=APPROVE_HINT,
                       header_key=_header_key)
        return StreamableHTTPSessionManager(app=face.server())

    async def _running(self) -> StreamableHTTPSessionManager:
        """The session manager, made and started once (its task group lives in a task of its
        own): made without an ``await`` between the check and the start, so concurrent first
        requests make one."""
        if self.manager is None:
            self.manager = self._make()
            self._started = asyncio.get_running_loop().create_future()
            self._task = asyncio.create_task(self._serve(self.manager, self._started))
            self.api.closers.append(self.close)
        assert self._started is not None  # (made with the manager)
        await asyncio.shield(self._started)
        return self.manager

    async def _serve(self, manager: StreamableHTTPSessionManager,
                     started: asyncio.Future[None]) -> None:
        try:
            async with manager.run():
                started.set_result(None)
                await self._stop.wait()
        except BaseException as exc:
            if not started.done():
                started.set_exception(exc)
            raise

    async def close(self) -> None:
        """Stop the session manager (the app stops)."""
        self._stop.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
