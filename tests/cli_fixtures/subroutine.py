"""A bot file for the Ctrl-C-in-a-subroutine tests: every model call and tool run is logged.

The conversation starts with a subroutine (a research task on its own session), then chats.
In the subroutine the user's first message decides: ``research`` makes the model call ``note``
and then ``wait``, a tool that waits until Ctrl-C; ``hang`` streams ``Partial`` and waits until
Ctrl-C. The child then asks the user to confirm (``Confirm?``) and the model answers again.
Each model call and tool run appends one line to the file named by ``SUB_LOG``.
"""

import os
import threading

from bot_kit import wait_until_interrupted

from convo import Message, ToolCall
from convo.models._base import SyncModel
from convo.templates import (
    LinearTemplate,
    LoopTemplate,
    SubroutineTemplate,
    ToolingTemplate,
    UserTemplate,
)
from convo.tools import tool


def log(line: str) -> None:
    with open(os.environ["SUB_LOG"], "a", encoding="utf-8") as file:
        file.write(line + "\n")


@tool
def note(text: str) -> str:
    """Write a note.

    Args:
        text: What to note.
    """
    log(f"tool note {text}")
    return f"noted {text}"


@tool
def wait() -> str:
    """Wait for something that never comes."""
    log("tool wait")
    return wait_until_interrupted()


class LoggingModel(SyncModel):
    def complete(self, messages, tools=(), *, on_delta=None):
        last = messages[-1]
        log(f"model {last.role}: {last.content}")
        if last.role == "tool":
            if last.content == "noted one":
                return Message("assistant", "", tool_calls=[ToolCall("call_2", "wait")])
            return Message("assistant", f"The tool said: {last.content}")
        if last.content == "research":
            return Message("assistant", "", tool_calls=[ToolCall("call_1", "note",
                                                                  {"text": "one"})])
        if last.content == "hang":
            on_delta("Partial")
            threading.Event().wait()
        return Message("assistant", f"You said: {last.content}")


research = SubroutineTemplate(
    LinearTemplate([UserTemplate(), ToolingTemplate([note, wait]),
                    UserTemplate(description="Confirm?"), ToolingTemplate([note])]),
    inherit="none", keep="last", template_id="research")
template = LinearTemplate([research, LoopTemplate([UserTemplate(), ToolingTemplate([note])])])
mock_model = LoggingModel()
