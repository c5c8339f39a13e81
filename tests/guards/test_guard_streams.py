"""Streamed replies under guards (API.md §27): ``hold`` sends nothing of a reply before its
guards pass — every byte an SSE client got is read — and ``live`` shows it at once and
retracts it on a trip (``event: retract``); the terminal reprints."""

from __future__ import annotations

import asyncio
import io
import json
from typing import Any

import httpx
from guard_kit import HOSTILE, Streaming, carries_card

from convo import LinearTemplate, LoopTemplate, Runner, ToolingTemplate, UserTemplate
from convo.events import Event, ReplyRetracted, TextDelta
from convo.guards import Guard, pii
from convo.serve import create_app

TEMPLATE = LinearTemplate([LoopTemplate([UserTemplate(), ToolingTemplate([])])])
STREAM = {"Accept": "text/event-stream"}


def no_cards(value: str, ctx: Any) -> bool | str:
    return "4111" not in value or "a card number"


async def _streamed(guards: list[Any], said: str = "my card?") -> bytes:
    app = create_app(TEMPLATE, Streaming(HOSTILE), guards=guards)
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://test") as c:
        cid = (await c.post("/api/conversations", json={})).json()["id"]
        r = await c.post(f"/api/conversations/{cid}/messages", json={"content": said},
                         headers=STREAM)
        assert r.status_code == 200
        return r.content


def frames(raw: bytes) -> list[tuple[str, Any]]:
    out = []
    for block in raw.decode().split("\n\n"):
        if block.strip():
            event, data = block.split("\n", 1)
            out.append((event.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return out


def test_hold_never_sends_the_card_to_an_sse_client() -> None:
    for guards in ([Guard(no_cards, on="output", message="I can't share that.")],
                   [pii()]):
        raw = asyncio.run(_streamed(guards))
        assert not carries_card(raw) and b"1111 1111" not in raw
        kinds = [kind for kind, _ in frames(raw)]
        assert "retract" not in kinds
        if guards[0].action == "block":  # nothing of the blocked reply is streamed
            assert kinds == ["message", "message", "done"]
            assert frames(raw)[1][1]["content"] == "I can't share that."
            assert "original" not in frames(raw)[1][1]["metadata"]["guard"]
            assert b"original" not in raw
        else:  # the redacted reply comes as one delta, then its message
            assert kinds == ["message", "delta", "message", "done"]
            assert frames(raw)[1][1] == {"text": HOSTILE.replace("4111 1111 1111 1111",
                                                                  "[card]")}


def test_a_reply_that_passes_is_streamed_in_its_pieces_after_its_guards() -> None:
    raw = asyncio.run(_streamed([Guard(lambda v, c: True, on="output", name="ok")]))
    deltas = [data["text"] for kind, data in frames(raw) if kind == "delta"]
    assert "".join(deltas) == HOSTILE and len(deltas) == len(range(0, len(HOSTILE), 4))


def test_live_streams_at_once_and_retracts_on_a_trip() -> None:
    raw = asyncio.run(_streamed([Guard(no_cards, on="output", stream="live",
                                       message="I can't share that.")]))
    kinds = [kind for kind, _ in frames(raw)]
    assert kinds[0] == "message" and kinds[-3:] == ["retract", "message", "done"]
    assert set(kinds[1:-3]) == {"delta"}
    replacement = frames(raw)[-2][1]
    assert replacement["content"] == "I can't share that."
    assert frames(raw)[-3][1] == {"message_id": replacement["id"]}
    assert replacement["id"].startswith("msg_")


def test_the_run_events_of_hold_and_live() -> None:
    for stream, retracted in (("hold", 0), ("live", 1)):
        events: list[Event] = []
        Runner(Streaming(HOSTILE), LinearTemplate([UserTemplate("hi"), ToolingTemplate([])]),
               on_event=events.append,
               guards=[Guard(no_cards, on="output", stream=stream)]).run()
        deltas = "".join(e.text for e in events if isinstance(e, TextDelta))
        assert ("4111" in deltas) is (stream == "live")
        assert [e.index for e in events if isinstance(e, ReplyRetracted)] == [1] * retracted


def test_the_terminal_reprints_a_retracted_reply() -> None:
    from convo._terminal.printer import ConsolePrinter

    out = io.StringIO()
    printer = ConsolePrinter(out, fancy=False, markdown=False)
    Runner(Streaming(HOSTILE), LinearTemplate([UserTemplate("hi"), ToolingTemplate([])]),
           on_event=printer, guards=[Guard(no_cards, on="output", stream="live",
                                           message="I can't share that.")]).run()
    shown = out.getvalue()
    assert "(the reply above was withdrawn by a guard)\nAssistant: I can't share that.\n" in \
        shown
