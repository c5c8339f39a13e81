"""A bot for the serving process tests whose MCP server (tests/tools/mcp_test_servers.py
``side_effects``) has a tool with side effects: "act" calls ``act``, which notes the call id it
was sent and waits until ``$CONVO_TEST_DIR/gate`` exists."""

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from convo import FunctionModel, LoopTemplate, MCPServer, Message, ToolingTemplate, UserTemplate

SERVERS = str(Path(__file__).resolve().parents[1] / "tools" / "mcp_test_servers.py")
server = MCPServer.stdio(sys.executable, [SERVERS, "side_effects"], include=["act"],
                         env={"CONVO_TEST_DIR": os.environ["CONVO_TEST_DIR"]}, timeout=60)


def _reply(messages: Sequence[Message], tools: Any) -> str:
    last = messages[-1]
    return f"said {last.content}" if last.role == "tool" else "{act()}"


template = LoopTemplate([UserTemplate(), ToolingTemplate([server])])
mock_model = FunctionModel(_reply)
