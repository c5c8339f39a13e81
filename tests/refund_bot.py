"""The refund bot the serving tests serve (and the telemetry and Temporal tests with them): a
``refund`` tool that needs approval (the orders it refunded are in ``ran``), a model that
answers by the last message (``fail_next`` makes its next calls fail), and the template.
``serve/serve_kit.py`` hands it on to the serving tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from weather_tools import chat_loop

from convo import FinishTool, FunctionModel, Message, ModelError, tool

ran: list[str] = []  # the orders refunded, in order: a test that reads it clears it first
fail_next: list[bool] = []  # one entry a model call to fail with an HTTP 500


@tool(needs_approval=True)
def refund(order: str) -> str:
    """Refund an order."""
    ran.append(order)
    return f"refunded {order}"


def reply(messages: Sequence[Message], tools: Any) -> str:
    """``refund ID`` calls the tool, a tool result is answered and finishes, ``fail...`` is
    a model error, ``boom`` a bug; anything else is echoed."""
    if fail_next:
        fail_next.pop()
        raise ModelError("HTTP 500 from the test model")
    last = messages[-1]
    if last.role == "tool":
        return f"Done: {last.content} {{finish()}}"
    if last.content.startswith("refund "):
        return f"{{refund(order='{last.content[7:]}')}}"
    if last.content.startswith("fail"):
        raise ModelError("HTTP 500 from http://10.0.0.7:8000/v1 (secret host)")
    if last.content == "boom":
        raise RuntimeError("a bug in the bot")
    return f"You said {last.content!r}"


TEMPLATE = chat_loop(refund, FinishTool())


def model() -> FunctionModel:
    return FunctionModel(reply)


class Counted:
    """The bot's model, counting its calls: ``FunctionModel(counted)`` or ``counted.model``."""

    def __init__(self) -> None:
        self.calls = 0
        self.model = FunctionModel(self)

    def __call__(self, messages: Sequence[Message], tools: Any) -> str:
        self.calls += 1
        return reply(messages, tools)


def fails_once() -> FunctionModel:
    """The bot's model whose first call fails with an HTTP 500 naming a private host (which
    no client may be shown); it answers as ``reply`` after."""
    failures = [ModelError("HTTP 500 from http://10.0.0.7:8000/v1 (secret host)")]

    def flaky(messages: Sequence[Message], tools: Any) -> str:
        if failures:
            raise failures.pop()
        return reply(messages, tools)

    return FunctionModel(flaky)
