"""What a short served turn costs the event loop (CPU per served turn): its lease
timer starts no task before its first tick, and a model call is cancelled by the turn's cancel
itself, with no task waiting for it; a turn that lasts past a tick has its timer."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from convo import LinearTemplate, LoopTemplate, Message, ToolingTemplate, UserTemplate, tool
from convo._runner import Runner
from convo.serve._engine import Engine
from convo.serve._stores.sqlite import SQLiteStore


@tool
def look(n: int) -> str:
    """Look once."""
    return f"looked {n}"


BOT = LinearTemplate([LoopTemplate([UserTemplate(), ToolingTemplate([look])])])


class Seeing:
    """A model that notes the names of the loop's other tasks' coroutines while it answers
    (after ``wait`` seconds)."""

    def __init__(self, wait: float = 0.0) -> None:
        self.wait = wait
        self.seen: list[str] = []

    async def acomplete(self, messages: Sequence[Message], tools: Any = (), *,
                        on_delta: Any = None) -> Message:
        await asyncio.sleep(self.wait)
        me = asyncio.current_task()
        self.seen = sorted(getattr(t.get_coro(), "__qualname__", "?")
                           for t in asyncio.all_tasks() if t is not me)
        return Message("assistant", "done")

    def complete(self, *args: Any, **kwargs: Any) -> Message:
        raise NotImplementedError


def turn(tmp_path: Path, model: Seeing, lease: float) -> list[str]:
    async def run() -> None:
        store = SQLiteStore(str(tmp_path / "t.db"))
        await store.open()
        try:
            engine = Engine(Runner(model, BOT, raise_errors=False), store, lease=lease)
            _, body = await engine.create({}, None)
            async with engine.turn(body["id"]) as live:
                code, said = await engine.message(live, "go", None)
            assert (code, said["messages"][-1]["content"]) == (200, "done")
        finally:
            await store.close()

    asyncio.run(run())
    return model.seen


def test_a_short_turn_has_no_timer_task_and_no_task_waiting_for_its_cancel(
        tmp_path: Path) -> None:
    # the model call runs in a task of its own (so that a cancel cuts it off) beside the
    # test's own, and that is all
    assert turn(tmp_path, Seeing(), lease=30) == ["turn.<locals>.run"]


def test_a_turn_past_its_first_tick_has_its_lease_timer(tmp_path: Path) -> None:
    seen = turn(tmp_path, Seeing(wait=0.1), lease=0.06)  # a tick every 20 ms
    assert seen == ["Turns._renew", "turn.<locals>.run"]
