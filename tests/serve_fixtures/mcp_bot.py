"""A bot for the serving process tests whose tools come from a stdio MCP server
(tests/tools/mcp_test_servers.py): "pid" calls the server's ``pid`` tool; "where" asks on which
loop the server's connection lives, as the serving worker sees it."""

import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from convo import MCPServer, Message
from convo.models import FunctionModel
from convo.templates import LoopTemplate, ToolingTemplate, UserTemplate
from convo.tools import tool

SERVERS = str(Path(__file__).resolve().parents[1] / "tools" / "mcp_test_servers.py")
server = MCPServer.stdio(sys.executable, [SERVERS, "tools"], include=["pid"], timeout=30)


@tool
async def where() -> str:
    """On which loop the MCP server's connection lives."""
    home = server._where.current()
    if home is None:
        return "nowhere"
    if home.loop is asyncio.get_running_loop():
        return "the serving loop"
    return "the background loop" if home.background else "another loop"


def _reply(messages: Sequence[Message], tools: Any) -> str:
    last = messages[-1]
    if last.role == "tool":
        return f"said {last.content}"
    return "{pid()}" if last.content == "pid" else "{where()}"


template = LoopTemplate([UserTemplate(), ToolingTemplate([server, where])])
mock_model = FunctionModel(_reply)
