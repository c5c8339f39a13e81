"""A bot file for the command-line tests: a model that streams, uses tools, and can be slow.

What the model does depends on the user's message: ``hang`` streams ``Partial answer`` and
then waits until Ctrl-C; ``gated`` streams ``Half``, waits until the named pipe ``CONVO_GATE``
is written to, and streams the rest; ``markdown`` answers with a heading, a list and code;
``tool`` calls ``wait``, a tool that waits until Ctrl-C; ``done`` calls ``finish``; anything
else is echoed, word by word. Every reply reports its token usage.
"""

import os
import threading

from bot_kit import wait_until_interrupted

from convo import Message, ToolCall
from convo.models._base import SyncModel
from convo.templates import LoopTemplate, ToolingTemplate, UserTemplate
from convo.tools import FinishTool, tool

USAGE = {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}
MARKDOWN = "# Shopping\n\n- **milk**, two litres\n- `eggs`\n"


@tool
def wait() -> str:
    """Wait for something that never comes."""
    return wait_until_interrupted()


class StreamingModel(SyncModel):
    def complete(self, messages, tools=(), *, on_delta=None):
        last = messages[-1]
        if last.role == "tool":
            return Message("assistant", f"The tool said: {last.content}",
                           metadata={"usage": USAGE})
        text = last.content
        if text == "tool":
            return Message("assistant", "", tool_calls=[ToolCall("call_1", "wait")])
        if text == "done":
            return Message("assistant", "", tool_calls=[ToolCall("call_2", "finish")])
        if text == "gated":
            on_delta("Half")
            with open(os.environ["CONVO_GATE"]) as gate:
                gate.read()
            on_delta(" and the rest.")
            return Message("assistant", "Half and the rest.", metadata={"usage": USAGE})
        reply = MARKDOWN if text == "markdown" else f"You said: {text}"
        words = reply.split(" ") if text != "hang" else ["Partial", " answer"]
        for i, word in enumerate(words):
            on_delta(word if i == 0 or text == "hang" else f" {word}")
        if text == "hang":
            threading.Event().wait()
        return Message("assistant", reply, metadata={"usage": USAGE})


template = LoopTemplate([UserTemplate(), ToolingTemplate([wait, FinishTool()])])
mock_model = StreamingModel()
