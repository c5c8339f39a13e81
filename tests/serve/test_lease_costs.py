"""What a turn's lease costs the store: renewing it is one write per third
of the lease, on a timer, however many model calls the turn makes; the store writes of a turn
are its messages' commits, 1 + 2 per tool round + 1, none for the lease."""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from convo import Message
from convo._runner import Runner
from convo.models import FunctionModel
from convo.serve._engine import Engine
from convo.serve._stores.sqlite import SQLiteStore
from convo.templates import LinearTemplate, LoopTemplate, ToolingTemplate, UserTemplate
from convo.tools import tool


@tool
def look(n: int) -> str:
    """Look once."""
    return f"looked {n}"


BOT = LinearTemplate([LoopTemplate([UserTemplate(), ToolingTemplate([look])])])


class Counting(SQLiteStore):
    """A real SQLite store that counts its writes, lease renewals (writes) and the timer's
    looks for a cancel (reads); ``extended`` is set at the ``wanted``-th renewal."""

    def __init__(self, path: str, wanted: int = 0) -> None:
        super().__init__(path)
        self.calls: collections.Counter[str] = collections.Counter()
        self.changes: list[Any] = []
        self.wanted = wanted
        self.extended = asyncio.Event()

    async def write(self, conversation_id: str, change: Any) -> None:
        self.calls["write"] += 1
        self.changes.append(change)
        await super().write(conversation_id, change)

    async def renew(self, conversation_id: str, *, extend: bool = True) -> str:
        self.calls["renew" if extend else "look"] += 1
        if self.calls["renew"] == self.wanted:
            self.extended.set()
        return await super().renew(conversation_id, extend=extend)


def rounds(n: int) -> Any:
    """A model that calls ``look`` ``n`` times in a turn, then answers."""
    def reply(messages: Sequence[Message], tools: Any) -> str:
        done = sum(1 for m in messages if m.role == "tool")
        return "done" if done == n else f"{{look(n={done})}}"
    return reply


async def one_turn(store: Counting, model: Any, lease: float) -> dict[str, Any]:
    await store.open()
    try:
        engine = Engine(Runner(model, BOT, raise_errors=False), store, lease=lease)
        _, body = await engine.create({}, None)
        store.calls.clear()
        store.changes.clear()
        async with engine.turn(body["id"]) as live:
            code, said = await engine.message(live, "go", None)
        assert code == 200, said
        return said
    finally:
        await store.close()


@pytest.mark.parametrize("tool_rounds", [1, 19])
def test_a_turn_writes_its_messages_and_nothing_for_its_lease(tmp_path: Path,
                                                              tool_rounds: int) -> None:
    store = Counting(str(tmp_path / "c.db"))
    said = asyncio.run(one_turn(store, FunctionModel(rounds(tool_rounds)), lease=30))
    assert said["messages"][-1]["content"] == "done"
    # the user message with "running", each call and its result, the reply with the final row
    assert dict(store.calls) == {"write": 1 + 2 * tool_rounds + 1}
    said = [([m.role for _, m in c.messages], c.status) for c in store.changes]
    assert said == [(["user"], "running")] + [(["assistant"], None), (["tool"], None)] \
        * tool_rounds + [(["assistant"], "waiting")]


class Held:
    """One model call, answered once the store has renewed the lease ``store.wanted`` times."""

    def __init__(self, store: Counting) -> None:
        self.store = store
        self.calls = 0
        self.seen: dict[str, int] = {}

    async def acomplete(self, messages: Sequence[Message], tools: Any = (), *,
                        on_delta: Any = None) -> Message:
        self.calls += 1
        await self.store.extended.wait()
        self.seen = dict(self.store.calls)
        return Message("assistant", "done")

    def complete(self, *args: Any, **kwargs: Any) -> Message:
        raise NotImplementedError


@pytest.mark.parametrize(("lease", "renewals", "looks"), [(0.6, 3, 0), (6.0, 1, 1)])
def test_one_model_call_renews_on_the_timer(tmp_path: Path, lease: float, renewals: int,
                                            looks: int) -> None:
    """A lease of L is renewed every L/3 (the timer ticks every L/3, at most every second,
    and only looks for a cancel at the ticks in between)."""
    store = Counting(str(tmp_path / "c.db"), wanted=renewals)
    model = Held(store)
    asyncio.run(one_turn(store, model, lease=lease))
    assert model.calls == 1
    # while the one model call waited: the user message and "running" written (one write),
    # the renewals
    assert model.seen == {"write": 1, "renew": renewals} | ({"look": looks} if looks else {})
