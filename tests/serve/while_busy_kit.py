"""The while-busy tests' kit (test_while_busy.py, test_while_busy_workers.py,
test_faces_while_busy.py): ``Bot``, whose model and tool wait at asyncio gates so that a test
knows a turn runs (the ``bot`` fixture makes a fresh one); ``served``, an app's client in this
event loop, and ``run``, a test against the bot served by one app; ``post``, ``settled`` and
``said`` on the native API; and ``HoldsRelease``, a store whose turn keeps its lease a moment
after its last write."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import httpx
import pytest
from refund_bot import refund
from weather_tools import chat_loop

from convo import FinishTool, FunctionModel, Message, ModelError, tool
from convo.serve import create_app
from convo.serve._stores.base import Stored

Client = httpx.AsyncClient


class Bot:
    """A bot whose model waits at ``model_gate`` for a message starting "slow" and whose
    ``lookup`` tool waits at ``tool_gate``; ``seen``: each model request's messages."""

    def __init__(self) -> None:
        self.model_gate = asyncio.Event()
        self.tool_gate = asyncio.Event()
        self.in_model = asyncio.Event()
        self.in_tool = asyncio.Event()
        self.fail = False
        self.seen: list[list[tuple[str, str]]] = []

        @tool
        async def lookup(q: str) -> str:
            """Look something up."""
            self.in_tool.set()
            await self.tool_gate.wait()
            return f"found {q}"

        self.template = chat_loop(lookup, refund, FinishTool())

    async def reply(self, messages: Sequence[Message], tools: Any) -> str:
        self.seen.append([(m.role, m.text) for m in messages])
        last = messages[-1]
        if last.role == "user" and last.text.startswith("slow"):
            self.in_model.set()
            await self.model_gate.wait()
            if self.fail:
                raise ModelError("the model is down")
        if last.role == "user" and last.text.startswith("look "):
            return f"{{lookup(q='{last.text[5:]}')}}"
        if last.role == "user" and last.text.startswith("slowrefund "):
            return f"{{refund(order='{last.text[11:]}')}}"
        if last.role == "user" and last.text == "slowfinish":
            return "{finish()}"
        if last.role == "tool":
            return f"after {last.text}"
        return f"re: {last.text}"


@pytest.fixture
def bot() -> Bot:
    return Bot()


@contextlib.asynccontextmanager
async def served(app: Any) -> AsyncIterator[Client]:
    """A client of ``app`` in this event loop, the app started (its lifespan) until the
    block ends."""
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t", timeout=30) as c:
        yield c


async def _serving(bot: Bot, store: Any, test: Callable[[Client, str], Awaitable[None]],
                   on_app: Callable[[Any], None] | None = None, **options: Any) -> None:
    app = create_app(bot.template, FunctionModel(bot.reply), store=store, **options)
    if on_app is not None:  # (a test's hook into the app it serves)
        on_app(app)
    async with served(app) as c:
        cid = (await c.post("/api/conversations", json={})).json()["id"]
        await test(c, cid)


def run(bot: Bot, store: Any, test: Callable[[Client, str], Awaitable[None]],
        on_app: Callable[[Any], None] | None = None, **options: Any) -> None:
    """``test(client, conversation id)`` against ``bot`` served on ``store`` (a URL or a
    store) by one app (``create_app``'s ``options``), in a new conversation."""
    asyncio.run(_serving(bot, store, test, on_app, **options))


async def settled(c: Client, cid: str) -> dict[str, Any]:
    """The conversation once its queue is empty and no turn runs (at most 20 s)."""
    for _ in range(2000):
        shown: dict[str, Any] = (await c.get(f"/api/conversations/{cid}")).json()
        if not shown["queued"] and shown["status"] != "running":
            return shown
        await asyncio.sleep(0.01)
    raise AssertionError(f"the queue was not taken: {shown}")


def said(shown: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in shown["messages"] if m["role"] != "system"]


def post(c: Client, cid: str, content: str, mode: str | None = None,
         **headers: str) -> Awaitable[httpx.Response]:
    body: dict[str, Any] = {"content": content}
    if mode is not None:
        body["while_busy"] = mode
    return c.post(f"/api/conversations/{cid}/messages", json=body, headers=headers)


class HoldsRelease:
    """A store mixin (``class S(HoldsRelease, MemoryStore)``): once ``hold_next`` is set, the
    next turn keeps its lease after its last write until ``let_go`` is set (``releasing``: it
    got there): the moment between a turn's last write and its lease's release, held open."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hold_next = False
        self.releasing = asyncio.Event()
        self.let_go = asyncio.Event()

    @contextlib.asynccontextmanager
    async def turn(self, conversation_id: str) -> AsyncIterator[Stored | bool]:
        hold, self.hold_next = self.hold_next, False
        async with super().turn(conversation_id) as taken:  # type: ignore[misc]
            try:
                yield taken
            finally:
                if hold and taken:
                    self.releasing.set()
                    await self.let_go.wait()
