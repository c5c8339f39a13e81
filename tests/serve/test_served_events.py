"""The one stream of served events (API.md §24's first paragraph): a turn emits typed events
(``convo.serve._events``) and convo's own SSE (§9) is one encoder of them, unchanged on the
wire byte for byte."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from message_json import SERVER_ID, unnumbered_text
from starlette.testclient import TestClient
from weather_tools import chat_loop

from convo import Message, ToolCall, tool
from convo.models._base import DeltaCallback, SyncModel, ToolSchemas
from convo.models._deltas import reasoning_callback
from convo.serve import create_app
from convo.serve._events import (
    Encoder,
    ServedEvent,
    Sink,
    ToolCallStarted,
    ToolResult,
    TurnEnded,
    TurnFailed,
)


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}"


class Streaming(SyncModel):
    """Thinks aloud, calls ``weather``, then answers in two streamed pieces."""

    def complete(self, messages: Sequence[Message], tools: ToolSchemas = (), *,
                 on_delta: DeltaCallback | None = None) -> Message:
        think = reasoning_callback(on_delta)
        if messages[-1].role == "tool":
            for piece in ("It is ", "sunny."):
                if on_delta is not None:
                    on_delta(piece)
            return Message("assistant", "It is sunny.")
        if think is not None:
            think("The user wants the weather.")
        return Message("assistant", "", tool_calls=[
            ToolCall("call_1", "weather", {"city": "Oslo"})])


TEMPLATE = chat_loop(weather)

SSE = (
    'event: message\ndata: {{"role": "user", "content": "Weather in Oslo?"}}\n\n'
    'event: reasoning\ndata: {{"text": "The user wants the weather."}}\n\n'
    'event: message\ndata: {{"role": "assistant", "content": "", "tool_calls": [{{"id": '
    '"call_1", "name": "weather", "arguments": {{"city": "Oslo"}}}}]}}\n\n'
    'event: message\ndata: {{"role": "tool", "content": "Sunny in Oslo", "tool_call_id": '
    '"call_1", "name": "weather"}}\n\n'
    'event: delta\ndata: {{"text": "It is "}}\n\n'
    'event: delta\ndata: {{"text": "sunny."}}\n\n'
    'event: message\ndata: {{"role": "assistant", "content": "It is sunny."}}\n\n'
    'event: done\ndata: {{"id": "{cid}", "status": "waiting", "messages": [{{"role": '
    '"system", "content": "Be brief."}}, {{"role": "user", "content": "Weather in Oslo?"}}, '
    '{{"role": "assistant", "content": "", "tool_calls": [{{"id": "call_1", "name": '
    '"weather", "arguments": {{"city": "Oslo"}}}}]}}, {{"role": "tool", "content": "Sunny in '
    'Oslo", "tool_call_id": "call_1", "name": "weather"}}, {{"role": "assistant", "content": '
    '"It is sunny."}}], "state": {{}}, "outcome": null, "waiting_for": {{"type": "user", '
    '"prompt": null}}, "parent": null, "queued": [], "added": [{{"role": "user", '
    '"content": "Weather in '
    'Oslo?"}}, {{"role": '
    '"assistant", "content": "", "tool_calls": [{{"id": "call_1", "name": "weather", '
    '"arguments": {{"city": "Oslo"}}}}]}}, {{"role": "tool", "content": "Sunny in Oslo", '
    '"tool_call_id": "call_1", "name": "weather"}}, {{"role": "assistant", "content": "It is '
    'sunny."}}]}}\n\n')


def test_the_sse_stream_of_a_turn_is_unchanged_byte_for_byte() -> None:
    with TestClient(create_app(TEMPLATE, Streaming())) as client:
        cid = client.post("/api/conversations", json={}).json()["id"]
        with client.stream("POST", f"/api/conversations/{cid}/messages",
                           json={"content": "Weather in Oslo?"},
                           headers={"Accept": "text/event-stream"}) as stream:
            raw = b"".join(stream.iter_bytes())
            headers = dict(stream.headers)
    text = raw.decode("utf-8")  # the same but for the stored messages' ids (API.md §24)
    assert len(SERVER_ID.findall(text)) == 4 + 5 + 4  # the events, messages and added
    assert unnumbered_text(text) == SSE.format(cid=cid)
    assert (headers["content-type"], headers["cache-control"]) == (
        "text/event-stream; charset=utf-8", "no-store")


def test_a_turn_emits_the_typed_served_events_in_order() -> None:
    from convo import Runner
    from convo.serve._engine import Engine
    from convo.serve._events import (
        MessageCommitted,
        ReasoningDelta,
        TextDelta,
        ToolCallArguments,
        ToolCallEnded,
        WaitingFor,
    )
    from convo.serve._stores import MemoryStore

    async def main() -> list[ServedEvent]:
        engine = Engine(Runner(Streaming(), TEMPLATE, raise_errors=False), MemoryStore())
        _, body = await engine.create({}, None)
        seen: list[ServedEvent] = []
        async with engine.turn(body["id"]) as live:
            await engine.message(live, "Weather in Oslo?", seen.append)
        return seen

    seen = asyncio.run(main())
    call = ToolCall("call_1", "weather", {"city": "Oslo"})
    asked = Message("assistant", "", tool_calls=[call])
    result = Message("tool", "Sunny in Oslo", tool_call_id="call_1", name="weather")
    assert seen == [
        MessageCommitted(1, Message("user", "Weather in Oslo?")),
        ReasoningDelta("The user wants the weather."),
        MessageCommitted(2, asked),
        ToolCallStarted(call, 2), ToolCallArguments("call_1", '{"city": "Oslo"}'),
        ToolCallEnded("call_1"),
        MessageCommitted(3, result), ToolResult("call_1", 3, result),
        TextDelta("It is "), TextDelta("sunny."),
        MessageCommitted(4, Message("assistant", "It is sunny.")),
        WaitingFor({"type": "user", "prompt": None})]


class Recording(Encoder):
    """A second protocol, for the test: says only the tool calls and the end."""

    def tool_call_started(self, event: ToolCallStarted) -> str:
        return f"call {event.call.name}\n"

    def tool_result(self, event: ToolResult) -> str:
        return f"result {event.message.content}\n"

    def turn_ended(self, event: TurnEnded) -> str:
        return f"end {len(event.conversation['added'])}\n"


def test_another_encoder_streams_the_same_turn_in_its_own_words() -> None:
    from convo import Runner
    from convo.serve._engine import Engine
    from convo.serve._http.sse import stream_turn
    from convo.serve._stores import MemoryStore

    async def main() -> str:
        engine = Engine(Runner(Streaming(), TEMPLATE, raise_errors=False), MemoryStore())
        _, body = await engine.create({}, None)

        async def turn(sink: Sink) -> ServedEvent:
            async with engine.turn(body["id"]) as live:
                _, said = await engine.message(live, "Weather in Oslo?", sink)
            return TurnEnded(said)

        tasks: set[asyncio.Task[Any]] = set()
        response = await stream_turn(turn, tasks=tasks, cut=lambda exc: TurnFailed(
            {"error": str(exc)}), encoder=Recording())
        return "".join([chunk async for chunk in response.body_iterator])  # type: ignore[misc]

    assert asyncio.run(main()) == "call weather\nresult Sunny in Oslo\nend 4\n"


def test_a_turn_stopped_by_a_cancel_says_so_then_where_it_waits() -> None:
    from convo import Runner
    from convo.serve._engine import Engine
    from convo.serve._events import MessageCommitted, Paused, WaitingFor
    from convo.serve._stores import MemoryStore

    async def main() -> list[ServedEvent]:
        engine = Engine(Runner(Streaming(), TEMPLATE, raise_errors=False), MemoryStore())
        _, body = await engine.create({}, None)
        seen: list[ServedEvent] = []
        async with engine.turn(body["id"]) as live:
            engine.turns.running[body["id"]].cancel.set()  # asked to stop before its model call
            await engine.message(live, "Weather in Oslo?", seen.append)
        return seen

    seen = asyncio.run(main())
    # (the reply cancelled before it said anything is neither stored nor shown)
    assert seen == [MessageCommitted(1, Message("user", "Weather in Oslo?")), Paused(),
                    WaitingFor({"type": "user", "prompt": None})]
