"""A bot for `convo run -c`: an approved tool call inside a subroutine, then a chat. Its tool
writes down each call it runs (in CONVO_TEST_DIR)."""

import os
import pathlib
from collections.abc import Sequence
from typing import Any

from convo import Message
from convo.models import FunctionModel
from convo.templates import (
    AssistantTemplate,
    LinearTemplate,
    LoopTemplate,
    SubroutineTemplate,
    ToolingTemplate,
    UserTemplate,
)
from convo.tools import FinishTool, tool


@tool(needs_approval=True)
def charge(amount: int) -> str:
    """Charge the customer."""
    with open(pathlib.Path(os.environ["CONVO_TEST_DIR"]) / "charges.txt", "a") as file:
        file.write(f"{amount}\n")
    return f"charged {amount}"


def _reply(messages: Sequence[Message], tools: Any) -> str:
    last = messages[-1]
    if last.role == "tool":
        return f"Done: {last.content}. {{finish()}}"
    if last.content.startswith("charge "):
        return f"{{charge(amount={int(last.content[7:])})}}"
    return f"You said: {last.content}"


billing = SubroutineTemplate(LinearTemplate([UserTemplate(), ToolingTemplate([charge,
                                                                            FinishTool()])]),
                             inherit="none", template_id="billing")
template = LinearTemplate([billing, LoopTemplate([UserTemplate(), AssistantTemplate()])])
mock_model = FunctionModel(_reply)
