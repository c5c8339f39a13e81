"""convo.testing.FakeMCPServer: convo tools served over MCP, stdio and HTTP (API §17)."""

from __future__ import annotations

import asyncio

import pytest

from convo import Runner
from convo.models import MockModel
from convo.templates import EndTemplate, LinearTemplate, ToolingTemplate, UserTemplate
from convo.testing import FakeMCPServer, MCPCall
from convo.tools import tool


@tool
def weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: The city's name.
    """
    if city == "Atlantis":
        raise ValueError("no such city")
    return f"Sunny in {city}"


@tool
async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_bot_that_uses_mcp_is_tested_offline(transport: str) -> None:
    with FakeMCPServer([weather, add], name="meteo") as fake:
        server = fake.stdio(prefix="m_") if transport == "stdio" else fake.http(prefix="m_")
        tree = LinearTemplate([UserTemplate("Weather?"), ToolingTemplate([*server]),
                               EndTemplate("Bye")])
        model = MockModel(["{m_weather(city='Oslo')}{m_add(a=1, b=2)}",
                           "{m_weather(city='Atlantis')}", "Sunny."])
        session = asyncio.run(Runner(model, tree).arun())
        assert fake.calls == [MCPCall("weather", {"city": "Oslo"}),
                              MCPCall("add", {"a": 1, "b": 2}),
                              MCPCall("weather", {"city": "Atlantis"})]
        params = server.tools()[0].schema()["function"]["parameters"]
        assert params["properties"]["city"]["description"] == "The city's name."
    assert [m.content for m in session.messages if m.role == "tool"] == [
        "Sunny in Oslo", "3",
        "Error: tool 'm_weather' failed: MCPServerError: MCP server 'meteo' says the call of "
        "'weather' failed: ValueError: no such city"]
    assert server._connection is None  # closed with the fake


@pytest.mark.parametrize(("transport", "mode"), [("stdio", "run"), ("http", "arun")])
def test_each_call_sends_its_call_id_in_the_requests_meta(transport: str, mode: str) -> None:
    with FakeMCPServer([weather], name="meteo") as fake:
        server = fake.stdio() if transport == "stdio" else fake.http()
        tree = LinearTemplate([UserTemplate("Weather?"), ToolingTemplate([server])])
        model = MockModel(["{weather(city='Oslo')}{weather(city='Rome')}", "Sunny."])
        runner = Runner(model, tree)
        session = runner.run() if mode == "run" else asyncio.run(runner.arun())
        sent = [(c.name, c.arguments, c.call_id) for c in fake.calls]
    ids = [c.id for m in session.messages for c in m.tool_calls]
    assert len(set(ids)) == 2
    assert sent == [("weather", {"city": "Oslo"}, ids[0]), ("weather", {"city": "Rome"}, ids[1])]
