"""A bot whose template reads what a workflow must not, by the last user message: ``clock``
(``time.time()``), ``random`` (``random.random()``) or ``file`` (``open()``) in the condition
the pump evaluates; anything else is echoed by its model. ``convo worker`` runs it in
Temporal's workflow sandbox, where each read fails the workflow task."""

import random
import time
from collections.abc import Sequence
from typing import Any

from convo import FunctionModel, Message, Session
from convo.templates import (
    AssistantTemplate,
    IfTemplate,
    LinearTemplate,
    LoopTemplate,
    SystemTemplate,
    UserTemplate,
)


def _reads(session: Session) -> bool:
    said = session.messages[-1].content
    if said == "clock":
        return time.time() < 0
    if said == "random":
        return random.random() < 0
    if said == "file":
        with open(__file__, encoding="utf-8"):
            return False
    return False


def _echo(messages: Sequence[Message], tools: Any) -> str:
    return f"You said {messages[-1].content!r}"


template = LinearTemplate([SystemTemplate("Sandboxed."), LoopTemplate([
    UserTemplate(), IfTemplate(_reads, AssistantTemplate(), AssistantTemplate())])])
mock_model = FunctionModel(_echo)
