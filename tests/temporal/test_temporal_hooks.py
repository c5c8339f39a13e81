"""A template's hooks on the Temporal engine are activities that run them where the workflow
is (the activity's rebuild takes the hooks before it as run and stops at this one): each
turn's hook runs once, and what it does to the state stays."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from temporal_kit import refund, start, texts, worker
from weather_tools import chat_loop

from convo import FinishTool


def _first(session: Any) -> None:
    session.state["first"] = session.state.get("first", 0) + 1


def _second(session: Any) -> None:
    session.state["second"] = session.state.get("first", 0) * 10


HOOKED = chat_loop(refund, FinishTool(), before=[_first, _second])


def test_each_turns_hooks_run_once_in_activities(temporal: str, tmp_path: Path) -> None:
    async def go() -> None:
        async with worker(temporal, tmp_path, template=HOOKED) as (client, queue, store, _):
            handle = await start(client, queue, "h1")
            for turn in ("hi", "again"):
                said = await handle.execute_update("message", {"content": turn})
                assert said["code"] == 200, said
                assert texts(said["added"]) == [("user", turn),
                                                ("assistant", f"You said {turn!r}")]
            stored = await store.load("h1")
            assert stored is not None and stored.state == {"first": 2, "second": 20}

    asyncio.run(go())
