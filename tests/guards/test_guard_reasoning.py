"""A reply's reasoning under output guards (API.md §27), in one process: the readable text of
each provider's reasoning items is checked with the reply's text; under ``hold`` the reasoning
is said only when no guard trips on it; the reply keeps its items for the provider, marked.
(Served, on each store: tests/serve/test_guard_reasoning_served.py.)"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from convo import LinearTemplate, Message, Runner, ToolCall, ToolingTemplate, UserTemplate
from convo._reply import reasoning_text
from convo.events import Event, ReasoningDelta, TextDelta
from convo.guards import Guard
from convo.guards._marks import public
from convo.models._deltas import reasoning_callback
from convo.tools import tool

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


# -- a plain guard (checked by the run's pump where the reply comes in: ``at_call``) ----------

def plain_no_cards(value: str, ctx: Any) -> bool | str:
    return "4111" not in value or "a card number"


class Scripted:
    """Returns its replies in turn, each one's thinking streamed first; the thinking is kept in
    the reply's metadata unless ``returns`` is false (a fake that only streams it)."""

    def __init__(self, replies: list[Message], *, returns: bool = True) -> None:
        self.replies, self.returns = list(replies), returns

    def complete(self, messages: Sequence[Message], tools: Sequence[Any] = (), *,
                 on_delta: Any = None) -> Message:
        reply = self.replies.pop(0)
        think = reasoning_callback(on_delta)
        for item in reply.reasoning:
            if think is not None:
                think(item["thinking"])
        if reply.content and on_delta is not None:
            on_delta(reply.content)
        if not self.returns:
            metadata = {k: v for k, v in reply.metadata.items() if k != "reasoning"}
            return Message("assistant", reply.content, tool_calls=reply.tool_calls,
                           metadata=metadata)
        return reply

    async def acomplete(self, messages: Sequence[Message], tools: Sequence[Any] = (), *,
                        on_delta: Any = None) -> Message:
        return self.complete(messages, tools, on_delta=on_delta)


def _plain(model: Scripted, template: Any = None) -> tuple[list[Event], list[Message]]:
    events: list[Event] = []
    template = template or LinearTemplate([UserTemplate("hi"), ToolingTemplate([])])
    session = Runner(model, template, on_event=events.append,
                     guards=[Guard(plain_no_cards, on="output")]).run()
    return events, session.messages


def _said(events: list[Event]) -> list[tuple[str, str]]:
    return [(type(e).__name__, e.text) for e in events if isinstance(e, TextDelta | ReasoningDelta)]


def test_a_plain_guard_trips_on_held_reasoning_the_reply_returned() -> None:
    events, messages = _plain(Scripted([Message("assistant", "Noted.",
                                                metadata={"reasoning": [THINKING]})]))
    assert _said(events) == [("TextDelta", "Noted.")]
    assert messages[-1].reasoning == (THINKING,)
    assert messages[-1].metadata["guard"] == {"reasoning_withheld": True}


def test_a_plain_guard_trips_on_reasoning_only_streamed() -> None:
    # The reply returns no reasoning; what was streamed of it is checked.
    events, messages = _plain(Scripted([Message("assistant", "Noted.",
                                                metadata={"reasoning": [THINKING]})],
                                       returns=False))
    assert _said(events) == [("TextDelta", "Noted.")]
    assert messages[-1].metadata == {"guard": {"reasoning_withheld": True}}


@tool
def look(city: str) -> str:
    """The weather in a city."""
    return "sunny"


def test_a_plain_guard_checks_the_reasoning_of_a_reply_without_text() -> None:
    # A reply with only a tool call has no text to check, but its reasoning is checked.
    call = Message("assistant", "", tool_calls=(ToolCall("c1", "look", {"city": "Oslo"}),),
                   metadata={"reasoning": [THINKING]})
    events, messages = _plain(Scripted([call, Message("assistant", "Sunny.")]),
                              LinearTemplate([UserTemplate("hi"), ToolingTemplate([look])]))
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[1].metadata["guard"] == {"reasoning_withheld": True}
    assert messages[1].reasoning == (THINKING,)
    assert not any(isinstance(e, ReasoningDelta) for e in events)
    assert messages[3].metadata == {}


def test_a_plain_guard_passes_reasoning_without_a_find_and_it_is_said_first() -> None:
    thought = {**THINKING, "thinking": "A note."}
    events, messages = _plain(Scripted([Message("assistant", "Noted.",
                                                metadata={"reasoning": [thought]})]))
    assert _said(events) == [("ReasoningDelta", "A note."), ("TextDelta", "Noted.")]
    assert messages[-1].metadata == {"reasoning": [thought]}
