"""A model call made in an activity counts in the run's totals: a conversation that ends on the
Temporal engine has the outcome (its model calls, its usage) it has on the default engine."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from temporal_kit import start, worker

from convo import Message
from convo._reply import Usage
from convo._runner import Runner
from convo.models import FunctionModel
from convo.serve._engine import Engine
from convo.serve._stores import open_store
from convo.templates import AssistantTemplate, LinearTemplate, SystemTemplate, UserTemplate

TEMPLATE = LinearTemplate([SystemTemplate("Be brief."), UserTemplate(), AssistantTemplate(),
                           UserTemplate(), AssistantTemplate()])


class Billed:
    """Replies that say what they used."""

    def __call__(self, messages: Sequence[Message], tools: Any) -> Message:
        said = str(messages[-1].content)
        return Message.assistant(f"You said {said}",
                                 usage=Usage(10 * len(said), len(said), 11 * len(said)))


def _counted(outcome: dict[str, Any]) -> tuple[Any, ...]:
    return outcome["status"], outcome["model_calls"], outcome["usage"]


def test_an_ended_conversation_counts_what_its_activities_used(temporal: str,
                                                               tmp_path: Path) -> None:
    async def on_temporal() -> dict[str, Any]:
        async with worker(temporal, tmp_path, template=TEMPLATE, model=Billed()) as (
                client, queue, _, _):
            handle = await start(client, queue, "u1")
            await handle.execute_update("message", {"content": "hi"})
            said = await handle.execute_update("message", {"content": "hello"})
            assert said["conversation"]["status"] == "ended"
            outcome: dict[str, Any] = said["conversation"]["outcome"]
            return outcome

    async def on_the_default_engine() -> dict[str, Any]:
        store = open_store("memory")
        await store.open()
        engine = Engine(Runner(FunctionModel(Billed()), TEMPLATE, raise_errors=False),
                        store)
        _, body = await engine.create({}, None)
        for content in ("hi", "hello"):
            async with engine.turn(body["id"]) as live:
                _, body = await engine.message(live, content, None)
        outcome: dict[str, Any] = body["outcome"]
        return outcome

    expected = asyncio.run(on_the_default_engine())
    assert _counted(expected) == ("completed", 2, {
        "prompt_tokens": 70, "completion_tokens": 7, "total_tokens": 77, "unreported": 0})
    assert _counted(asyncio.run(on_temporal())) == _counted(expected)
