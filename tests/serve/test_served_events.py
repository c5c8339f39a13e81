"""The one stream of served events (API.md §24's first paragraph): a turn emits typed events
(``convo.serve.events``) and convo's own SSE (§9) is one encoder of them, unchanged on the
wire byte for byte."""

from __future__ import annotations

from collections.abc import Sequence

from starlette.testclient import TestClient

from convo import (
    LinearTemplate,
    LoopTemplate,
    Message,
    SystemTemplate,
    ToolCall,
    ToolingTemplate,
    UserTemplate,
    tool,
)
from convo.models.base import DeltaCallback, SyncModel, ToolSchemas
from convo.models.deltas import reasoning_callback
from convo.serve import create_app


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


TEMPLATE = LinearTemplate([SystemTemplate("Be brief."), LoopTemplate([
    UserTemplate(), ToolingTemplate([weather])])])

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
    '"prompt": null}}, "added": [{{"role": "user", "content": "Weather in Oslo?"}}, {{"role": '
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
    assert raw.decode("utf-8") == SSE.format(cid=cid)
    assert (headers["content-type"], headers["cache-control"]) == (
        "text/event-stream; charset=utf-8", "no-store")
