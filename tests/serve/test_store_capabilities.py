"""The ``Store`` protocol by capability: a store of one's own needs only
``Conversations`` and ``Leases``; a route that needs an optional one (``Idempotency``,
``Ratings``, ``Listing``) answers 501 naming it, and a conversation then shows no ratings."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

from starlette.testclient import TestClient

from convo import Message
from convo.models import FunctionModel
from convo.serve import create_app
from convo.serve._stores import (
    Change,
    Conversations,
    Idempotency,
    Leases,
    Listing,
    MemoryStore,
    Ratings,
    Store,
    Stored,
)
from convo.templates import LinearTemplate, LoopTemplate, ToolingTemplate, UserTemplate
from convo.tools import FinishTool


class Bare:
    """Conversations and their leases, nothing else (kept in a memory store)."""

    def __init__(self) -> None:
        self._in = MemoryStore()
        self.lease = self._in.lease

    async def open(self) -> None:
        await self._in.open()

    async def close(self) -> None:
        await self._in.close()

    async def ping(self) -> bool:
        return await self._in.ping()

    async def create(self, conversation_id: str, state: Mapping[str, Any], *,
                     owner: str = "default") -> None:
        await self._in.create(conversation_id, state, owner=owner)

    async def load(self, conversation_id: str, *, messages: bool = True) -> Stored | None:
        return await self._in.load(conversation_id, messages=messages)

    async def write(self, conversation_id: str, change: Change) -> None:
        await self._in.write(conversation_id, change)

    async def delete(self, conversation_id: str) -> bool:
        return await self._in.delete(conversation_id)

    def turn(self, conversation_id: str) -> contextlib.AbstractAsyncContextManager[bool]:
        return self._in.turn(conversation_id)

    async def renew(self, conversation_id: str, *, extend: bool = True) -> str:
        return await self._in.renew(conversation_id, extend=extend)

    async def request_cancel(self, conversation_id: str) -> bool:
        return await self._in.request_cancel(conversation_id)

    async def running(self, conversation_id: str) -> bool:
        return await self._in.running(conversation_id)


def _echo(messages: Sequence[Message], tools: Any) -> str:
    return f"You said {messages[-1].content}"


TEMPLATE = LinearTemplate([LoopTemplate([UserTemplate(), ToolingTemplate([FinishTool()])])])


def test_the_capabilities_of_the_stores() -> None:
    bare, memory = Bare(), MemoryStore()
    assert isinstance(bare, Conversations) and isinstance(bare, Leases)
    assert not any(isinstance(bare, c) for c in (Idempotency, Ratings, Listing))
    assert all(isinstance(memory, c) for c in (Conversations, Leases, Idempotency, Ratings,
                                               Listing, Store))


def test_a_store_with_conversations_and_leases_alone_serves_turns() -> None:
    with TestClient(create_app(TEMPLATE, FunctionModel(_echo), store=Bare())) as client:
        cid = client.post("/api/conversations", json={}).json()["id"]
        said = client.post(f"/api/conversations/{cid}/messages", json={"content": "hi"})
        assert said.json()["added"][1]["content"] == "You said hi"
        shown = client.get(f"/api/conversations/{cid}")
        assert (shown.status_code, shown.json()["feedback"]) == (200, {})
        listed = client.get("/api/conversations")
        assert (listed.status_code, listed.json()) == (501, {
            "error": "this server's store (Bare) does not list conversations: it implements "
                     "no Listing (convo.serve._stores)"})
        keyed = client.post(f"/api/conversations/{cid}/messages", json={"content": "again"},
                            headers={"Idempotency-Key": "k"})
        assert (keyed.status_code, keyed.json()) == (501, {
            "error": "this server's store (Bare) does not keep idempotency records: it "
                     "implements no Idempotency (convo.serve._stores); send the request "
                     "without an Idempotency-Key"})
        rated = client.post(f"/api/conversations/{cid}/feedback",
                            json={"message": 1, "rating": 1})
        assert (rated.status_code, rated.json()["error"]) == (
            501, "this server's store (Bare) does not keep ratings: it implements no Ratings "
                 "(convo.serve._stores)")
        assert len(client.get(f"/api/conversations/{cid}").json()["messages"]) == 2
