"""Output guards on the AG-UI and AI SDK faces (API.md §24, §27): under ``stream="hold"`` no
byte of a blocked or redacted reply reaches either client; under ``stream="live"`` the reply
is streamed at once and a trip retracts it in each protocol's own words — AG-UI ends the text
message, says ``CUSTOM`` ``convo.retract`` and corrects the client's messages with
``MESSAGES_SNAPSHOT``; the AI SDK ends the text part, marks it with a ``data-convo-retract``
part and sends the replacement as a text part of its own. Every event is parsed strictly by
``ag_ui.core``, every AG-UI stream passes ``ag-ui-validate``, and the real clients
(``@ag-ui/client``'s ``HttpAgent``, the ``ai`` package's reader) read the streams."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from agui_kit import post_run, run_input, types, validate
from agui_kit import user as agui_user
from aisdk_kit import chat, parts, serving
from node_clients import run_node
from starlette.testclient import TestClient

from convo import LinearTemplate, LoopTemplate, Message, ToolingTemplate, UserTemplate
from convo.guards import Guard, pii
from convo.models._base import DeltaCallback, SyncModel, ToolSchemas
from convo.serve import create_app

HOSTILE = "Sure! Your card is 4111 1111 1111 1111, expiry 12/29. Anything else?"
CARD = ("4111", "1111 1111")
SORRY = "I can't share that."
TEMPLATE = LinearTemplate([LoopTemplate([UserTemplate(), ToolingTemplate([])])])


class Streaming(SyncModel):
    """Streams ``HOSTILE`` in pieces of four characters."""

    def complete(self, messages: Sequence[Message], tools: ToolSchemas = (), *,
                 on_delta: DeltaCallback | None = None) -> Message:
        if on_delta is not None:
            for i in range(0, len(HOSTILE), 4):
                on_delta(HOSTILE[i:i + 4])
        return Message("assistant", HOSTILE)


def no_cards(value: str, ctx: Any) -> bool | str:
    return "4111" not in value or "a card number"


def blocking(stream: str) -> list[Guard]:
    return [Guard(no_cards, on="output", stream=stream, message=SORRY)]


HELD = {"block": (blocking("hold"), SORRY),
        "redact": ([pii()], HOSTILE.replace("4111 1111 1111 1111", "[card]"))}


def app(guards: list[Guard]) -> Any:
    return create_app(TEMPLATE, Streaming(), guards=guards)


def agui_raw(guards: list[Guard]) -> tuple[str, list[dict[str, Any]]]:
    """Every byte of one AG-UI run, and its events (each parsed strictly)."""
    body = run_input("t", "r1", [agui_user("u1", "my card?")])
    with TestClient(app(guards)) as client:
        raw = client.post("/agui", json=body).text
        events = post_run(client, run_input("t2", "r1", [agui_user("u1", "my card?")]))
    return raw, events


def aisdk_raw(guards: list[Guard]) -> str:
    body = {"id": "c", "trigger": "submit-message", "messages": [
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "my card?"}]}]}
    with TestClient(app(guards)) as client:
        answer = client.post("/ai-sdk/chat", json=body)
    assert answer.status_code == 200
    return answer.text


@pytest.mark.parametrize("action", sorted(HELD))
def test_hold_sends_no_byte_of_the_card_over_agui(action: str) -> None:
    guards, shown = HELD[action]
    raw, events = agui_raw(guards)
    assert not any(card in raw for card in CARD)
    assert "original" not in raw and "convo.retract" not in raw
    assert validate(events) == []
    assert [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"] == [shown]


@pytest.mark.parametrize("action", sorted(HELD))
def test_hold_sends_no_byte_of_the_card_over_the_ai_sdk(action: str) -> None:
    guards, shown = HELD[action]
    raw = aisdk_raw(guards)
    assert not any(card in raw for card in CARD)
    assert "original" not in raw and "retract" not in raw
    chunks = [json.loads(line[6:]) for line in raw.split("\n") if line.startswith("data: {")]
    assert [c["delta"] for c in chunks if c["type"] == "text-delta"] == [shown]


def test_live_retracts_over_agui_with_a_custom_event_and_a_messages_snapshot() -> None:
    _, events = agui_raw(blocking("live"))
    assert validate(events) == []
    streamed = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert streamed == HOSTILE  # live: shown at once
    (start,) = [e for e in events if e["type"] == "TEXT_MESSAGE_START"]
    reply_id = start["messageId"]
    tail = events[types(events).index("TEXT_MESSAGE_END"):]
    assert tail == [
        {"type": "TEXT_MESSAGE_END", "messageId": reply_id},
        {"type": "CUSTOM", "name": "convo.retract", "value": {"messageId": reply_id}},
        {"type": "MESSAGES_SNAPSHOT", "messages": [
            {"id": "u1", "role": "user", "content": "my card?"},
            {"id": reply_id, "role": "assistant", "content": SORRY}]},
        tail[-1]]
    assert tail[-1]["type"] == "RUN_FINISHED"


def test_live_retracts_over_the_ai_sdk_with_a_data_part() -> None:
    raw = aisdk_raw(blocking("live"))
    chunks = [json.loads(line[6:]) for line in raw.split("\n") if line.startswith("data: {")]
    reply_id = chunks[0]["messageId"]
    kinds = [c["type"] for c in chunks]
    assert kinds[:3] == ["start", "start-step", "text-start"]
    assert "".join(c["delta"] for c in chunks[:kinds.index("text-end")]
                   if c["type"] == "text-delta") == HOSTILE
    assert chunks[kinds.index("text-end"):] == [
        {"type": "text-end", "id": reply_id},
        {"type": "data-convo-retract", "id": reply_id, "data": {"messageId": reply_id}},
        {"type": "text-start", "id": reply_id},
        {"type": "text-delta", "id": reply_id, "delta": SORRY},
        {"type": "text-end", "id": reply_id},
        {"type": "finish-step"}, {"type": "finish", "finishReason": "stop"}]


AGENT = """
import { HttpAgent } from "@ag-ui/client";
const [url] = process.argv.slice(2);
const agent = new HttpAgent({ url: url + "/agui", threadId: "t" });
agent.addMessage({ id: "u1", role: "user", content: "my card?" });
const custom = [];
await agent.runAgent({ runId: "r1" }, { onCustomEvent: ({ event }) => { custom.push(event); } });
console.log(JSON.stringify({ messages: agent.messages, custom }));
"""


@pytest.mark.e2e
def test_httpagent_holds_only_the_replacement_after_a_live_retract() -> None:
    with serving(app(blocking("live"))) as url:
        found = run_node(AGENT, url)
    assert [(m["role"], m["content"]) for m in found["messages"]] == [
        ("user", "my card?"), ("assistant", SORRY)]
    assert [c["name"] for c in found["custom"]] == ["convo.retract"]
    assert not any(card in json.dumps(found) for card in CARD[:1])


@pytest.mark.e2e
@pytest.mark.parametrize("action", sorted(HELD))
def test_the_ai_reader_gets_no_byte_of_the_card_under_hold(action: str) -> None:
    guards, shown = HELD[action]
    with serving(app(guards)) as url:
        found = chat(url, "c", {"say": ["u1", "my card?"]})
    (run,) = found["runs"]
    assert run["errors"] == [] and not any(card in json.dumps(found) for card in CARD)
    assert parts(run["message"]) == [("step-start",), ("text", shown)]


@pytest.mark.e2e
def test_the_ai_reader_reads_a_live_retract() -> None:
    with serving(app(blocking("live"))) as url:
        found = chat(url, "c", {"say": ["u1", "my card?"]})
    (run,) = found["runs"]
    assert run["errors"] == []
    message = run["message"]
    assert parts(message) == [("step-start",), ("text", HOSTILE), ("data-convo-retract",),
                              ("text", SORRY)]
    assert message["parts"][2] == {"type": "data-convo-retract", "id": message["id"],
                                   "data": {"messageId": message["id"]}}
