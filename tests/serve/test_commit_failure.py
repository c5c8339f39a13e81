"""A store write that fails inside a turn, before a model call or tools (the step's messages,
with "running"), is the store's failure, not the conversation's: the request fails (503 over
HTTP), nothing ends, and the conversation goes on once the store answers again."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from convo import FunctionModel, LinearTemplate, LoopTemplate, ToolingTemplate, UserTemplate, tool
from convo._runner import Runner
from convo.serve._engine import Engine
from convo.serve._stores import StoreError
from convo.serve._stores.sqlite import SQLiteStore


@tool
def look(n: int) -> str:
    """Look once."""
    return f"looked {n}"


BOT = LinearTemplate([LoopTemplate([UserTemplate(), ToolingTemplate([look])])])


class Failing(SQLiteStore):
    """Fails the writes that say a turn runs while ``down``."""

    down = False

    async def write(self, conversation_id: str, change: Any) -> None:
        if self.down and change.status == "running":
            raise StoreError("the store is down (test)")
        await super().write(conversation_id, change)


def test_a_failed_write_before_the_model_call_fails_the_request_and_ends_nothing(
        tmp_path: Path) -> None:
    async def run() -> None:
        store = Failing(str(tmp_path / "f.db"))
        await store.open()
        try:
            engine = Engine(Runner(FunctionModel(lambda m, t: "done"), BOT, raise_errors=False),
                            store)
            _, body = await engine.create({}, None)
            cid = body["id"]
            store.down = True
            async with engine.turn(cid) as live:
                with pytest.raises(StoreError, match="the store is down"):
                    await engine.message(live, "lost", None)
            stored = await store.load(cid)
            assert stored is not None
            assert (stored.status, stored.outcome, stored.messages) == ("waiting", None, [])
            store.down = False
            async with engine.turn(cid) as live:
                code, said = await engine.message(live, "again", None)
            assert code == 200, said
            assert [(m["role"], m["content"]) for m in said["messages"]] == [
                ("user", "again"), ("assistant", "done")]
            assert said["status"] == "waiting"
        finally:
            await store.close()

    asyncio.run(run())
