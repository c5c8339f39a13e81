"""SmokeModel: every offered tool called once with arguments from its schema, then a summary."""

from __future__ import annotations

import enum
from typing import Literal

import pytest

from convo import (
    EndConversationTool,
    FinishTool,
    LinearTemplate,
    LoopTemplate,
    Runner,
    ScriptedInterface,
    ToolingTemplate,
    UserTemplate,
    tool,
)
from convo.testing import SmokeModel, assert_outcome, assert_tool_called, assert_tool_not_called
from convo.testing.smoke import example_arguments, example_value


class Unit(enum.Enum):
    C = "celsius"
    F = "fahrenheit"


@tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: the first number.
        b: the second number.
    """
    return a + b


@tool
def forecast(city: str, unit: Unit, days: int | None = None,
             tags: list[str] | None = None, mode: Literal["short", "long"] = "short") -> str:
    """The weather.

    Args:
        city: where.
        unit: which unit.
        days: how many days.
        tags: labels.
        mode: how much to say.
    """
    return f"{city}: sunny ({unit.value}, {days} days, {tags}, {mode})"


@tool
def broken() -> str:
    """Always fails."""
    raise RuntimeError("out of order")


def test_a_bot_is_smoke_tested_in_one_line() -> None:
    bot = LinearTemplate([UserTemplate("hi"), ToolingTemplate([add, forecast, broken])])
    model = SmokeModel()

    session = Runner(model, bot).run()

    assert_outcome(session, "completed")
    assert_tool_called(session, "add", a=0, b=0)
    assert_tool_called(session, "forecast", city="example", unit="celsius", days=0,
                       tags=["example"], mode="short")
    assert session.messages[-1].content == (
        "SmokeModel called 3 tools:\n"
        '- add({"a": 0, "b": 0}) -> 0\n'
        '- forecast({"city": "example", "unit": "celsius", "days": 0, "tags": ["example"], '
        '"mode": "short"}) -> example: sunny (celsius, 0 days, [\'example\'], short)\n'
        "- broken({}) -> Error: tool 'broken' failed: RuntimeError: out of order"
    )
    assert model.calls == 2


def test_termination_tools_are_left_alone_unless_the_output_is_restricted() -> None:
    bot = LoopTemplate([UserTemplate(), ToolingTemplate(
        [add, FinishTool(), EndConversationTool()], restrict_output=True)])

    session = Runner(SmokeModel(), bot, ScriptedInterface(["one", "two"])).run()

    assert_outcome(session, "stopped")
    assert_tool_not_called(session, "end_conversation")
    roles = [m.role for m in session.messages]
    assert roles == ["user", "assistant", "tool", "assistant", "system", "assistant", "tool"] * 2
    assert [c.name for m in session.messages for c in m.tool_calls] == ["add", "finish"] * 2


def test_without_tools_it_numbers_its_replies() -> None:
    bot = LoopTemplate([UserTemplate(), ToolingTemplate([])])
    session = Runner(SmokeModel(), bot, ScriptedInterface(["a", "b"])).run()
    assert [m.content for m in session.messages if m.role == "assistant"] == [
        "SmokeModel reply 1.", "SmokeModel reply 2."]


def test_tools_picks_which_tools_it_calls() -> None:
    bot = LinearTemplate([UserTemplate("bye"), ToolingTemplate([add, EndConversationTool()])])
    session = Runner(SmokeModel(tools=["end_conversation"]), bot).run()
    assert_outcome(session, "ended", farewell="example")
    assert_tool_not_called(session, "add")


@pytest.mark.parametrize(("schema", "value"), [
    ({"type": "string", "minLength": 10}, "examplexxx"),
    ({"type": "integer", "minimum": 5}, 5),
    ({"type": "integer", "exclusiveMinimum": 5}, 6),
    ({"type": "number"}, 0.0),
    ({"type": ["null", "boolean"]}, True),
    ({"const": 3}, 3),
    ({"default": "x", "type": "string"}, "x"),
    ({"type": "array", "items": {"type": "integer"}, "minItems": 2}, [0, 0]),
    ({"oneOf": [{"type": "null"}, {"type": "string", "enum": ["b", "a"]}]}, "b"),
    ({"$defs": {"P": {"type": "object", "properties": {"n": {"type": "integer"}}}},
      "$ref": "#/$defs/P"}, {"n": 0}),
])
def test_example_values_fit_their_schema(schema: dict[str, object], value: object) -> None:
    assert example_value(schema) == value


def test_example_arguments_of_a_tool_schema() -> None:
    assert example_arguments(add.schema()) == {"a": 0, "b": 0}
    assert example_arguments({"function": {"name": "f"}}) == {}


def test_the_name_is_not_collected_by_pytest(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
from convo.testing import SmokeModel

def test_nothing():
    assert SmokeModel().calls == 0
""")
    pytester.runpytest("-W", "error").assert_outcomes(passed=1)
