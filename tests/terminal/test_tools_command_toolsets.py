"""``/tools`` with a toolset (an MCP server) in a bot's tool list: its tools are listed when
asked, and a toolset that cannot be listed is named with the cause."""

from __future__ import annotations

from convo import Tool, tool
from convo._terminal.slash_commands import tools_text


@tool
def shout(text: str) -> str:
    """Say it louder."""
    return text.upper()


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class Calc:
    def __init__(self, down: str | None = None) -> None:
        self.name = "calc"
        self.down = down

    def tools(self) -> list[Tool]:
        if self.down is not None:
            raise ConnectionError(self.down)
        return [add]

    async def atools(self) -> list[Tool]:
        return self.tools()


def test_tools_lists_a_toolsets_tools_and_names_one_that_is_down() -> None:
    assert tools_text((Calc(), shout)) == (
        "2 tools:\n  add: Add two numbers.\n  shout: Say it louder.")
    assert tools_text((Calc("refused"), shout)) == (
        "1 tools:\n  shout: Say it louder.\n  (the tools of 'calc' could not be listed: "
        "ConnectionError: refused)")
    assert tools_text((Calc("refused"),)) == (
        "0 tools:\n  (the tools of 'calc' could not be listed: ConnectionError: refused)")
