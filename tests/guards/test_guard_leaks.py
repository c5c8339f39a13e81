"""What a guard redacts is nowhere else (API.md §27: "redact keeps no copy of the original
anywhere"): no run event carries it — a model call's end says the reply as stored, after its
guards — and a redacted tool call's arguments replace the model's in the stored reply, so
neither the transcript nor the next model call nor any event has them."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from guard_kit import CARD, HOSTILE, PAY, Streaming, carries_card, pay, seen
from starlette.testclient import TestClient

from convo import Runner, ToolCall
from convo.events import (
    Event,
    GuardTripped,
    MessageAdded,
    ModelCallEnded,
    ModelCallStarted,
    ToolCallStarted,
)
from convo.guards import Guard, matches, pii
from convo.models import MockModel
from convo.serve import create_app
from convo.templates import LinearTemplate, LoopTemplate, ToolingTemplate, UserTemplate

HI = LinearTemplate([UserTemplate("hi"), ToolingTemplate([])])


def leaked(events: list[Event], secret: str = "4111") -> list[str]:
    """The names of the events whose fields hold ``secret`` anywhere."""
    return [type(e).__name__ for e in events if carries_card(repr(e), secret)]


@pytest.mark.parametrize("how", ["run", "arun"])
def test_no_event_of_a_run_carries_a_redacted_card(how: str) -> None:
    events: list[Event] = []
    runner = Runner(Streaming(HOSTILE), HI, on_event=events.append, guards=[pii()])
    session = runner.run() if how == "run" else asyncio.run(runner.arun())
    reply = session.messages[-1]
    assert reply.text == HOSTILE.replace(CARD, "[card]")
    assert leaked(events) == []
    # The model call's end says the reply as stored, right before it is added (§14's order).
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["MessageAdded", "ModelCallStarted", "GuardTripped", "TextDelta",
                     "ModelCallEnded", "MessageAdded", "TurnEnded", "RunEnded"]
    [ended] = [e for e in events if isinstance(e, ModelCallEnded)]
    assert ended.message == reply and ended.call_number == 1


def test_a_served_redacted_card_is_in_no_sse_byte_and_no_event(heard: list[Event]) -> None:
    template = LinearTemplate([LoopTemplate([UserTemplate(), ToolingTemplate([])])])
    app = create_app(template, Streaming(HOSTILE), guards=[pii()])
    with TestClient(app) as c:
        cid = c.post("/api/conversations", json={}).json()["id"]
        r = c.post(f"/api/conversations/{cid}/messages", json={"content": "my card?"},
                   headers={"Accept": "text/event-stream"})
        assert r.status_code == 200
        raw = r.content
    redacted = HOSTILE.replace(CARD, "[card]")
    assert not carries_card(raw) and json.dumps(redacted).encode() in raw
    assert leaked(heard) == []
    [ended] = [e for e in heard if isinstance(e, ModelCallEnded)]
    assert ended.message.text == redacted


def test_a_blocked_replys_call_ends_with_its_replacement() -> None:
    events: list[Event] = []
    session = Runner(MockModel([f"card {CARD}"]), HI, on_event=events.append,
                     guards=[matches("4111", message="I can't share that.")]).run()
    [ended] = [e for e in events if isinstance(e, ModelCallEnded)]
    assert ended.message == session.messages[-1]
    assert ended.message.text == "I can't share that."
    assert [type(e) for e in events][1:5] == [ModelCallStarted, GuardTripped, ModelCallEnded,
                                              MessageAdded]


def test_a_reply_without_guards_ends_its_call_as_before() -> None:
    events: list[Event] = []
    session = Runner(Streaming("plain words"), HI, on_event=events.append).run()
    assert [type(e).__name__ for e in events] == [
        "MessageAdded", "ModelCallStarted", "TextDelta", "TextDelta", "TextDelta",
        "ModelCallEnded", "MessageAdded", "TurnEnded", "RunEnded"]
    [ended] = [e for e in events if isinstance(e, ModelCallEnded)]
    assert ended.message == session.messages[-1]


# -- a redacted tool call -----------------------------------------------------------------------

@pytest.mark.parametrize("how", ["run", "arun"])
@pytest.mark.parametrize("runner_level", [True, False])
def test_a_redacted_tool_call_leaves_no_copy_of_its_arguments(how: str,
                                                              runner_level: bool) -> None:
    seen.clear()
    guard = pii(on="tool_call")
    model = MockModel([PAY, "Done."])
    events: list[Event] = []
    turn = ToolingTemplate([pay], guards=() if runner_level else [guard])
    runner = Runner(model, LinearTemplate([UserTemplate("pay"), turn]),
                    on_event=events.append, guards=[guard] if runner_level else ())
    session = runner.run() if how == "run" else asyncio.run(runner.arun())
    assert seen == ["[card]"]
    stored = session.messages[1]
    assert stored.tool_calls == (ToolCall("c1", "pay", {"card": "[card]", "amount": 5}),)
    assert session.messages[2].metadata["guard"] == {"name": "pii", "action": "redact",
                                                     "reason": "redacted"}
    assert not carries_card(session.to_json())
    assert not carries_card(json.dumps([m.to_dict() for m in model.calls[1].messages]))
    assert leaked(events) == []
    [started] = [e for e in events if isinstance(e, ToolCallStarted)]
    assert started.call == stored.tool_calls[0]


PAYING = LinearTemplate([UserTemplate("pay"), ToolingTemplate([pay])])
TWO_TURNS = LinearTemplate([UserTemplate("pay"), ToolingTemplate([pay]), UserTemplate("and?"),
                            ToolingTemplate([])])


def test_a_resumed_run_replays_a_redacted_call_as_stored() -> None:
    seen.clear()
    first = Runner(MockModel([PAY, "Done."]), PAYING, guards=[pii(on="tool_call")]).run()
    again = MockModel(["Nothing else."])
    resumed = Runner(again, TWO_TURNS, guards=[pii(on="tool_call")]).resume(first)
    assert seen == ["[card]"]  # the tool is not run again
    assert resumed.messages[:4] == first.messages
    assert [m.text for m in resumed.messages[4:]] == ["and?", "Nothing else."]
    assert len(again.calls) == 1
    assert not carries_card(json.dumps([m.to_dict() for m in again.calls[0].messages]))


def test_a_blocked_call_is_blocked_again_on_resume() -> None:
    def no_cards(value: dict[str, Any], ctx: Any) -> bool | str:
        return "4111" not in value.get("card", "") or "a card number"

    guards = [Guard(no_cards, on="tool_call")]
    seen.clear()
    first = Runner(MockModel([PAY, "Could not."]), PAYING, guards=guards).run()
    assert first.messages[2].content == "Blocked: a card number"
    resumed = Runner(MockModel(["Bye."]), TWO_TURNS, guards=guards).resume(first)
    assert seen == []
    assert resumed.messages[:4] == first.messages
