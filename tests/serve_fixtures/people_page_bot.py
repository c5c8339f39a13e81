"""A bot for the chat page's people features (tests/serve/test_people_pages.py): a title
with characters HTML must escape, a first prompt, no greeting; it echoes each message with its
number, and ``refund ORDER`` calls a tool that needs the user's approval."""

from collections.abc import Sequence
from typing import Any

from convo import Message
from convo.models import FunctionModel
from convo.templates import (
    LinearTemplate,
    LoopTemplate,
    SystemTemplate,
    ToolingTemplate,
    UserTemplate,
)
from convo.tools import tool

title = "Mugs & Co. <Support>"
first_prompt = "Ask about an order, a refund or a return."


@tool(needs_approval=True)
def refund(order: str) -> str:
    """Refund an order."""
    return f"Refunded order {order}."


def reply(messages: Sequence[Message], tools: Any) -> str:
    last = messages[-1]
    if last.role == "tool":
        return f"Done: {last.content}"
    if last.content.startswith("refund "):
        return f"{{refund(order='{last.content[7:]}')}}"
    said = sum(m.role == "user" for m in messages)
    return f"You said {last.content!r} (message {said})"


template = LinearTemplate([SystemTemplate("Be brief."), LoopTemplate([
    UserTemplate(), ToolingTemplate([refund])])])
mock_model = FunctionModel(reply)
