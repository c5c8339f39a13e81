"""How a streaming model hands what it streams to the runner: text, and reasoning apart.

A model gets one ``on_delta`` callback (the ``Model`` protocol) and calls it with reply text.
A model that also streams reasoning (``OpenAIModel(api="responses")``: a reasoning model's
summaries) looks for a ``reasoning`` callback on it (``reasoning_callback``); ``Deltas`` is
such a callback, so a runner that passes one gets both, and every other model is unaffected.
``ReasoningDelta`` (``convo.events``) is the event a runner makes of each piece of reasoning.
"""

from __future__ import annotations

from ..events import ReasoningDelta
from ._base import DeltaCallback

__all__ = ["Deltas", "ReasoningDelta", "hand_on", "reasoning_callback"]


class Deltas:
    """An ``on_delta`` callback that also takes streamed reasoning.

    Called with text, it hands it to ``text``, so every model can use it as a plain
    ``on_delta``; a model that streams reasoning hands that to ``reasoning`` instead of mixing
    it into the reply.
    """

    __slots__ = ("reasoning", "text")

    def __init__(self, text: DeltaCallback, reasoning: DeltaCallback | None = None) -> None:
        self.text = text
        self.reasoning = reasoning

    def __call__(self, text: str) -> None:
        self.text(text)


def reasoning_callback(on_delta: DeltaCallback | None) -> DeltaCallback | None:
    """Where a model sends streamed reasoning: ``on_delta``'s ``reasoning``, if it has one."""
    reasoning = getattr(on_delta, "reasoning", None)
    return reasoning if callable(reasoning) else None


def hand_on(pieces: tuple[str, str], on_delta: DeltaCallback | None) -> None:
    """A streamed piece of reply text and of reasoning (either may be empty), each to its
    callback: the text to ``on_delta``, the reasoning to its ``reasoning``."""
    text, reasoning = pieces
    if text and on_delta is not None:
        on_delta(text)
    if reasoning:
        said = reasoning_callback(on_delta)
        if said is not None:
            said(reasoning)
