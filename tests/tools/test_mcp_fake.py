"""convo.testing.FakeMCPServer: convo tools served over MCP, stdio and HTTP (API §17)."""

from __future__ import annotations

import asyncio

import pytest

from convo import (
    EndTemplate,
    LinearTemplate,
    MockModel,
    Runner,
    ToolingTemplate,
    UserTemplate,
    tool,
)
from convo.testing import FakeMCPServer, MCPCall


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
