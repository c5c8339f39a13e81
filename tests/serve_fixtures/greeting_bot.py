"""A bot whose conversations greet first (tests/serve/test_page_layouts.py): the chat page
stores a new conversation as it opens, to show the greeting; it echoes each message."""

from collections.abc import Sequence
from typing import Any

from convo import Message
from convo.models import FunctionModel
from convo.templates import AssistantTemplate, LinearTemplate, LoopTemplate, UserTemplate

title = "Greeter"


def reply(messages: Sequence[Message], tools: Any) -> str:
    return f"You said {messages[-1].text!r}"


template = LinearTemplate([AssistantTemplate("Hello! What can I do for you?"),
                           LoopTemplate([UserTemplate(), AssistantTemplate()])])
mock_model = FunctionModel(reply)
