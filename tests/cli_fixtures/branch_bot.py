"""A bot for branches, in the terminal (tests/terminal/test_branch_commands.py) and on the
chat page (tests/serve/test_branch_page.py): ``add ITEM`` calls a
tool that puts the item in the cart (``state``); every reply says which model call made it, so
a regenerated reply differs from the one it replaces. ``buy ITEM`` says so in the reply that
calls the tool, and the reply after the result says nothing: the last reply to regenerate is the
one before a call that ran. ``gift ITEM`` calls ``wrap``, a subroutine (a ``SubroutineTool``)
whose own model call adds the item: a call made inside a subroutine."""

from collections.abc import Sequence
from typing import Any

from convo import Message
from convo.models import FunctionModel
from convo.templates import (
    LinearTemplate,
    LoopTemplate,
    SubroutineTool,
    SystemTemplate,
    ToolingTemplate,
    UserTemplate,
)
from convo.tools import ToolContext, tool

CALLS = [0]


@tool
def add_to_cart(context: ToolContext, item: str) -> str:
    """Put an item in the cart."""
    context.state.setdefault("cart", []).append(item)
    return f"added {item}"


def reply(messages: Sequence[Message], tools: Any) -> str:
    CALLS[0] += 1
    last = messages[-1]
    if last.role == "tool":
        if str(messages[-2].content).startswith("Buying "):
            return ""
        return f"Done: {last.content} (call {CALLS[0]})"
    if str(last.content).startswith("buy "):
        item = str(last.content)[4:]
        return f"Buying {item} (call {CALLS[0]}). {{add_to_cart(item='{item}')}}"
    if str(last.content).startswith("gift "):
        return f"{{wrap(input='add {str(last.content)[5:]}')}}"
    if str(last.content).startswith("add "):
        return f"{{add_to_cart(item='{str(last.content)[4:]}')}}"
    return f"You said {last.content!r} (call {CALLS[0]})"


wrap = SubroutineTool(ToolingTemplate([add_to_cart]), name="wrap",
                      description="Wrap an item as a gift (say: add ITEM).")
template = LinearTemplate([SystemTemplate("Be brief."), LoopTemplate([
    UserTemplate(), ToolingTemplate([add_to_cart, wrap])])])
mock_model = FunctionModel(reply)
