"""A turn cut off by a store failure (API.md §20) lets its lease go as soon as the store answers
again, not once the lease lapsed: the release is itself a write to the failing store, so the
worker keeps the lease it could not release and lets it go at its next store call (a retry on
the same worker is served at once) or by a timer (a retry on another worker, within a second).
SQLite here, with a failure injected into every store call; Postgres stopped and started
for real in faults/test_faults_store.py."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import httpx
from message_json import unnumbered
from serve_kit import TEMPLATE

from convo import Message
from convo.serve import create_app
from convo.serve._stores import StoreError
from convo.serve._stores.sqlite import SQLiteStore

T = TypeVar("T")
LEASE = 60.0  # far longer than the tests wait: what they see is not the lease lapsing


class Outage(SQLiteStore):
    """Every store call fails while ``down`` (a disk gone, a full one that stays full)."""

    down = False

    async def _do(self, fn: Callable[[Any], T]) -> T:
        if self.down:
            raise StoreError("the store is down (test)")
        return await super()._do(fn)


class Cutting:
    """Answers every message; the store goes down while it answers the first (``store``)."""

    def __init__(self) -> None:
        self.store: Outage | None = None
        self.calls: list[str] = []

    async def acomplete(self, messages: Sequence[Message], tools: Any = (), *,
                        on_delta: Any = None) -> Message:
        self.calls.append(messages[-1].text)
        if self.store is not None:
            self.store.down, self.store = True, None
        return Message("assistant", f"You said {messages[-1].text!r}")

    def complete(self, *args: Any, **kwargs: Any) -> Message:
        raise NotImplementedError


def _client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test",
                             timeout=30)


async def _cut_turn(client: httpx.AsyncClient, store: Outage, model: Cutting) -> str:
    """A conversation whose turn the store cut off (a 503); the store answers again after."""
    cid = str((await client.post("/api/conversations", json={})).json()["id"])
    model.store = store
    cut = await client.post(f"/api/conversations/{cid}/messages", json={"content": "hi"})
    assert cut.status_code == 503, cut.text
    store.down = False
    return cid


async def _until(check: Callable[[], Awaitable[Any]]) -> Any:
    for _ in range(400):
        found = await check()
        if found:
            return found
        await asyncio.sleep(0.05)  # polling for the lease to be let go, not timing it
    raise AssertionError("the lease was not let go within 20 s")


def test_a_retry_on_the_same_worker_right_after_the_outage_runs(tmp_path: Path) -> None:
    store, model = Outage(str(tmp_path / "c.db")), Cutting()
    app = create_app(TEMPLATE, model, store=store, lease=LEASE)

    async def scenario() -> None:
        try:
            async with _client(app) as client:
                cid = await _cut_turn(client, store, model)
                retried = await client.post(f"/api/conversations/{cid}/retry", json={})
                assert retried.status_code == 200, retried.text
                assert [(m["role"], m["content"]) for m in retried.json()["messages"]] == [
                    ("system", "Be brief."), ("user", "hi"), ("assistant", "You said 'hi'")]
        finally:
            await store.close()

    asyncio.run(scenario())
    assert model.calls == ["hi", "hi"]


def test_another_worker_may_retry_within_a_second_of_the_outage(tmp_path: Path) -> None:
    path = str(tmp_path / "c.db")
    cutting, other, model = Outage(path), SQLiteStore(path), Cutting()
    first = create_app(TEMPLATE, model, store=cutting, lease=LEASE)
    second = create_app(TEMPLATE, model, store=other, lease=LEASE)

    async def scenario() -> None:
        try:
            async with _client(first) as one, _client(second) as two:
                cid = await _cut_turn(one, cutting, model)

                async def let_go() -> Any:
                    shown = (await two.get(f"/api/conversations/{cid}")).json()
                    return shown if shown["status"] != "running" else None

                shown = await _until(let_go)  # the first worker's timer released it
                assert shown["waiting_for"]["type"] == "retry"
                retried = await two.post(f"/api/conversations/{cid}/retry", json={})
                assert retried.status_code == 200, retried.text
                assert unnumbered(retried.json()["added"]) == [
                    {"role": "assistant", "content": "You said 'hi'"}]
        finally:
            await cutting.close()
            await other.close()

    asyncio.run(scenario())
