"""The serving benchmark's in-process parts (``serve.py``): what a served turn asks of the
store, and the time to rebuild a paused conversation."""

from __future__ import annotations

import asyncio
import collections
import statistics
import tempfile
import time
from typing import Any

from serve_bot import template

from convo import FunctionModel
from convo._runner import Runner
from convo.serve._engine import Engine
from convo.serve._stores import MemoryStore
from convo.serve._stores.sqlite import SQLiteStore


class Counting(SQLiteStore):
    """A SQLite store that counts what it is asked."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.calls: collections.Counter[str] = collections.Counter()

    async def load(self, conversation_id: str, *, messages: bool = True) -> Any:
        self.calls["load" if messages else "load (row only)"] += 1
        return await super().load(conversation_id, messages=messages)

    async def write(self, conversation_id: str, change: Any) -> None:
        self.calls["write"] += 1
        await super().write(conversation_id, change)

    def turn(self, conversation_id: str) -> Any:
        self.calls["take and release the lease"] += 1
        return super().turn(conversation_id)

    async def renew(self, conversation_id: str, *, extend: bool = True) -> str:
        self.calls["renew (a write)" if extend else "look for a cancel (a read)"] += 1
        return await super().renew(conversation_id, extend=extend)


def tool_calls(n: int) -> Any:
    """A model that calls the tool ``n - 1`` times in a turn, then answers."""
    def reply(messages: Any, tools: Any) -> str:
        since_user = next(i for i, m in enumerate(reversed(messages)) if m.role == "user")
        if since_user >= 2 * (n - 1):
            return "Sunny."
        return f"{{get_weather(city='Oslo {since_user}')}}"  # a new city each: no loop guard
    return reply


def store_calls() -> dict[str, dict[str, float]]:
    """Store calls per served turn (SQLite, the 30 s lease, a turn well under a second):
    the standard turn (2 model calls) and one of 20 model calls."""
    async def measure(n: int) -> dict[str, float]:
        store = Counting(f"{tempfile.mkdtemp(prefix='convo-bench-')}/calls.db")
        await store.open()
        engine = Engine(Runner(FunctionModel(tool_calls(n)), template, raise_errors=False),
                        store)
        _, body = await engine.create({}, None)
        store.calls.clear()
        turns = 10
        for _ in range(turns):
            async with engine.turn(body["id"]) as live:
                await engine.message(live, "weather?", None)
        await store.close()
        return {k: v / turns for k, v in sorted(store.calls.items())}

    return {f"{n} model calls": asyncio.run(measure(n)) for n in (2, 20)}


def rebuild_times(sizes: list[int]) -> dict[str, dict[str, float]]:
    """Rebuilding a paused conversation from a memory store: the time beyond reading it."""
    def reply(messages: Any, tools: Any) -> str:
        return "Sunny." if messages[-1].role == "tool" else "{get_weather(city='Oslo')}"

    async def measure(n: int) -> dict[str, float]:
        store = MemoryStore()
        engine = Engine(Runner(FunctionModel(reply), template, raise_errors=False,
                               max_messages=10**6), store)
        _, body = await engine.create({}, None)
        cid = body["id"]
        while len(engine._cache[cid].session.messages) < n:
            async with engine.turn(cid) as live:
                await engine.message(live, "weather?", None)
        count = len(engine._cache[cid].session.messages)
        reads, rebuilds = [], []
        for _ in range(20):
            started = time.perf_counter()
            await store.load(cid)
            reads.append(time.perf_counter() - started)
            started = time.perf_counter()
            await engine._rebuild(cid)
            rebuilds.append(time.perf_counter() - started)
        read, total = statistics.median(reads), statistics.median(rebuilds)
        return {"messages": count, "read_ms": 1000 * read, "rebuild_ms": 1000 * total,
                "beyond_read_ms": 1000 * (total - read)}

    return {str(n): asyncio.run(measure(n)) for n in sizes}
