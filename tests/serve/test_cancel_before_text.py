"""A served cancel before the model said anything (API.md §20) keeps what was committed and
adds nothing empty: no empty assistant message is stored or shown, and the model never sees
an empty turn in a later call — whether the conversation stays in the worker's memory or is
rebuilt from the store for every request (``cache_size=0``), on every store. The model is the
real OpenAI SDK against the test kit's server, its first reply held back (``SlowReply``)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from message_json import unnumbered
from serve_kit import TEMPLATE

from convo import OpenAIModel
from convo.serve import create_app
from convo.serve._stores import open_store
from convo.testing import OpenAIServer, SlowReply

SYSTEM = {"role": "system", "content": "Be brief."}


async def _until_asked(server: OpenAIServer, count: int) -> None:
    for _ in range(1000):
        if server.received >= count:
            return
        await asyncio.sleep(0.01)  # polling for the request to reach the server, not timing
    raise AssertionError(f"the model server got {server.received} requests, not {count}")


def _said(body: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(m["role"], m["content"]) for m in body["messages"]]


@pytest.mark.parametrize("cache_size", [1000, 0], ids=["kept", "rebuilt"])
def test_a_cancel_before_any_text_adds_nothing_empty(store_url: str, cache_size: int) -> None:
    store = open_store(store_url)
    with OpenAIServer([SlowReply("too late", 60), "Hello again.", "Still here."]) as server, \
            OpenAIModel("test-model", base_url=server.base_url, api_key="test",
                        max_retries=0) as model:
        app = create_app(TEMPLATE, model, store=store, cache_size=cache_size)

        async def scenario() -> None:
            try:
                await talk()
            finally:
                await store.close()

        async def talk() -> None:
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                         base_url="http://test", timeout=30) as client:
                cid = (await client.post("/api/conversations", json={})).json()["id"]
                path = f"/api/conversations/{cid}"
                running = asyncio.ensure_future(
                    client.post(f"{path}/messages", json={"content": "hi"}))
                await _until_asked(server, 1)  # the call is under way; nothing streamed yet
                cancelled = await client.post(f"{path}/cancel", json={})
                assert cancelled.status_code == 200, cancelled.text
                assert (cancelled.json()["status"], cancelled.json()["waiting_for"]) == (
                    "waiting", {"type": "user", "prompt": None})
                assert _said(cancelled.json()) == [("system", "Be brief."), ("user", "hi")]
                answered = await running
                assert answered.status_code == 200, answered.text
                assert unnumbered(answered.json()["added"]) == [{"role": "user", "content": "hi"}]
                assert _said((await client.get(path)).json()) == [
                    ("system", "Be brief."), ("user", "hi")]

                again = await client.post(f"{path}/messages", json={"content": "again"})
                assert again.status_code == 200, again.text
                assert _said(again.json()) == [("system", "Be brief."), ("user", "hi"),
                                               ("user", "again"), ("assistant", "Hello again.")]
                more = await client.post(f"{path}/messages", json={"content": "more"})
                assert more.status_code == 200, more.text
                assert _said((await client.get(path)).json()) == [
                    ("system", "Be brief."), ("user", "hi"), ("user", "again"),
                    ("assistant", "Hello again."), ("user", "more"),
                    ("assistant", "Still here.")]

        asyncio.run(scenario())
        assert [[(m["role"], m["content"]) for m in r["messages"]] for r in server.requests] == [
            [("system", "Be brief."), ("user", "hi")],
            [("system", "Be brief."), ("user", "hi"), ("user", "again")],
            [("system", "Be brief."), ("user", "hi"), ("user", "again"),
             ("assistant", "Hello again."), ("user", "more")]]
