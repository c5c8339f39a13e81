"""Any type pydantic supports, as the peers' own test suites use them (openai-agents'
function-schema tests, pydantic-ai's tool tests): the exact schema convo sends, and the exact
message the model sees when its arguments do not fit."""

from __future__ import annotations

import dataclasses
import datetime
import enum
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from convo import Runner, ToolArgumentError, ToolDefinitionError
from convo.models import MockModel
from convo.templates import LinearTemplate, ToolingTemplate, UserTemplate
from convo.tools import Tool, tool
from convo.tools._base import to_text


class Address(BaseModel):
    """A postal address."""

    street: str
    city: str = Field(description="The city")
    zip_code: Annotated[str, Field(pattern=r"^\d{4}$")]


class Options(TypedDict):
    verbose: bool
    depth: int


@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0


class Unit(enum.Enum):
    C = "celsius"
    F = "fahrenheit"


class Tree(BaseModel):
    label: str
    children: list[Tree] = []


def _parameters(t: Tool) -> dict[str, Any]:
    parameters: dict[str, Any] = t.schema()["function"]["parameters"]
    return parameters


def _error(t: Tool, args: dict[str, Any]) -> str:
    with pytest.raises(ToolArgumentError) as info:
        t.validate(args)
    return str(info.value)


# -- nested models, TypedDict, dataclasses ------------------------------------------------------

@tool
def ship(address: Address, options: Options, at: Point) -> str:
    """Ship a parcel.

    Args:
        address: Where to.
        options: How.
        at: Where it is now.
    """
    return f"{address.city} {options['depth']} {at.x}"


def test_nested_model_typeddict_and_dataclass_schemas() -> None:
    assert _parameters(ship) == {
        "type": "object",
        "properties": {
            "address": {
                "type": "object", "description": "Where to.",
                "properties": {
                    "street": {"type": "string"},
                    "city": {"type": "string", "description": "The city"},
                    "zip_code": {"type": "string", "pattern": r"^\d{4}$"},
                },
                "required": ["street", "city", "zip_code"],
                "additionalProperties": False,
            },
            "options": {
                "type": "object", "description": "How.",
                "properties": {"verbose": {"type": "boolean"}, "depth": {"type": "integer"}},
                "required": ["verbose", "depth"],
                "additionalProperties": False,
            },
            "at": {
                "type": "object", "description": "Where it is now.",
                "properties": {"x": {"type": "number"}, "y": {"type": "number", "default": 0.0}},
                "required": ["x"],
                "additionalProperties": False,
            },
        },
        "required": ["address", "options", "at"],
        "additionalProperties": False,
    }


def test_nested_values_arrive_as_the_types_the_function_asks_for() -> None:
    args = ship.validate({"address": {"street": "Main 1", "city": "Oslo", "zip_code": "0150"},
                          "options": {"verbose": True, "depth": 2}, "at": {"x": 1}})
    assert args == {"address": Address(street="Main 1", city="Oslo", zip_code="0150"),
                    "options": {"verbose": True, "depth": 2}, "at": Point(1.0, 0.0)}
    assert ship.execute(**args) == "Oslo 2 1.0"


def test_nested_errors_name_the_place_expected_and_got() -> None:
    assert _error(ship, {"address": {"street": 1, "city": "Oslo", "zip_code": "12"},
                         "options": {"verbose": "yes"}, "at": {"x": "1"}}) == (
        "tool 'ship' argument 'address'['street'] must be string, got integer 1; "
        "tool 'ship' argument 'address'['zip_code']: string should match pattern "
        "'^\\d{4}$', got string '12'; "
        "tool 'ship' argument 'options'['verbose'] must be boolean, got string 'yes'; "
        "tool 'ship' argument 'options' is missing required field 'depth' (integer); "
        "tool 'ship' argument 'at'['x'] must be number, got string '1'")
    assert _error(ship, {"address": "Oslo", "options": {"verbose": True, "depth": 1},
                         "at": {"x": 1}}) == (
        "tool 'ship' argument 'address' must be object Address, got string 'Oslo'")


def test_a_recursive_model_keeps_its_defs() -> None:
    @tool
    def plant(tree: Tree) -> int:
        """Plant a tree."""
        return len(tree.children)

    node = {"type": "object",
            "properties": {"label": {"type": "string"},
                           "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"},
                                        "default": []}},
            "required": ["label"], "additionalProperties": False}
    assert _parameters(plant) == {
        "type": "object", "properties": {"tree": {"$ref": "#/$defs/Tree"}},
        "required": ["tree"], "additionalProperties": False, "$defs": {"Tree": node}}
    assert plant.execute(tree={"label": "a", "children": [{"label": "b"}]}) == 1


# -- Field, Annotated, defaults, enums, Literal, unions, dates -----------------------------------

@tool
def book(
    guests: Annotated[int, Field(ge=1, le=8, description="How many people")],
    room: Literal["single", "double"] = "double",
    unit: Unit = Unit.C,
    note: Annotated[str, "A note for the desk"] = "",
    nights: int = Field(default=1, ge=1),
    arrival: datetime.date | None = None,
    code: int | str | None = None,
) -> str:
    """Book a room."""
    return f"{guests} {room} {unit.value} {note!r} {nights} {arrival} {code!r}"


def test_constraints_descriptions_and_defaults_are_in_the_schema() -> None:
    assert _parameters(book) == {
        "type": "object",
        "properties": {
            "guests": {"type": "integer", "minimum": 1, "maximum": 8,
                       "description": "How many people"},
            "room": {"type": "string", "enum": ["single", "double"], "default": "double"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
            "note": {"type": "string", "description": "A note for the desk", "default": ""},
            "nights": {"type": "integer", "minimum": 1, "default": 1},
            "arrival": {"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}],
                        "default": None},
            "code": {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}],
                     "default": None},
        },
        "required": ["guests"],
        "additionalProperties": False,
    }


def test_a_field_without_default_is_required() -> None:
    @tool
    def pick(n: int = Field(ge=1, description="Which one")) -> int:
        """Pick."""
        return n

    assert _parameters(pick)["required"] == ["n"]
    assert _error(pick, {}) == ("tool 'pick' is missing required argument 'n' (integer); it "
                                "takes n (integer)")


def test_a_field_default_reaches_the_function_as_its_value() -> None:
    # Not the FieldInfo object: the function gets 1.
    assert book.execute(guests=2) == "2 double celsius '' 1 None None"


def test_values_are_converted_enum_members_accepted() -> None:
    assert book.execute(guests=1, room="single", unit="fahrenheit", arrival="2025-03-01",
                        code="A1") == "1 single fahrenheit '' 1 2025-03-01 'A1'"
    assert book.execute(guests=1, unit=Unit.F).startswith("1 double fahrenheit")


@pytest.mark.parametrize(("args", "message"), [
    ({"guests": 0}, "tool 'book' argument 'guests' must be greater than or equal to 1, "
                    "got integer 0"),
    ({"guests": "2"}, "tool 'book' argument 'guests' must be integer, got string '2'"),
    ({"guests": 2, "room": "suite"},
     "tool 'book' argument 'room' must be one of 'single', 'double', got string 'suite'"),
    ({"guests": 2, "unit": "kelvin"},
     "tool 'book' argument 'unit' must be one of 'celsius', 'fahrenheit', got string 'kelvin'"),
    ({"guests": 2, "nights": 0},
     "tool 'book' argument 'nights' must be greater than or equal to 1, got integer 0"),
    ({"guests": 2, "arrival": "2025-13-01"},
     "tool 'book' argument 'arrival' must be date or null, got string '2025-13-01'"),
    ({"guests": 2, "code": 1.5},
     "tool 'book' argument 'code' must be integer or string or null, got number 1.5"),
    ({}, "tool 'book' is missing required argument 'guests' (integer); it takes guests "
         "(integer), room (one of 'single', 'double', optional), unit (one of 'celsius', "
         "'fahrenheit', optional), note (string, optional), nights (integer, optional), "
         "arrival (date or null, optional), code (integer or string or null, optional)"),
])
def test_validation_messages_the_model_sees(args: dict[str, Any], message: str) -> None:
    assert _error(book, args) == message


def test_the_model_sees_the_message_and_the_loop_goes_on() -> None:
    model = MockModel(["{book(guests=0)}", "{book(guests=2)}", "Booked."])
    session = Runner(model, LinearTemplate([UserTemplate("Book."),
                                            ToolingTemplate([book])])).run()
    assert [m.content for m in session.messages if m.role == "tool"] == [
        "Error: tool 'book' argument 'guests' must be greater than or equal to 1, got integer 0",
        "2 double celsius '' 1 None None",
    ]


# -- docstring styles -------------------------------------------------------------------------

def _google(a: int, b: str = "x") -> None:
    """Combine two values.

    Args:
        a: The first value,
            on two lines.
        b: The second value.

    Returns:
        Nothing at all.
    """


def _sphinx(a: int, b: str = "x") -> None:
    """Combine two values.

    :param a: The first value,
        on two lines.
    :param b: The second value.
    :returns: Nothing at all.
    """


def _numpy(a: int, b: str = "x") -> None:
    """Combine two values.

    Parameters
    ----------
    a : int
        The first value,
        on two lines.
    b : str, optional
        The second value.

    Returns
    -------
    None
        Nothing at all.
    """


@pytest.mark.parametrize("fn", [_google, _sphinx, _numpy], ids=["google", "sphinx", "numpy"])
def test_docstring_styles_give_the_same_descriptions(fn: Any) -> None:
    t = tool(fn)
    assert t.description == "Combine two values."
    assert _parameters(t)["properties"] == {
        "a": {"type": "integer", "description": "The first value, on two lines."},
        "b": {"type": "string", "description": "The second value.", "default": "x"},
    }


# -- return values and annotations ------------------------------------------------------------

def test_return_values_pydantic_can_dump_go_to_the_model_as_json() -> None:
    assert to_text(Address(street="Main 1", city="Oslo", zip_code="0150")) == (
        '{"street": "Main 1", "city": "Oslo", "zip_code": "0150"}')
    assert to_text(Point(1.0, 2.5)) == '{"x": 1.0, "y": 2.5}'
    assert to_text({"when": datetime.date(2025, 3, 1), "unit": Unit.F}) == (
        '{"when": "2025-03-01", "unit": "fahrenheit"}')
    assert to_text([Point(0, 0)]) == '[{"x": 0, "y": 0}]'


def test_an_unresolvable_return_annotation_is_ignored() -> None:
    namespace: dict[str, Any] = {}
    exec("def f(x: int) -> 'NotDefinedAnywhere':\n    return x\n", namespace)
    assert tool(namespace["f"]).execute(x=2) == 2


def test_typing_typeddict_on_python_3_11_is_a_definition_error() -> None:
    import sys
    import typing

    class Plain(typing.TypedDict):
        a: int

    def f(x: Plain) -> None:
        """F."""

    if sys.version_info >= (3, 12):
        assert _parameters(tool(f))["required"] == ["x"]
        return
    with pytest.raises(ToolDefinitionError) as info:
        tool(f)
    assert str(info.value).startswith(
        "tool 'f' argument 'x': cannot describe type <class "
        "'test_tool_types.test_typing_typeddict_on_python_3_11_is_a_definition_error.<locals>"
        ".Plain'> to a model (Please use `typing_extensions.TypedDict` instead of "
        "`typing.TypedDict` on Python < 3.12.)")


# -- OpenAI strict mode -----------------------------------------------------------------------

def test_strict_schema_requires_every_property_and_null_means_left_out() -> None:
    @tool(strict=True)
    def find(query: str, limit: int = 10, where: Address | None = None) -> str:
        """Find things."""
        return f"{query} {limit} {where}"

    function = find.schema()["function"]
    assert function["strict"] is True
    assert function["parameters"] == {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": ["integer", "null"]},
            "where": {"anyOf": [
                {"type": "object",
                 "description": "A postal address.",
                 "properties": {"street": {"type": "string"},
                                "city": {"type": "string", "description": "The city"},
                                "zip_code": {"type": "string", "pattern": r"^\d{4}$"}},
                 "required": ["street", "city", "zip_code"],
                 "additionalProperties": False},
                {"type": "null"}]},
        },
        "required": ["query", "limit", "where"],
        "additionalProperties": False,
    }
    assert find.execute(query="x", limit=None, where=None) == "x 10 None"


def test_strict_mode_refuses_a_free_form_object() -> None:
    with pytest.raises(ToolDefinitionError) as info:
        @tool(strict=True)
        def f(extra: dict[str, Any]) -> None:
            """F."""

    assert str(info.value) == (
        "tool 'f': strict mode cannot describe a free-form object (a dict); use a pydantic "
        "model, a dataclass or a TypedDict, or strict=False")


def test_a_strict_tool_through_the_openai_sdk_and_the_fake_server() -> None:
    from convo import Message, OpenAIModel, ToolCall
    from convo.testing import OpenAIServer

    @tool(strict=True)
    def find(query: str, limit: int = 10) -> str:
        """Find things."""
        return f"{query}:{limit}"

    with OpenAIServer() as server:
        server.add(Message("assistant", "", tool_calls=(
            ToolCall("c1", "find", {"query": "x", "limit": None}),)), "Found.")
        with OpenAIModel("test-model", base_url=server.base_url, api_key="test",
                         max_retries=0) as model:
            session = Runner(model, LinearTemplate([UserTemplate("Find x."),
                                                    ToolingTemplate([find])])).run()
        assert server.requests[0]["tools"] == [find.schema()]
        assert server.requests[0]["tools"][0]["function"]["strict"] is True
    assert session.messages[2].content == "x:10"  # null: left out, the default
