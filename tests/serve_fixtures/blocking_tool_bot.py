"""A bot for the kill-mid-tool test: its tool writes down each call id it runs, and blocks on
"block" until the test opens a gate (so the server can be killed while the tool runs)."""

import os
import pathlib
import time
from collections.abc import Sequence
from typing import Any

from convo import Message
from convo.models import FunctionModel
from convo.templates import LinearTemplate, LoopTemplate, ToolingTemplate, UserTemplate
from convo.tools import FinishTool, ToolContext, tool

DIR = pathlib.Path(os.environ["CONVO_TEST_DIR"])


@tool
def charge(context: ToolContext, item: str) -> str:
    """Charge for an item."""
    with open(DIR / "tool_calls.txt", "a", encoding="utf-8") as file:
        file.write(f"{context.call_id} {item}\n")
    if item == "block":
        (DIR / "entered").touch()
        while not (DIR / "gate").exists():
            time.sleep(0.02)
    return f"charged {item}"


def _reply(messages: Sequence[Message], tools: Any) -> str:
    last = messages[-1]
    if last.role == "tool":
        return f"done: {last.content} {{finish()}}"
    return f"{{charge(item='{last.content}')}}"


template = LinearTemplate([LoopTemplate([UserTemplate(), ToolingTemplate([charge, FinishTool()])])])
mock_model = FunctionModel(_reply)
