"""@tool: a typed, documented function becomes a Tool."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from convo import Tool, ToolArgumentError, ToolDefinitionError, tool
from convo.tools._decorator import FunctionTool, parse_docstring


@tool
def get_weather(city: str, unit: str = "celsius") -> str:
    """Get the current weather for a city.

    Uses the cached forecast.

    Args:
        city: The city to look up,
            for example "Paris".
        unit (str): "celsius" or "fahrenheit".

    Returns:
        A short description.
    """
    return f"Sunny in {city}, 22 degrees {unit}"


def test_name_description_and_arguments_come_from_the_function() -> None:
    assert isinstance(get_weather, Tool)
    assert isinstance(get_weather, FunctionTool)
    assert get_weather.name == "get_weather"
    assert get_weather.description == ("Get the current weather for a city. "
                                       "Uses the cached forecast.")
    assert get_weather.schema()["function"]["parameters"] == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": 'The city to look up, for example "Paris".'},
            "unit": {"type": "string", "description": '"celsius" or "fahrenheit".',
                     "default": "celsius"},
        },
        "required": ["city"],
        "additionalProperties": False,
    }


def test_execute_validates_and_calling_calls_the_function() -> None:
    assert get_weather.execute(city="Oslo") == "Sunny in Oslo, 22 degrees celsius"
    assert get_weather("Rome", "fahrenheit") == "Sunny in Rome, 22 degrees fahrenheit"
    with pytest.raises(ToolArgumentError, match="missing required argument 'city'"):
        get_weather.execute()


def test_options_name_description_terminal_timeout() -> None:
    @tool(name="format_list", description="Format a list.", terminal=True, timeout=2.5)
    def fmt(items: list[str]) -> str:
        """Ignored docstring."""
        return "\n".join(items)

    assert fmt.name == "format_list"
    assert fmt.description == "Format a list."
    assert fmt.terminal is True
    assert fmt.timeout == 2.5
    assert fmt.schema()["function"]["description"] == (
        "Format a list. Calling this tool ends your turn: its output is your response. "
        "Do not add text after calling it.")


def test_optional_without_a_default_is_not_required_and_gets_none() -> None:
    @tool
    def find(query: str, limit: int | None) -> str:
        """Find."""
        return f"{query}:{limit}"

    assert find.schema()["function"]["parameters"]["required"] == ["query"]
    assert find.execute(query="x") == "x:None"
    assert find.execute(query="x", limit=2) == "x:2"
    assert find.execute(query="x", limit=None) == "x:None"


def test_async_functions() -> None:
    @tool
    async def slow_add(a: int, b: int) -> int:
        """Add, eventually."""
        await asyncio.sleep(0)
        return a + b

    assert slow_add.is_async
    assert asyncio.run(slow_add.execute(a=1, b=2)) == 3
    assert not get_weather.is_async


def test_no_docstring_gives_empty_descriptions() -> None:
    @tool
    def bare(x: int) -> int:
        return x

    assert bare.description == ""
    assert bare.schema()["function"]["parameters"]["properties"] == {"x": {"type": "integer"}}


@pytest.mark.parametrize(("source", "message"), [
    ("def f(x): return x", "@tool 'f': argument 'x' needs a type hint"),
    ("def f(*xs: int): return xs", "@tool 'f': *args and **kwargs cannot be described"),
    ("def f(**kw: int): return kw", "@tool 'f': *args and **kwargs cannot be described"),
    ("import threading\ndef f(x: threading.Lock): return x",
     "tool 'f' argument 'x': cannot describe type"),
    ("def f(x: 'Missing'): return x", "@tool 'f': cannot resolve the type hints"),
])
def test_author_mistakes_are_raised_when_decorating(source: str, message: str) -> None:
    namespace: dict[str, Any] = {}
    exec(source, namespace)
    with pytest.raises(ToolDefinitionError) as info:
        tool(namespace["f"])
    assert str(info.value).startswith(message)


def test_parse_docstring_google_style() -> None:
    doc = """Summary line.

    More text
    over lines.

    Args:
        a (int): First.
        b: Second,
            continued.
        *args: Ignored form.

    Raises:
        ValueError: never.
    """
    assert parse_docstring(doc) == ("Summary line. More text over lines.",
                                    {"a": "First.", "b": "Second, continued.",
                                     "args": "Ignored form."})
    assert parse_docstring(None) == ("", {})
    assert parse_docstring("Only a summary.") == ("Only a summary.", {})
