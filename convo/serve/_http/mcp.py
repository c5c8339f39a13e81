"""The MCP face of ``convo serve`` (API.md §25): ``/mcp``, Streamable HTTP, the bot as one tool
(``convo.serve._mcp_face``), under §19's sign-in: every request to ``/mcp`` is signed in as
every other route is (401 else), and a call acts only on its caller's conversations. A call's
idempotency key is its ``_meta`` key or the POST's ``Idempotency-Key`` header.

The ``mcp`` SDK's session manager serves the transport; it runs in a task of its own started
on the first request to ``/mcp`` (so an app mounted in another app, whose lifespan does not
run this one's, serves it too) and stopped when the app stops.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.requests import Request
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from .._mcp_face import BotTool, MCPFace, ToolProblem, default_description, tool_name

if TYPE_CHECKING:
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
    """The ASGI app at ``/mcp``: signs the caller in, then hands the request to the SDK."""

    def __init__(self, api: API) -> None:
        self.api = api
        name = api.tool_name or api.pages.title
        tool = BotTool(tool_name(name), api.tool_description or default_description(name))
        face = MCPFace(api.engine, tool, _owner, approve_hint=APPROVE_HINT,
                       header_key=_header_key)
        self.manager = StreamableHTTPSessionManager(app=face.server())
        self._started: asyncio.Future[None] | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        caller = await self.api.caller(Request(scope))  # 401 before the SDK sees it
        scope[CALLER_KEY] = caller
        await self._running()
        await self.manager.handle_request(scope, receive, send)

    async def _running(self) -> None:
        """The session manager, started once (its task group lives in a task of its own)."""
        if self._started is None:
            self._started = asyncio.get_running_loop().create_future()
            self._task = asyncio.create_task(self._serve(self._started))
            self.api.closers.append(self.close)
        await asyncio.shield(self._started)

    async def _serve(self, started: asyncio.Future[None]) -> None:
        try:
            async with self.manager.run():
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
