"""A route reads the conversation's row once and hands it on (issue 38): to the engine with the
turn, to the view of a GET. Counted on a memory store that notes each ``load``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starlette.testclient import TestClient

from convo import (
    FinishTool,
    FunctionModel,
    LinearTemplate,
    LoopTemplate,
    Message,
    ToolingTemplate,
    UserTemplate,
)
from convo.serve import create_app
from convo.serve._stores import MemoryStore, Stored


class Counting(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.loads: list[bool] = []  # each load: whether it read the messages

    async def load(self, conversation_id: str, *, messages: bool = True) -> Stored | None:
        self.loads.append(messages)
        return await super().load(conversation_id, messages=messages)


def _echo(messages: Sequence[Message], tools: Any) -> str:
    return f"You said {messages[-1].content}"


TEMPLATE = LinearTemplate([LoopTemplate([UserTemplate(), ToolingTemplate([FinishTool()])])])


def _app() -> tuple[Any, Counting]:
    store = Counting()
    return create_app(TEMPLATE, FunctionModel(_echo), store=store), store


def test_a_keyed_message_reads_the_row_twice_the_route_and_the_confirming_read() -> None:
    app, store = _app()
    with TestClient(app) as client:
        cid = client.post("/api/conversations", json={}).json()["id"]
        store.loads.clear()
        answer = client.post(f"/api/conversations/{cid}/messages", json={"content": "hi"},
                             headers={"Idempotency-Key": "k1"})
        assert answer.status_code == 200
        # the route's read, then the engine's under the lease (its cached run is current)
        assert store.loads == [False, False]


def test_a_message_to_a_conversation_not_in_the_cache_reads_it_whole_once() -> None:
    app, store = _app()
    with TestClient(app) as client:
        cid = client.post("/api/conversations", json={}).json()["id"]
        engine = next(r.endpoint.__self__.engine for r in app.routes  # type: ignore[attr-defined]
                      if getattr(r, "path", "") == "/api/conversations/{id}/messages")
        engine._cache.clear()
        store.loads.clear()
        answer = client.post(f"/api/conversations/{cid}/messages", json={"content": "hi"})
        assert answer.json()["added"][1]["content"] == "You said hi"
        assert store.loads == [False, True]  # the route's row, then the whole, rebuilt


def test_a_get_reads_the_conversation_once() -> None:
    app, store = _app()
    with TestClient(app) as client:
        cid = client.post("/api/conversations", json={}).json()["id"]
        client.post(f"/api/conversations/{cid}/messages", json={"content": "hi"})
        store.loads.clear()
        shown = client.get(f"/api/conversations/{cid}").json()
        assert [m["content"] for m in shown["messages"]] == ["hi", "You said hi"]
        assert store.loads == [True]
