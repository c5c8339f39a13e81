"""A served rebuild replays quietly: its recorder hears the replay's frame and nothing of what
it rebuilds, then records the next turn exactly as a conversation that was never evicted."""

from __future__ import annotations

import asyncio
from typing import Any

from weather_tools import chat_loop

from convo import FunctionModel, tool
from convo._runner import Runner
from convo.events import Event
from convo.serve._engine import Engine
from convo.serve._live import Live
from convo.serve._stores import MemoryStore


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}."


TEMPLATE = chat_loop(get_weather)


def _reply(messages: Any, tools: Any) -> str:
    return "Sunny." if messages[-1].role == "tool" else "{get_weather(city='Oslo')}"


def test_a_rebuild_hears_only_its_frame_and_records_the_next_turn_as_ever() -> None:
    async def main() -> None:
        store = MemoryStore()
        engine = Engine(Runner(FunctionModel(_reply), TEMPLATE, raise_errors=False), store)
        _, body = await engine.create({}, None)
        cid = body["id"]
        for _ in range(3):
            async with engine.turn(cid) as live:
                await engine.message(live, "weather?", None)
        heard: list[Event] = []
        listen = Live.on_event

        def counting(self: Live, event: Event) -> None:
            heard.append(event)
            listen(self, event)

        Live.on_event = counting  # type: ignore[method-assign]
        try:
            engine._cache.clear()
            live = await engine._rebuild(cid)
            assert [type(e).__name__ for e in heard] == ["ReplayStarted", "CaughtUp"]
            assert [r["type"] for r in live.records] == ["resumed"]
            assert live.records[0]["messages"] == 13
            heard.clear()
            async with engine.turn(cid) as again:
                assert again is live  # the rebuilt one, from the cache
                _, turn = await engine.message(again, "and tomorrow?", None)
        finally:
            Live.on_event = listen  # type: ignore[method-assign]
        names = [type(e).__name__ for e in heard]
        assert names.count("MessageAdded") == 4
        assert names.count("ToolCallStarted") == names.count("ToolCallEnded") == 1
        assert names.count("ModelCallStarted") == names.count("ModelCallEnded") == 2
        assert [m["content"] for m in turn["added"]] == ["and tomorrow?", "", "Sunny in Oslo.",
                                                          "Sunny."]
        stored = await store.load(cid)
        assert stored is not None and len(stored.messages) == 17

    asyncio.run(main())
