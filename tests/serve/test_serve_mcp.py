"""A served bot whose tools come from an MCP server: conversations share one connection per
server in the worker, a conversation that goes on is not made to call the tool again, and the
app's shutdown stops the server's process."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from convo import MCPServer, Message
from convo.models import FunctionModel
from convo.serve import create_app
from convo.templates import LoopTemplate, ToolingTemplate, UserTemplate

SERVERS = str(Path(__file__).parent.parent / "tools" / "mcp_test_servers.py")


def reply(messages: Sequence[Message], tools: Any) -> str:
    last = messages[-1]
    if last.role == "tool":
        return f"The server is {last.content}."
    return "{pid()}"


def test_served_conversations_share_the_servers_connection() -> None:
    with MCPServer.stdio(sys.executable, [SERVERS, "tools"], include=["pid"],
                         timeout=30) as server:
        template = LoopTemplate([UserTemplate(), ToolingTemplate([*server])])
        with TestClient(create_app(template, FunctionModel(reply))) as client:
            said = []
            for _ in range(2):
                cid = client.post("/api/conversations", json={}).json()["id"]
                for _ in range(2):
                    added = client.post(f"/api/conversations/{cid}/messages",
                                        json={"content": "which?"}).json()["added"]
                    said.append(added[-1]["content"])
    assert len(set(said)) == 1 and said[0].startswith("The server is ")


@pytest.mark.parametrize("given", ["the server", "its tools"])
def test_the_apps_shutdown_stops_the_servers_process(given: str) -> None:
    server = MCPServer.stdio(sys.executable, [SERVERS, "tools"], include=["pid"], timeout=30)
    try:
        tools = [server] if given == "the server" else [*server]
        template = LoopTemplate([UserTemplate(), ToolingTemplate(tools)])
        with TestClient(create_app(template, FunctionModel(reply))) as client:
            cid = client.post("/api/conversations", json={}).json()["id"]
            added = client.post(f"/api/conversations/{cid}/messages",
                                json={"content": "which?"}).json()["added"]
            pid = int(added[-1]["content"].removeprefix("The server is ").rstrip("."))
            os.kill(pid, 0)  # it runs while the app serves
        # The lifespan has ended: the server was closed, its process waited for (reaped).
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    finally:
        server.close()
