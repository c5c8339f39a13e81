"""A bot for the serving process tests: its tool writes down every call it runs, and the reply
to "slow" waits until the test opens a gate (so a test can kill the server mid-turn)."""

import os
import pathlib
import sys
import time
from collections.abc import Sequence
from typing import Any

from convo import Message
from convo.models import FunctionModel
from convo.tools import FinishTool, tool

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from weather_tools import chat_loop

DIR = pathlib.Path(os.environ["CONVO_TEST_DIR"])


@tool
def note(text: str) -> str:
    """Write a note down."""
    with open(DIR / "tool_calls.txt", "a", encoding="utf-8") as file:
        file.write(text + "\n")
    return f"noted {text}"


def _reply(messages: Sequence[Message], tools: Any) -> str:
    last = messages[-1]
    if last.role == "tool":
        return f"ok, {last.content} {{finish()}}"
    if last.content == "slow":
        (DIR / "entered").touch()
        while not (DIR / "gate").exists():
            time.sleep(0.02)
        return "slow done"
    if last.content.startswith("note "):
        return f"{{note(text='{last.content[5:]}')}}"
    return f"echo {last.content}"


template = chat_loop(note, FinishTool(), system="Take notes.")
mock_model = FunctionModel(_reply)
