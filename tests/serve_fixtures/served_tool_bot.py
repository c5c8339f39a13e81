"""A bot served as an MCP tool (convo mcp, /mcp): it repeats what it is told; "refund X Y"
refunds orders X and Y in one batch (each call approved by the user), "staff X" makes a call
only an operator may approve, "hello" greets twice (two assistant texts in one turn), "fail"
fails the model call, "bye" ends the conversation."""

from collections.abc import Sequence
from typing import Any

from convo import Message, ModelError
from convo.models import FunctionModel
from convo.templates import LoopTemplate, ToolingTemplate, UserTemplate
from convo.tools import EndConversationTool, tool

title = "Refund desk (test)"
description = "Refunds orders after the user approves each refund."


@tool(needs_approval=True)
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


@tool
def note() -> str:
    """Note that the user said hello."""
    return "noted"


@tool(needs_approval=True, approver="operator")
def wipe(order: str) -> str:
    """Wipe an order's records."""
    return f"wiped {order}"


def reply(messages: Sequence[Message], tools: Any) -> str:
    last = messages[-1]
    if last.role == "tool":
        results: list[str] = []
        for message in reversed(messages):
            if message.role != "tool":
                break
            results.insert(0, message.text)
        return "Done: " + "; ".join(results)
    words = last.text.split()
    if words[:1] == ["refund"]:
        return "Refunding. " + "".join(f"{{refund(order='{order}')}}" for order in words[1:])
    if words[:1] == ["staff"]:
        return f"{{wipe(order='{words[1]}')}}"
    if words[:1] == ["fail"]:
        raise ModelError("HTTP 500 from http://10.0.0.7:8000/v1 (secret host)")
    if words[:1] == ["bye"]:
        return "{end_conversation(message='Goodbye.')}"
    if words[:1] == ["hello"]:
        return "Hello! {note()}"
    return f"You said {last.text!r}"


template = LoopTemplate([UserTemplate(), ToolingTemplate([refund, wipe, note,
                                                          EndConversationTool()])])
mock_model = FunctionModel(reply)
