"""A route reads the conversation's row once and hands it on: to the engine with the turn, to
the view of a GET. The lease's take gives the row as it stands under the lease, so the engine
confirms its cached run without reading the row again. Counted on each store (memory, SQLite,
Postgres), each ``load`` noted."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from serve_kit import store_url  # noqa: F401  (the fixture)
from starlette.testclient import TestClient

from convo import Message
from convo.models import FunctionModel
from convo.serve import create_app
from convo.serve._stores import Stored, open_store
from convo.templates import LinearTemplate, LoopTemplate, ToolingTemplate, UserTemplate
from convo.tools import FinishTool


class Counting:
    """A store whose ``load`` notes each read: whether it read the messages."""

    def __init__(self, url: str) -> None:
        self.store = open_store(url)
        self.loads: list[bool] = []
        load = self.store.load

        async def counted(conversation_id: str, *, messages: bool = True) -> Stored | None:
            self.loads.append(messages)
            return await load(conversation_id, messages=messages)

        self.store.load = counted  # type: ignore[method-assign]


def _echo(messages: Sequence[Message], tools: Any) -> str:
    return f"You said {messages[-1].content}"


TEMPLATE = LinearTemplate([LoopTemplate([UserTemplate(), ToolingTemplate([FinishTool()])])])


def _app(url: str = "memory") -> tuple[Any, Counting]:
    counting = Counting(url)
    return create_app(TEMPLATE, FunctionModel(_echo), store=counting.store), counting


@pytest.mark.parametrize("key", [None, "k1"])
def test_a_message_reads_the_row_once_the_lease_gives_it_to_the_engine(
        store_url: str, key: str | None) -> None:  # noqa: F811
    app, store = _app(store_url)
    with TestClient(app) as client:
        cid = client.post("/api/conversations", json={}).json()["id"]
        for n, said in enumerate(("hi", "again")):
            store.loads.clear()
            answer = client.post(f"/api/conversations/{cid}/messages", json={"content": said},
                                 headers={"Idempotency-Key": f"{key}-{n}"} if key else {})
            assert answer.json()["added"][1]["content"] == f"You said {said}"
            # the route's read only: the cached run is confirmed by the row the lease gave
            assert store.loads == [False]


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
