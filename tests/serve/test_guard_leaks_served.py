"""A redacted tool call is stored redacted (API.md §27: a redaction keeps no copy of the
original): on every store, the conversation a user or an operator reads back has the guard's
arguments, not the model's; neither the SSE bytes, nor the next model call, nor any event a
run's listeners hear (what a watcher such as convo.otel sees) has them. (The reply's own
text: tests/guards/test_guard_leaks.py.)"""

from __future__ import annotations

import json
from typing import Any

import pytest
from guard_kit import CARD, PAY, carries_card, pay, seen
from message_json import sse_events
from starlette.testclient import TestClient

from convo.events import Event
from convo.guards import pii
from convo.models import MockModel
from convo.serve import TokenTable, create_app
from convo.templates import LinearTemplate, LoopTemplate, ToolingTemplate, UserTemplate

USERS = TokenTable({"t-ann": {"user": "ann"}, "t-olga": {"user": "olga", "role": "operator"}})
ANN = {"Authorization": "Bearer t-ann"}
OLGA = {"Authorization": "Bearer t-olga"}


def test_a_redacted_tool_call_is_stored_redacted(store_url: str, heard: list[Event]) -> None:
    seen.clear()
    model = MockModel([PAY, "Done."])
    app = create_app(LinearTemplate([LoopTemplate([UserTemplate(), ToolingTemplate([pay])])]),
                     model, store=store_url, auth=USERS, guards=[pii(on="tool_call")])
    with TestClient(app) as c:
        cid = c.post("/api/conversations", json={}, headers=ANN).json()["id"]
        r = c.post(f"/api/conversations/{cid}/messages", json={"content": "pay"},
                   headers={**ANN, "Accept": "text/event-stream"})
        assert r.status_code == 200 and not carries_card(r.content)
        bodies: dict[str, Any] = {}
        for name, who in (("user", ANN), ("operator", OLGA)):
            got = c.get(f"/api/conversations/{cid}", headers=who)
            assert got.status_code == 200
            bodies[name] = got.json()
    assert seen == ["[card]"]
    for body in bodies.values():
        assert not carries_card(json.dumps(body))
        call = body["messages"][1]["tool_calls"][0]
        assert call["arguments"] == {"card": "[card]", "amount": 5}
        assert body["messages"][2]["metadata"]["guard"] == {
            "name": "pii", "action": "redact", "reason": "redacted"}
    assert not carries_card(json.dumps([m.to_dict() for m in model.calls[1].messages]))
    assert [type(e).__name__ for e in heard if carries_card(repr(e))] == []


# -- a blocked call: its arguments are withheld (a guard judged them) -------------------------


def _store_json(store: Any, store_url: str, cid: str) -> str:
    """Everything the store holds of the conversation, as JSON (read back from the store)."""
    import asyncio

    from convo.serve._stores import open_store

    async def read() -> Any:
        other = store if store_url == "memory" else open_store(store_url)
        if other is not store:
            await other.open()
        try:
            return await other.load(cid)
        finally:
            if other is not store:
                await other.close()

    stored = asyncio.run(read())
    return json.dumps({"messages": [m.to_dict() for m in stored.messages],
                       "state": stored.state, "internal": stored.internal,
                       "outcome": stored.outcome}, ensure_ascii=False)


def _served(store_url: str, model: Any, guards: list[Any]) -> tuple[bytes, dict[str, Any], str]:
    """One turn ("pay") over SSE; the SSE bytes, the conversation as the operator reads it,
    and what the store holds."""
    from convo.serve._stores import open_store

    store = open_store(store_url)
    app = create_app(LinearTemplate([LoopTemplate([UserTemplate(), ToolingTemplate([pay])])]),
                     model, store=store, auth=USERS, guards=guards)
    with TestClient(app) as c:
        cid = c.post("/api/conversations", json={}, headers=ANN).json()["id"]
        r = c.post(f"/api/conversations/{cid}/messages", json={"content": "pay"},
                   headers={**ANN, "Accept": "text/event-stream"})
        assert r.status_code == 200
        body = c.get(f"/api/conversations/{cid}", headers=OLGA).json()
        assert c.get(f"/api/conversations/{cid}", headers=ANN).json()["messages"] == \
            body["messages"]  # nothing was kept for operators only
    return r.content, body, _store_json(store, store_url, cid)


def test_a_blocked_tool_calls_arguments_are_nowhere(store_url: str, heard: list[Event]) -> None:
    seen.clear()
    model = MockModel([PAY, "Done."])
    raw, body, stored = _served(store_url, model, [pii(on="tool_call", action="block")])
    assert seen == []  # not run
    assert not any(map(carries_card, (raw, stored, json.dumps(body))))
    reply, result = body["messages"][1], body["messages"][2]
    assert reply["tool_calls"] == [{"id": "c1", "name": "pay", "arguments": {}}]
    assert reply["metadata"]["guard"] == {"withheld": ["c1"]}
    assert result["content"] == "Blocked: found a card number"
    assert result["metadata"]["guard"] == {
        "name": "pii", "action": "block", "reason": "found a card number"}
    sent = [e for e in sse_events(raw) if e[0] == "message"]
    assert [d["role"] for _, d in sent] == ["user", "assistant", "tool", "assistant"]
    assert sent[1][1]["tool_calls"] == [{"id": "c1", "name": "pay", "arguments": {}}]
    assert not carries_card(json.dumps([m.to_dict() for m in model.calls[1].messages]))
    assert [type(e).__name__ for e in heard if carries_card(repr(e))] == []


# -- the text tool format: the call's text is cut from the reply, the stored call is what goes on


def _text_call(name: str, arguments: dict[str, Any]) -> str:
    return ('<tool_call>\n' + json.dumps({"name": name, "arguments": arguments}) +
            '\n</tool_call>')


@pytest.mark.parametrize("action", ["redact", "block"])
def test_a_text_format_call_guarded_leaves_no_copy(store_url: str, action: str,
                                                   heard: list[Event]) -> None:
    from convo import OpenAIModel
    from convo.testing import OpenAIServer

    seen.clear()
    with OpenAIServer() as server:
        server.add("Paying now.\n" + _text_call("pay", {"card": CARD, "amount": 5}), "Done.")
        with OpenAIModel("m", base_url=server.base_url, max_retries=0, stream=True,
                         tool_format="text") as model:
            raw, body, stored = _served(store_url, model, [pii(on="tool_call", action=action)])
        request = server.requests[1]
    second = json.dumps(request, ensure_ascii=False)
    assert not any(map(carries_card, (raw, stored, json.dumps(body))))
    assert not carries_card(second)  # the next request renders the stored call as text
    reply = body["messages"][1]
    assert reply["content"] == "Paying now."
    arguments = {"card": "[card]", "amount": 5} if action == "redact" else {}
    assert [c["arguments"] for c in reply["tool_calls"]] == [arguments]
    assert [m for m in request["messages"] if m["role"] == "assistant"] == [
        {"role": "assistant", "content": "Paying now.\n" + _text_call("pay", arguments)}]
    assert seen == (["[card]"] if action == "redact" else [])
    deltas = "".join(d["text"] for e, d in sse_events(raw) if e == "delta")
    assert deltas == "Paying now.\nDone."  # the call's block is never streamed
    assert [type(e).__name__ for e in heard if carries_card(repr(e))] == []
