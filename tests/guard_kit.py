"""Shared by the guard tests (in process and served): a model that streams a scripted reply in
small pieces, a card number and a tool that notes the card it was given, and ``heard``, every
event of every run started in a test."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from convo import Message, ToolCall
from convo._run.state import watch_runs
from convo.events import Event
from convo.tools import tool


class Streaming:
    """Streams each of ``replies`` (in turn, the last one again) in pieces of ``size``
    characters, as a streaming provider's reply arrives."""

    def __init__(self, *replies: str, size: int = 4) -> None:
        self.replies = list(replies)
        self.size = size
        self.calls = 0

    def complete(self, messages: Sequence[Message], tools: Sequence[Any] = (), *,
                 on_delta: Any = None) -> Message:
        text = self.replies[min(self.calls, len(self.replies) - 1)]
        self.calls += 1
        if on_delta is not None:
            for i in range(0, len(text), self.size):
                on_delta(text[i:i + self.size])
        return Message("assistant", text)

    async def acomplete(self, messages: Sequence[Message], tools: Sequence[Any] = (), *,
                        on_delta: Any = None) -> Message:
        return self.complete(messages, tools, on_delta=on_delta)


HOSTILE = "Sure! Your card is 4111 1111 1111 1111, expiry 12/29. Anything else?"
CARD = "4111 1111 1111 1111"

seen: list[str] = []  # the cards pay was given (a test clears it first)


@tool
def pay(card: str, amount: int) -> str:
    """Charge a card."""
    seen.append(card)
    return f"charged {amount}"


PAY = Message("assistant", "", tool_calls=(ToolCall("c1", "pay", {"card": CARD, "amount": 5}),))


@pytest.fixture
def heard() -> Iterator[list[Event]]:
    """Every event of every run started in the test (as a watcher such as convo.otel hears
    them: a served run's included)."""
    events: list[Event] = []
    stop = watch_runs(lambda state: events.append)
    try:
        yield events
    finally:
        stop()


_BY_CHANCE = re.compile(r"\d+\.\d+(?:e-?\d+)?|[A-Za-z0-9_-]{16,}")


def carries_card(value: str | bytes, secret: str = "4111") -> bool:
    """Whether ``value`` holds ``secret`` (the card's first digits) outside its timings and
    ids: a float (``elapsed``) or a long token (a message's hex id, a nanosecond time) holds
    any four digits now and then by chance (a CI run once failed on an ``elapsed`` of
    0.0004111…), and a card's groups of four are neither."""
    text = value.decode() if isinstance(value, bytes) else value
    return secret in _BY_CHANCE.sub("#", text)
