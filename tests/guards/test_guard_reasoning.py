"""A reply's reasoning under output guards (API.md §27), in one process: the readable text of
each provider's reasoning items is checked with the reply's text; under ``hold`` the reasoning
is said only when no guard trips on it; the reply keeps its items for the provider, marked.
(Served, on each store: tests/serve/test_guard_reasoning_served.py.)"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from convo import LinearTemplate, Message, Runner, ToolingTemplate, UserTemplate
from convo._reply import reasoning_text
from convo.events import Event, ReasoningDelta, TextDelta
from convo.guards import Guard
from convo.guards._marks import public
from convo.models._deltas import reasoning_callback

CARD = "4111 1111 1111 1111"
THINKING = {"type": "thinking", "thinking": f"Their card is {CARD}.", "signature": "sig"}


def test_the_readable_text_of_each_providers_reasoning() -> None:
    items = [{"type": "reasoning", "encrypted_content": "x",
              "summary": [{"type": "summary_text", "text": "One."}],
              "content": [{"type": "reasoning_text", "text": "Two."}]},
             {"type": "thinking", "thinking": "Three.", "signature": "s"},
             {"type": "redacted_thinking", "data": "opaque"},
             {"index": 0, "part": {"text": "Four.", "thought": True}},
             {"index": 1, "part": {"text": "not a thought"}}]
    assert reasoning_text({"reasoning": items}) == "One.\n\nTwo.\n\nThree.\n\nFour."
    assert reasoning_text({}) == ""


class Thinking:
    """Streams its thinking, then its text; returns both (the thinking as Anthropic's block)."""

    def __init__(self, thought: dict[str, Any]) -> None:
        self.thought = thought

    def complete(self, messages: Sequence[Message], tools: Sequence[Any] = (), *,
                 on_delta: Any = None) -> Message:
        think = reasoning_callback(on_delta)
        if think is not None:
            think(self.thought["thinking"])
        if on_delta is not None:
            on_delta("Noted.")
        return Message("assistant", "Noted.", metadata={"reasoning": [self.thought]})

    async def acomplete(self, messages: Sequence[Message], tools: Sequence[Any] = (), *,
                        on_delta: Any = None) -> Message:
        return self.complete(messages, tools, on_delta=on_delta)


async def no_cards(value: str, ctx: Any) -> bool | str:  # async: answered on the loop
    return "4111" not in value or "a card number"


def _run(thought: dict[str, Any]) -> tuple[list[Event], Message]:
    events: list[Event] = []
    runner = Runner(Thinking(thought), LinearTemplate([UserTemplate("hi"), ToolingTemplate([])]),
                    on_event=events.append, guards=[Guard(no_cards, on="output")])
    session = asyncio.run(runner.arun())
    return events, session.messages[-1]


def test_held_reasoning_a_guard_trips_on_is_never_said() -> None:
    events, reply = _run(THINKING)
    said = [(type(e).__name__, e.text) for e in events if isinstance(e, TextDelta | ReasoningDelta)]
    assert said == [("TextDelta", "Noted.")]
    assert reply.reasoning == (THINKING,)  # sent back to the provider as it sent it
    assert reply.metadata["guard"] == {"reasoning_withheld": True}
    assert public(reply) == {"role": "assistant", "content": "Noted.",
                             "metadata": {"guard": {"reasoning_withheld": True}}}


def test_held_reasoning_that_passes_is_said_first() -> None:
    thought = {**THINKING, "thinking": "A note."}
    events, reply = _run(thought)
    said = [(type(e).__name__, e.text) for e in events if isinstance(e, TextDelta | ReasoningDelta)]
    assert said == [("ReasoningDelta", "A note."), ("TextDelta", "Noted.")]
    assert reply.metadata == {"reasoning": [thought]}
