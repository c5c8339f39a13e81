"""The tools most tests call, and the one-question agent that offers them: ``weather`` (a
city's weather, always sunny) and ``answer`` (a terminal tool: its result ends the turn)."""

from __future__ import annotations

from convo import LinearTemplate, SystemTemplate, Tool, ToolingTemplate, UserTemplate, tool


@tool
def weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: The city's name.
    """
    return f"Sunny in {city}"


@tool(terminal=True)
def answer(text: str) -> str:
    """Give the final answer to the user.

    Args:
        text: The answer.
    """
    return f"Answer: {text}"


def agent(question: str, *tools: Tool) -> LinearTemplate:
    """One question to an agent with ``tools`` (``weather`` if none is named)."""
    return LinearTemplate([SystemTemplate("You are an agent."), UserTemplate(question),
                           ToolingTemplate(list(tools) or [weather])])
