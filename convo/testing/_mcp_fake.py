"""FakeMCPServer: convo ``@tool`` functions served over MCP, so a bot that uses MCP is tested
offline (API §17).

The tools run in the test's own process, on a Streamable HTTP server on 127.0.0.1 (a free
port) built with the ``mcp`` SDK; ``.stdio()`` gives a server whose subprocess
(``python -m convo.testing._mcp_bridge URL``) relays stdio to it, so every call lands in
``.calls`` whichever transport the bot uses.
"""

from __future__ import annotations

import inspect
import socket
import sys
import threading
from collections.abc import Sequence
from typing import Any

import attrs

from ..tools._base import Tool, to_text
from ..tools._mcp import MCPServer
from ..tools._mcp.connection import CALL_ID_META


@attrs.frozen(slots=True)
class MCPCall:
    """One call a ``FakeMCPServer`` received. ``call_id`` is the id convo sent in the
    request's ``_meta`` (``"convo/call_id"``), or None; it is left out of comparisons, so
    ``MCPCall("weather", {...})`` equals a recorded call."""

    name: str
    arguments: dict[str, Any]
    call_id: str | None = attrs.field(default=None, eq=False)


class FakeMCPServer:
    """Serves ``tools`` (convo ``Tool``s) over MCP; ``.calls`` lists the calls, in order.

    ``with fake:`` / ``fake.close()`` stops what it started (the HTTP server and every
    ``MCPServer`` it gave out).
    """

    def __init__(self, tools: Sequence[Tool], *, name: str = "fake") -> None:
        for i, t in enumerate(tools):
            if not isinstance(t, Tool):
                raise TypeError(f"FakeMCPServer: tools[{i}] is {t!r}, expected a convo Tool "
                                "(decorate a function with @tool)")
        self.tools = {t.name: t for t in tools}
        self.name = name
        self.calls: list[MCPCall] = []
        self._uvicorn: Any = None
        self._thread: threading.Thread | None = None
        self._given: list[MCPServer] = []
        self.url: str | None = None

    # -- what a test uses -------------------------------------------------------------------

    def http(self, **options: Any) -> MCPServer:
        """An ``MCPServer`` reaching this fake over Streamable HTTP."""
        options.setdefault("name", self.name)
        return self._give(MCPServer.http(self._start(), **options))

    def stdio(self, **options: Any) -> MCPServer:
        """An ``MCPServer`` reaching this fake over stdio (through a relay subprocess)."""
        options.setdefault("name", self.name)
        return self._give(MCPServer.stdio(
            sys.executable, ["-m", "convo.testing._mcp_bridge", self._start(), self.name],
            **options))

    def close(self) -> None:
        for server in self._given:
            server.close()
        self._given.clear()
        if self._uvicorn is not None:
            self._uvicorn.should_exit = True
            assert self._thread is not None
            self._thread.join(10)
            self._uvicorn = self._thread = self.url = None

    def __enter__(self) -> FakeMCPServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the server -------------------------------------------------------------------------

    def _give(self, server: MCPServer) -> MCPServer:
        self._given.append(server)
        return server

    def _start(self) -> str:
        if self.url is not None:
            return self.url
        import uvicorn
        from mcp.server.lowlevel import Server

        app = Server(self.name, on_list_tools=self._list, on_call_tool=self._call)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        config = uvicorn.Config(app.streamable_http_app(), host="127.0.0.1", port=port,
                                log_level="warning", lifespan="on")
        self._uvicorn = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._uvicorn.run, name="FakeMCPServer",
                                        daemon=True)
        self._thread.start()
        started = threading.Event()
        while not self._uvicorn.started:  # its own readiness flag, polled
            if not self._thread.is_alive():
                raise RuntimeError(f"FakeMCPServer: the HTTP server on port {port} did not "
                                   "start (see the log above)")
            started.wait(0.01)
        self.url = f"http://127.0.0.1:{port}/mcp"
        return self.url

    async def _list(self, ctx: Any, params: Any) -> Any:
        from mcp import types

        return types.ListToolsResult(tools=[
            types.Tool(name=t.name, description=t.description,
                       input_schema=t.schema()["function"]["parameters"])
            for t in self.tools.values()])

    async def _call(self, ctx: Any, params: Any) -> Any:
        from mcp import types

        arguments = dict(params.arguments or {})
        meta = params.meta or {}
        self.calls.append(MCPCall(params.name, arguments, meta.get(CALL_ID_META)))
        try:
            tool = self.tools[params.name]
            value = tool.execute(**arguments)
            if inspect.isawaitable(value):
                value = await value
            text, error = to_text(value), False
        except Exception as exc:
            text, error = f"{type(exc).__name__}: {exc}", True
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    is_error=error)
