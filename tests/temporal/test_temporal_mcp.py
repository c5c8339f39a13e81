"""An MCP server's tool listing on the Temporal engine is an activity (``convo.list_tools``),
not I/O in workflow code: the model is offered the server's tools, and the workflow's history
holds the listing's activity."""

from __future__ import annotations

import asyncio
from pathlib import Path

from temporal_kit import start, texts, worker
from weather_tools import chat_loop

from convo import FinishTool, tool
from convo.testing import FakeMCPServer


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}"


def test_an_mcp_listing_is_an_activity(temporal: str, tmp_path: Path) -> None:
    with FakeMCPServer([weather], name="meteo") as fake:
        server = fake.http(prefix="m_")
        template = chat_loop(server, FinishTool())

        async def go() -> list[str]:
            async with worker(temporal, tmp_path, template=template) as (client, queue, _, _):
                handle = await start(client, queue, "m1")
                said = await handle.execute_update("message", {"content": "tools?"})
                assert texts(said["added"]) == [("user", "tools?"),
                                                ("assistant", "finish, m_weather")]
                history = await handle.fetch_history()
                return [e.activity_task_scheduled_event_attributes.activity_type.name
                        for e in history.events
                        if e.HasField("activity_task_scheduled_event_attributes")]

        scheduled = asyncio.run(go())
    # (the first write is the opening's: the system message)
    assert scheduled == ["convo.create", "convo.write", "convo.list_tools", "convo.model",
                         "convo.write"]
