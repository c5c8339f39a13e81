"""``python -m convo.testing._mcp_bridge URL [NAME]``: an MCP server on stdio that relays the
tool list and the calls to the Streamable HTTP server at URL (a ``FakeMCPServer``'s), so a
stdio test still runs the tools in the test's own process."""

from __future__ import annotations

import sys
from typing import Any


async def relay(url: str, name: str) -> None:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    from ..tools._mcp.connection import CALL_ID_META

    async with streamable_http_client(url) as (read, write), \
            ClientSession(read, write) as upstream:
        await upstream.initialize()

        async def on_list_tools(ctx: Any, params: Any) -> Any:
            return await upstream.list_tools(params=params)

        async def on_call_tool(ctx: Any, params: Any) -> Any:
            # convo's key of the request's _meta goes on (the rest is this session's own).
            meta: Any = {k: v for k, v in (params.meta or {}).items() if k == CALL_ID_META}
            return await upstream.call_tool(params.name, params.arguments or {},
                                            meta=meta or None)

        server = Server(name, on_list_tools=on_list_tools, on_call_tool=on_call_tool)
        async with stdio_server() as (server_read, server_write):
            await server.run(server_read, server_write, server.create_initialization_options())


def main() -> None:
    import anyio

    anyio.run(relay, sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "fake")


if __name__ == "__main__":
    main()
