"""A redacted tool call is stored redacted (API.md §27: a redaction keeps no copy of the
original): on every store, the conversation a user or an operator reads back has the guard's
arguments, not the model's; neither the SSE bytes, nor the next model call, nor any event a
run's listeners hear (what a watcher such as convo.otel sees) has them. (The reply's own
text: tests/guards/test_guard_leaks.py.)"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from convo import Message, ToolCall
from convo._run.state import watch_runs
from convo.events import Event
from convo.guards import pii
from convo.models import MockModel
from convo.serve import TokenTable, create_app
from convo.templates import LinearTemplate, LoopTemplate, ToolingTemplate, UserTemplate
from convo.tools import tool

CARD = "4111 1111 1111 1111"
USERS = TokenTable({"t-ann": {"user": "ann"}, "t-olga": {"user": "olga", "role": "operator"}})
ANN = {"Authorization": "Bearer t-ann"}
OLGA = {"Authorization": "Bearer t-olga"}


@pytest.fixture
def heard() -> Iterator[list[Event]]:
    """Every event of every run started in the test (as a watcher hears them)."""
    events: list[Event] = []
    stop = watch_runs(lambda state: events.append)
    try:
        yield events
    finally:
        stop()


seen: list[str] = []


@tool
def pay(card: str, amount: int) -> str:
    """Charge a card."""
    seen.append(card)
    return f"charged {amount}"


PAY = Message("assistant", "", tool_calls=(ToolCall("c1", "pay", {"card": CARD, "amount": 5}),))


def test_a_redacted_tool_call_is_stored_redacted(store_url: str, heard: list[Event]) -> None:
    seen.clear()
    model = MockModel([PAY, "Done."])
    app = create_app(LinearTemplate([LoopTemplate([UserTemplate(), ToolingTemplate([pay])])]),
                     model, store=store_url, auth=USERS, guards=[pii(on="tool_call")])
    with TestClient(app) as c:
        cid = c.post("/api/conversations", json={}, headers=ANN).json()["id"]
        r = c.post(f"/api/conversations/{cid}/messages", json={"content": "pay"},
                   headers={**ANN, "Accept": "text/event-stream"})
        assert r.status_code == 200 and b"4111" not in r.content
        bodies: dict[str, Any] = {}
        for name, who in (("user", ANN), ("operator", OLGA)):
            got = c.get(f"/api/conversations/{cid}", headers=who)
            assert got.status_code == 200
            bodies[name] = got.json()
    assert seen == ["[card]"]
    for body in bodies.values():
        assert "4111" not in json.dumps(body)
        call = body["messages"][1]["tool_calls"][0]
        assert call["arguments"] == {"card": "[card]", "amount": 5}
        assert body["messages"][2]["metadata"]["guard"] == {
            "name": "pii", "action": "redact", "reason": "redacted"}
    assert "4111" not in json.dumps([m.to_dict() for m in model.calls[1].messages])
    assert [type(e).__name__ for e in heard if "4111" in repr(e)] == []
