"""A bot for typing while the model answers, in the terminal
(tests/terminal/test_steer_terminal.py): a model held at a gate the test opens, a quick tool,
and a record of every model call.

The model's reply depends on the last message: ``slow look X`` waits until the named pipe
``$CONVO_GATE`` is written to, then calls ``lookup(q=X)``; ``slow bye`` waits there too, then
ends the conversation (``end_conversation``); ``hang`` waits until Ctrl-C; a tool
result gets "after RESULT"; anything else "re: TEXT". Each call appends the messages it was sent
(``[role, text]`` pairs) as a JSON line to ``$CONVO_CALLS``.
"""

import json
import os
import threading
from collections.abc import Sequence
from typing import Any

from convo import Message, ToolCall
from convo.models._base import SyncModel
from convo.templates import LoopTemplate, ToolingTemplate, UserTemplate
from convo.tools import EndConversationTool, FinishTool, tool


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


class GatedModel(SyncModel):
    def complete(self, messages: Sequence[Message], tools: Any = (), *,
                 on_delta: Any = None) -> Message:
        with open(os.environ["CONVO_CALLS"], "a", encoding="utf-8") as calls:
            calls.write(json.dumps([[m.role, m.text] for m in messages]) + "\n")
        last = messages[-1]
        if last.role == "tool":
            return Message("assistant", f"after {last.text}")
        if last.text.startswith("slow "):
            with open(os.environ["CONVO_GATE"]) as gate:
                gate.read()
        if last.text == "slow bye":
            return Message("assistant", "", tool_calls=[
                ToolCall("call_bye", "end_conversation", {"message": "Bye!"})])
        if last.text.startswith("slow look "):
            return Message("assistant", "", tool_calls=[
                ToolCall(f"call_{len(messages)}", "lookup", {"q": last.text[10:]})])
        if last.text == "hang":
            threading.Event().wait()
        return Message("assistant", f"re: {last.text}")


template = LoopTemplate([UserTemplate(), ToolingTemplate([lookup, FinishTool(),
                                                        EndConversationTool()])])
mock_model = GatedModel()
