"""SmokeModel: every offered tool called once with arguments from its schema, then a summary."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

import jsonschema
import pytest
from pydantic import BaseModel

from convo import Runner, ScriptedInterface
from convo.templates import LinearTemplate, LoopTemplate, ToolingTemplate, UserTemplate
from convo.testing import SmokeModel, assert_outcome, assert_tool_called, assert_tool_not_called
from convo.testing._smoke import example_arguments, example_value
from convo.tools import EndConversationTool, FinishTool, Tool, tool


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


class Node(BaseModel):
    """A tree: a pydantic type that refers to itself."""

    name: str
    parent: Node | None = None
    children: list[Node]


planted: list[Node] = []


@tool
def plant(tree: Node) -> str:
    """Plant a tree."""
    planted.append(tree)
    return f"planted {tree.name}"


LINKED = {  # a raw JSON schema, as an MCP server may send one: "#" is the whole schema
    "type": "object", "required": ["head"],
    "properties": {"head": {"type": "string"}, "tail": {"$ref": "#"},
                   "group": {"$ref": "#/$defs/Group"}},
    "$defs": {"Group": {"type": "object", "required": ["members"], "properties": {
        "members": {"type": "array", "items": {"$ref": "#/$defs/Group"}},
        "owner": {"oneOf": [{"$ref": "#"}, {"type": "null"}]}}}}}


class Linked(Tool):
    """A tool from code whose schema is a ``$ref`` cycle, checked by jsonschema."""

    name = "linked"
    description = "Store a linked list."
    given: ClassVar[list[dict[str, Any]]] = []

    def schema(self) -> dict[str, Any]:
        return {"type": "function", "function": {
            "name": self.name, "description": self.description, "parameters": LINKED}}

    def validate(self, args: Mapping[str, Any]) -> dict[str, Any]:
        jsonschema.validate(dict(args), LINKED)
        return dict(args)

    def _execute(self, args: dict[str, Any]) -> str:
        self.given.append(args)
        return "stored"


def test_a_schema_that_refers_to_itself_gets_a_finite_valid_value() -> None:
    planted.clear()
    Linked.given.clear()
    bot = LinearTemplate([UserTemplate(), ToolingTemplate([plant, Linked()])])
    session = Runner(SmokeModel(), bot, ScriptedInterface(["hi"])).run()
    assert_outcome(session, "completed")
    assert planted == [Node(name="example", parent=None, children=[])]
    assert Linked.given == [{"head": "example", "group": {"members": [], "owner": None}}]
    jsonschema.validate(Linked.given[0], LINKED)
    parameters = plant.schema()["function"]["parameters"]
    jsonschema.validate(example_value(parameters), parameters)


@pytest.mark.parametrize(("schema", "value"), [
    ({"$ref": "#"}, {}),  # nothing but itself: no finite value; the empty object
    ({"type": "array", "minItems": 1, "items": {"$ref": "#"}}, {}),
    ({"type": "object", "required": ["me"], "properties": {"me": {"$ref": "#"}}}, {}),
    ({"type": "object", "properties": {"a": {"type": "array", "items": {"$ref": "#"}}}},
     {"a": []}),
    ({"$defs": {"A": {"type": "object", "required": ["b"],
                      "properties": {"b": {"$ref": "#/$defs/B"}}},
                "B": {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}}},
      "$ref": "#/$defs/A"}, {"b": {}}),
])
def test_cycles_stop_at_the_shortest_value(schema: dict[str, object], value: object) -> None:
    assert example_value(schema) == value
