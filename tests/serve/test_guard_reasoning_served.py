"""A reply's reasoning under output guards (API.md §27): it is put to the same guards as the
text; under ``hold`` it is said only once they pass, and when one trips on it no front end is
shown it (not streamed, not in the conversation read back), while the store keeps it as the
provider sent it and the next model call sends it back. Over the Responses API's fake, on each
store."""

from __future__ import annotations

import json
from typing import Any

from guard_kit import carries_card
from message_json import sse_events
from starlette.testclient import TestClient

from convo import Message, OpenAIModel
from convo.guards import pii
from convo.serve import create_app
from convo.templates import AssistantTemplate, LinearTemplate, LoopTemplate, UserTemplate
from convo.testing import OpenAIServer

CARD = "4111 1111 1111 1111"
USAGE = {"prompt_tokens": 2, "completion_tokens": 1, "total_tokens": 3}
TEMPLATE = LinearTemplate([LoopTemplate([UserTemplate(), AssistantTemplate()])])


def _thought(text: str) -> dict[str, Any]:
    return {"id": "rs_1", "type": "reasoning", "encrypted_content": "opaque-1",
            "summary": [{"type": "summary_text", "text": text}]}


def _two_turns(store_url: str, thought: dict[str, Any], guard: Any
               ) -> tuple[bytes, dict[str, Any], list[Message], list[dict[str, Any]]]:
    """"hello" over SSE (the reply reasons with ``thought``), then "more": the first turn's
    SSE bytes, the conversation read back, the stored messages, the second request's input."""
    import asyncio

    from convo.serve._stores import open_store

    store = open_store(store_url)
    with OpenAIServer([Message("assistant", "Hi!", metadata={"reasoning": [thought]}),
                       "Still here."]) as server, OpenAIModel(
            "o4-mini", base_url=server.base_url, api="responses", stream=True,
            reasoning={"effort": "low"}, max_retries=0) as model:
        with TestClient(create_app(TEMPLATE, model, store=store, guards=[guard])) as c:
            cid = c.post("/api/conversations", json={}).json()["id"]
            r = c.post(f"/api/conversations/{cid}/messages", json={"content": "hello"},
                       headers={"Accept": "text/event-stream"})
            assert r.status_code == 200
            body = c.get(f"/api/conversations/{cid}").json()
            again = c.post(f"/api/conversations/{cid}/messages", json={"content": "more"})
            assert again.status_code == 200, again.text
        other = store if store_url == "memory" else open_store(store_url)

        async def read() -> list[Message]:
            if other is not store:
                await other.open()
            try:
                return list((await other.load(cid)).messages)
            finally:
                if other is not store:
                    await other.close()

        stored = asyncio.run(read())
        return r.content, body, list(stored), server.requests[1]["input"]


def test_held_reasoning_a_guard_trips_on_reaches_no_client(store_url: str) -> None:
    thought = _thought(f"The user's card is {CARD}.")
    raw, body, stored, sent = _two_turns(store_url, thought, pii(on="output"))
    assert not carries_card(raw)
    assert not carries_card(json.dumps(body))
    assert [e for e, _ in sse_events(raw)] == ["message", "delta", "message", "done"]
    reply = body["messages"][1]
    assert (reply["content"], reply["metadata"]) == ("Hi!", {
        "finish_reason": "stop", "usage": USAGE, "guard": {"reasoning_withheld": True}})
    assert stored[1].reasoning == (thought,)  # kept for the provider, as it sent it
    assert stored[1].metadata["guard"] == {"reasoning_withheld": True}
    assert sent == [{"role": "user", "content": "hello"}, thought,
                    {"role": "assistant", "content": "Hi!"},
                    {"role": "user", "content": "more"}]


def test_held_reasoning_that_passes_is_said_before_the_text(store_url: str) -> None:
    thought = _thought("A greeting.")
    raw, body, stored, sent = _two_turns(store_url, thought, pii(on="output"))
    events = sse_events(raw)
    kinds = [e for e, _ in events]
    said = kinds.count("reasoning")
    assert said >= 1  # (the fake streams the summary in pieces)
    assert kinds == ["message", *["reasoning"] * said, "delta", "message", "done"]
    assert "".join(d["text"] for e, d in events if e == "reasoning") == "A greeting."
    assert [d for e, d in events if e == "delta"] == [{"text": "Hi!"}]
    assert body["messages"][1]["metadata"] == {"finish_reason": "stop", "usage": USAGE,
                                               "reasoning": [thought]}
    assert "guard" not in stored[1].metadata
    assert sent[1] == thought


def test_live_reasoning_a_guard_trips_on_is_retracted(store_url: str) -> None:
    thought = _thought(f"The user's card is {CARD}.")
    raw, body, stored, sent = _two_turns(store_url, thought, pii(on="output", stream="live"))
    events = sse_events(raw)
    kinds = [e for e, _ in events]
    said = kinds.count("reasoning")
    assert said >= 1 and b"4111" in raw  # shown as it came: live
    assert kinds == ["message", *["reasoning"] * said, "delta", "retract", "message", "done"]
    assert not carries_card(json.dumps(body))
    assert not carries_card(json.dumps([d for e, d in events if e in ("message", "done")]))
    assert stored[1].reasoning == (thought,)
    assert sent[1] == thought
