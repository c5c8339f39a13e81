"""A bot for the serving fault tests (`convo serve` processes and the chat page).

The model's reply depends on the last user message:
- ``big N``: a reply of N deltas of 100 characters each, streamed;
- ``done``: a short reply that also calls ``finish`` (convo's own turn-ending tool);
- ``fail…``: the first model call for each such text fails, a retry answers;
- anything else: echoed.
"""

from collections.abc import Sequence
from typing import Any

from convo import Message, ToolCall
from convo._errors import ModelError
from convo.templates import (
    LinearTemplate,
    LoopTemplate,
    SystemTemplate,
    ToolingTemplate,
    UserTemplate,
)
from convo.tools import FinishTool

LINE = ("0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ " * 2)[:99] + "\n"


class FaultsModel:
    def __init__(self) -> None:
        self.failed: set[str] = set()

    def _plan(self, messages: Sequence[Message]) -> list[str] | Message:
        last = messages[-1]
        if last.role == "tool":
            return Message("assistant", "")
        if last.content.startswith("fail") and last.content not in self.failed:
            self.failed.add(last.content)
            raise ModelError("the model at http://10.9.8.7:1234/v1 refused the connection")
        if last.content.startswith("big "):
            return [LINE] * int(last.content[4:])
        if last.content == "done":
            return Message("assistant", "All done.",
                           tool_calls=[ToolCall(f"call_{len(messages)}", "finish", {})])
        return [f"You said {last.content!r}"]

    def complete(self, messages: Sequence[Message], tools: Any = (), *,
                 on_delta: Any = None) -> Message:
        plan = self._plan(messages)
        if isinstance(plan, Message):
            return plan
        for part in plan:
            if on_delta is not None:
                on_delta(part)
        return Message("assistant", "".join(plan))

    async def acomplete(self, messages: Sequence[Message], tools: Any = (), *,
                        on_delta: Any = None) -> Message:
        return self.complete(messages, tools, on_delta=on_delta)


template = LinearTemplate([
    SystemTemplate("You are a test bot."),
    LoopTemplate([UserTemplate(), ToolingTemplate([FinishTool()])]),
])
mock_model = FaultsModel()
