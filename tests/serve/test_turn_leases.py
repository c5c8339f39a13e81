"""Turn leases and cancel in one process (API.md §20): a turn's lease is renewed on a timer,
never once per model call; a cancel on the memory store stops the model call; the lease must
be a positive number of seconds (``create_app(lease=)``, ``--lease``)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import httpx
import pytest
from message_json import unnumbered
from serve_kit import ROOT, TEMPLATE, model

from convo import Message, ToolCall
from convo.serve import create_app
from convo.serve._stores import MemoryStore
from convo.templates import LinearTemplate, LoopTemplate, ToolingTemplate, UserTemplate
from convo.tools import FinishTool, tool


class CountingStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.renewals = 0

    async def renew(self, conversation_id: str, *, extend: bool = True) -> str:
        self.renewals += 1
        return await super().renew(conversation_id, extend=extend)


@tool
def step(n: int) -> str:
    """One step."""
    return f"step {n}"


class Stepping:
    """Twenty model calls in one turn (a tool call each), then a reply."""

    async def acomplete(self, messages: Sequence[Message], tools: Any = (), *,
                        on_delta: Any = None) -> Message:
        done = sum(1 for m in messages if m.role == "tool")
        if done == 20:
            return Message("assistant", "twenty steps")
        return Message("assistant", "", tool_calls=[ToolCall(f"c{done}", "step", {"n": done})])

    def complete(self, *args: Any, **kwargs: Any) -> Message:
        raise NotImplementedError


async def _turn(app: Any, content: str) -> httpx.Response:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://test", timeout=30) as client:
        cid = (await client.post("/api/conversations", json={})).json()["id"]
        return await client.post(f"/api/conversations/{cid}/messages", json={"content": content})


def test_a_turn_of_many_model_calls_renews_no_lease() -> None:
    store = CountingStore()
    bot = LinearTemplate([LoopTemplate([UserTemplate(), ToolingTemplate([step, FinishTool()])])])
    said = asyncio.run(_turn(create_app(bot, Stepping(), store=store, lease=30), "go"))
    assert said.json()["added"][-1]["content"] == "twenty steps"
    assert unnumbered(said.json()["added"]).count(
        {"role": "tool", "content": "step 3", "tool_call_id": "c3", "name": "step"}) == 1
    assert store.renewals == 0  # a timer renews, every 10 s here; no call renews


class Waiting:
    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = 0

    async def acomplete(self, messages: Sequence[Message], tools: Any = (), *,
                        on_delta: Any = None) -> Message:
        on_delta("so far")
        self.started.set()
        try:
            await asyncio.Event().wait()  # never answers: only a cancel ends it
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        raise AssertionError("unreachable")

    def complete(self, *args: Any, **kwargs: Any) -> Message:
        raise NotImplementedError


def test_a_cancel_on_the_memory_store_stops_the_model_call() -> None:
    waiting = Waiting()
    app = create_app(TEMPLATE, waiting)

    async def scenario() -> tuple[httpx.Response, httpx.Response, httpx.Response]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                     base_url="http://test", timeout=30) as client:
            cid = (await client.post("/api/conversations", json={})).json()["id"]
            path = f"/api/conversations/{cid}"
            running = asyncio.ensure_future(client.post(f"{path}/messages",
                                                        json={"content": "hi"}))
            await waiting.started.wait()
            cancelled = await client.post(f"{path}/cancel", json={})
            again = await client.post(f"{path}/cancel", json={})
            return await running, cancelled, again

    answered, cancelled, again = asyncio.run(scenario())
    assert cancelled.status_code == 200
    assert cancelled.json()["waiting_for"] == {"type": "user", "prompt": None}
    assert answered.status_code == 200
    assert unnumbered(answered.json()["added"]) == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "so far", "metadata": {"cancelled": True}}]
    assert waiting.cancelled == 1
    assert (again.status_code, again.json()["error"]) == (
        409, "no turn is running in this conversation: there is nothing to cancel")


def test_a_lease_must_be_a_positive_number_of_seconds() -> None:
    with pytest.raises(ValueError, match="lease must be a number of seconds above 0, got 0"):
        create_app(TEMPLATE, model(), lease=0)
    bot = str(ROOT / "tests" / "serve_fixtures" / "faults_bot.py")
    done = subprocess.run([sys.executable, "-m", "convo", "serve", bot, "--lease", "-1"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "--lease: expected a number of seconds above 0, got '-1'" in done.stderr
