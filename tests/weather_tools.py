"""The tools most tests call, and the two bot shapes that offer tools: ``weather`` (a city's
weather, always sunny), ``answer`` (a terminal tool: its result ends the turn), ``agent`` (one
question, one agent turn), ``chat_loop`` (a system line, then user turns and agent turns
round and round: the shape of a served chat) and ``chat`` (the same without tools, perhaps
greeting first)."""

from __future__ import annotations

from typing import Any

from convo.templates import (
    AssistantTemplate,
    LinearTemplate,
    LoopTemplate,
    SystemTemplate,
    ToolingTemplate,
    UserTemplate,
)
from convo.tools import Tool, tool


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


def agent(question: str, *tools: Tool, system: str = "You are an agent.") -> LinearTemplate:
    """One question to an agent with ``tools`` (``weather`` if none is named)."""
    return LinearTemplate([SystemTemplate(system), UserTemplate(question),
                           ToolingTemplate(list(tools) or [weather])])


def chat_loop(*tools: Any, system: str = "Be brief.", turns: int | None = None,
              **tooling: Any) -> LinearTemplate:
    """A chat: ``system``, then a user turn and an agent turn with ``tools`` (anything a
    ToolingTemplate takes: tools, toolsets, MCP servers), round and round (``turns`` times if
    given). ``tooling`` goes to the ToolingTemplate (``context=``, ``before=`` ...)."""
    return LinearTemplate([SystemTemplate(system), LoopTemplate([
        UserTemplate(), ToolingTemplate(list(tools), **tooling)], exit_loop_count=turns)])


def chat(system: str | None, *, greeting: str | None = None, turns: int | None = None
         ) -> LinearTemplate:
    """``system`` (none if None), the assistant's ``greeting`` if given, then a user message
    and a reply round and round (``turns`` times if given; no tools)."""
    opening = ([SystemTemplate(system)] if system is not None else []) + (
        [AssistantTemplate(greeting)] if greeting is not None else [])
    return LinearTemplate([*opening, LoopTemplate([UserTemplate(), AssistantTemplate()],
                                                  exit_loop_count=turns)])
