"""A context window's summary on the Temporal engine: made by the model activity (the
summarising call before the reply), carried back to the workflow and kept in the store as the
default engine keeps it, so the calls after it reuse it, across a continue-as-new too: exactly
one summarising call per summary, as many as the default engine makes for the same
conversation."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from temporal_kit import TEMPLATE, start, worker

from convo import ContextWindow, FunctionModel, Message
from convo._runner import Runner
from convo.serve._engine import Engine
from convo.serve._stores.memory import MemoryStore

SAID = [f"message {i}: " + "the quick brown fox jumps over the lazy dog " * 6 for i in range(9)]


class Summarising:
    """The bot's model: a short reply, or a summary (counted) when asked for one."""

    def __init__(self) -> None:
        self.summaries = 0
        self.replies = 0

    def __call__(self, messages: Sequence[Message], tools: Any) -> str:
        if messages[0].role == "system" and messages[0].text.startswith("You summarise"):
            self.summaries += 1
            return f"Summary {self.summaries}: the user sent numbered messages about a fox."
        self.replies += 1
        return f"Noted {messages[-1].text[:9]}."


def window() -> ContextWindow:
    return ContextWindow(600, summarize=True)


async def on_the_default_engine() -> tuple[Summarising, Any]:
    model = Summarising()
    store = MemoryStore()
    engine = Engine(Runner(FunctionModel(model), TEMPLATE, raise_errors=False,
                           context=window()), store)
    _, body = await engine.create({}, None)
    for text in SAID:
        async with engine.turn(body["id"]) as live:
            await engine.message(live, text, None)
    return model, await store.load(body["id"])


def test_a_summary_is_made_once_and_kept_as_the_default_engine_keeps_it(
        temporal: str, tmp_path: Path) -> None:
    async def go() -> None:
        expected, kept = await on_the_default_engine()
        assert expected.summaries >= 2  # (the window is small enough to summarize again)
        model = Summarising()
        async with worker(temporal, tmp_path, model=model, runner={"context": window()},
                          continue_every=4) as (client, queue, store, _):
            handle = await start(client, queue, "s1")
            first_run = (await handle.describe()).run_id
            for text in SAID:
                said = await handle.execute_update("message", {"content": text})
                assert said["code"] == 200
            assert (await handle.describe()).run_id != first_run  # it continued as new
            stored = await store.load("s1")
        assert stored is not None and kept is not None
        assert (model.summaries, model.replies) == (expected.summaries, len(SAID))
        assert stored.internal["context"] == kept.internal["context"]
        assert stored.internal["context"]["calls"] == model.summaries
        assert [m.content for m in stored.messages] == [m.content for m in kept.messages]

    asyncio.run(go())
