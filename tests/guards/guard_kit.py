"""Shared by the guard tests: a model that streams a scripted reply in small pieces."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from convo import Message


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
