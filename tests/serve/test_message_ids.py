"""Every stored message has a stable `id` (API.md §24 Details): given by the server when the
message is stored, shown by the native API and its SSE, the same after a rebuild on another
app (another worker) on every store; in Python it takes no part in equality or hashing."""

from __future__ import annotations

import asyncio
import json

import pytest
from serve_kit import TEMPLATE, model
from starlette.testclient import TestClient

from convo import Message, Session
from convo._messages import with_id
from convo._runner import Runner
from convo.serve import create_app
from convo.serve._engine import Engine
from convo.serve._stores import MemoryStore


def test_an_id_takes_no_part_in_equality_and_is_kept_by_to_dict() -> None:
    given = Message("user", "hi", id="msg_1")
    assert given == Message("user", "hi") and hash(given) == hash(Message("user", "hi"))
    assert given.to_dict() == {"role": "user", "content": "hi", "id": "msg_1"}
    assert Message.from_dict(given.to_dict()).id == "msg_1"
    assert Message("user", "hi").to_dict() == {"role": "user", "content": "hi"}  # as before


def test_an_in_process_transcript_carries_no_id(tmp_path: object) -> None:
    session = Session([Message("user", "hi")], {})
    assert "id" not in json.dumps(session.to_dict())


def test_stored_messages_keep_their_ids_across_answers_streams_and_a_rebuild(
        store_url: str) -> None:
    with TestClient(create_app(TEMPLATE, model(), store=store_url)) as client:
        cid = client.post("/api/conversations", json={}).json()["id"]
        url = f"/api/conversations/{cid}/messages"
        first = client.post(url, json={"content": "hello"}).json()
        ids = [m["id"] for m in first["messages"]]
        assert [m["id"] for m in first["added"]] == ids[-2:]
        assert all(i.startswith("msg_") and len(i) == 36 for i in ids)
        assert len(set(ids)) == len(ids) == 3  # system, user, assistant
        with client.stream("POST", url, json={"content": "again"},
                           headers={"Accept": "text/event-stream"}) as streamed:
            lines = [line for line in streamed.iter_lines() if line.startswith("data: ")]
        shown = [json.loads(line[6:]) for line in lines]
        streamed_ids = [event["id"] for event in shown if "role" in event]
        assert len(streamed_ids) == 2
        read = client.get(f"/api/conversations/{cid}").json()
        assert [m["id"] for m in read["messages"]] == ids + streamed_ids
    if store_url == "memory":
        return
    with TestClient(create_app(TEMPLATE, model(), store=store_url)) as other:  # a rebuild
        answer = other.post(f"/api/conversations/{cid}/messages", json={"content": "more"})
        after = answer.json()["messages"]
        assert [m["id"] for m in after[:5]] == ids + streamed_ids
        assert len({m["id"] for m in after}) == 7


def test_a_rebuild_takes_the_stored_messages_themselves_ids_and_all(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The replay takes each stored message the template makes again (its system prompt, the
    user's words): no copy of each to put its id back (a rebuild of a long conversation made
    one per user message)."""
    import convo.serve._engine as engine_module

    async def main() -> None:
        store = MemoryStore()
        engine = Engine(Runner(model(), TEMPLATE, raise_errors=False), store)
        _, body = await engine.create({}, None)
        cid = body["id"]
        for text in ("hello", "again"):
            async with engine.turn(cid) as live:
                await engine.message(live, text, None)
        stored = await store.load(cid)
        assert stored is not None and len(stored.messages) == 5
        copies: list[str | None] = []
        monkeypatch.setattr(engine_module, "with_id",
                            lambda message, id: copies.append(id) or with_id(message, id))
        engine._cache.clear()
        live = await engine._rebuild(cid)
        assert copies == []
        assert [m.id for m in live.session.messages] == [m.id for m in stored.messages]
        assert all(again is was for again, was in zip(live.session.messages, stored.messages,
                                                       strict=True))

    asyncio.run(main())
