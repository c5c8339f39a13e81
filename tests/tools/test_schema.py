"""Python types ↔ JSON schema, the same for Tool subclasses and @tool functions."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Optional

import pytest

from convo import Tool, ToolArgument, ToolArgumentError, ToolDefinitionError, tool
from convo.tools._schema import describe, json_schema
from convo.tools._validation import check


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


SCHEMAS: list[tuple[Any, dict[str, Any]]] = [
    (str, {"type": "string"}),
    (int, {"type": "integer"}),
    (float, {"type": "number"}),
    (bool, {"type": "boolean"}),
    (list, {"type": "array", "items": {}}),
    (list[str], {"type": "array", "items": {"type": "string"}}),
    (list[list[int]], {"type": "array", "items": {"type": "array",
                                                   "items": {"type": "integer"}}}),
    (tuple[int, ...], {"type": "array", "items": {"type": "integer"}}),
    (Sequence[float], {"type": "array", "items": {"type": "number"}}),
    (dict, {"type": "object", "additionalProperties": True}),
    (dict[str, Any], {"type": "object", "additionalProperties": True}),
    (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
    (Mapping[str, str], {"type": "object", "additionalProperties": {"type": "string"}}),
    (Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}),
    (Literal[1, 2], {"type": "integer", "enum": [1, 2]}),
    (Literal["a", 1], {"enum": ["a", 1]}),
    (Color, {"type": "string", "enum": ["red", "blue"]}),
    (Level, {"type": "integer", "enum": [1, 2]}),
    (Optional[str], {"anyOf": [{"type": "string"}, {"type": "null"}]}),  # noqa: UP045
    (int | None, {"anyOf": [{"type": "integer"}, {"type": "null"}]}),
    (int | str, {"anyOf": [{"type": "integer"}, {"type": "string"}]}),
    (Any, {}),
]


@pytest.mark.parametrize(("tp", "schema"), SCHEMAS)
def test_json_schema_of_types(tp: Any, schema: dict[str, Any]) -> None:
    assert json_schema(tp) == schema


class Unknown:
    """A class pydantic knows nothing about."""


def test_an_unsupported_type_is_a_definition_error_naming_the_place() -> None:
    with pytest.raises(ToolDefinitionError) as info:
        json_schema(Unknown, "tool 'x' argument 'y'")
    assert str(info.value).startswith(
        "tool 'x' argument 'y': cannot describe type <class 'test_schema.Unknown'> to a model "
        "(Unable to generate pydantic-core schema for <class 'test_schema.Unknown'>. Set "
        "`arbitrary_types_allowed=True` in the model_config to ignore this error or implement "
        "`__get_pydantic_core_schema__` on your type to fully support it.); use a type "
        "pydantic supports: str, int, float, bool")


class Everything(Tool):
    name = "everything"
    description = "Takes every kind of argument."
    arguments = {  # noqa: RUF012
        "s": ToolArgument("s", "a string", str),
        "i": ToolArgument("i", "an integer", int),
        "f": ToolArgument("f", "a number", float),
        "b": ToolArgument("b", "a flag", bool),
        "items": ToolArgument("items", "strings", list[str]),
        "d": ToolArgument("d", "an object", dict),
        "mode": ToolArgument("mode", "a literal", Literal["fast", "slow"]),
        "color": ToolArgument("color", "an enum", Color),
        "maybe": ToolArgument("maybe", "optional", Optional[str], required=False),  # noqa: UP045
        "n": ToolArgument("n", "with a default", int, required=False),
    }

    def _execute(self, args: dict[str, Any]) -> Any:
        return args


@tool
def everything(s: str, i: int, f: float, b: bool, items: list[str], d: dict,  # type: ignore[type-arg]
               mode: Literal["fast", "slow"], color: Color,
               maybe: Optional[str] = None, n: int = 3) -> Any:  # noqa: UP045
    """Takes every kind of argument.

    Args:
        s: a string
        i: an integer
        f: a number
        b: a flag
        items: strings
        d: an object
        mode: a literal
        color: an enum
        maybe: optional
        n: with a default
    """
    return locals()


EXPECTED_PARAMETERS = {
    "type": "object",
    "properties": {
        "s": {"type": "string", "description": "a string"},
        "i": {"type": "integer", "description": "an integer"},
        "f": {"type": "number", "description": "a number"},
        "b": {"type": "boolean", "description": "a flag"},
        "items": {"type": "array", "items": {"type": "string"}, "description": "strings"},
        "d": {"type": "object", "additionalProperties": True, "description": "an object"},
        "mode": {"type": "string", "enum": ["fast", "slow"], "description": "a literal"},
        "color": {"type": "string", "enum": ["red", "blue"], "description": "an enum"},
        "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "optional"},
        "n": {"type": "integer", "description": "with a default"},
    },
    "required": ["s", "i", "f", "b", "items", "d", "mode", "color"],
    "additionalProperties": False,
}


# The function's defaults are written into the schema; ToolArgument has no default to write.
WITH_DEFAULTS = {**EXPECTED_PARAMETERS, "properties": {
    **EXPECTED_PARAMETERS["properties"],  # type: ignore[dict-item]
    "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "optional",
              "default": None},
    "n": {"type": "integer", "description": "with a default", "default": 3},
}}


@pytest.mark.parametrize(("subject", "parameters"), [
    (Everything(), EXPECTED_PARAMETERS), (everything, WITH_DEFAULTS),
], ids=["subclass", "decorator"])
def test_subclass_and_decorator_give_the_same_schema(subject: Tool,
                                                     parameters: dict[str, Any]) -> None:
    assert subject.schema() == {
        "type": "function",
        "function": {
            "name": "everything",
            "description": "Takes every kind of argument.",
            "parameters": parameters,
        },
    }


@pytest.mark.parametrize("subject", [Everything(), everything], ids=["subclass", "decorator"])
def test_subclass_and_decorator_check_the_same_way(subject: Tool) -> None:
    good = {"s": "x", "i": 1, "f": 2, "b": False, "items": ["a"], "d": {"k": [1]},
            "mode": "fast", "color": "blue"}
    checked = subject.validate(good)
    defaults = {"maybe": None, "n": 3} if subject is everything else {}
    assert checked == {**good, "f": 2.0, "color": Color.BLUE, **defaults}
    assert isinstance(checked["f"], float)
    with pytest.raises(ToolArgumentError, match="argument 'color' must be one of 'red', "
                                                "'blue', got string 'green'"):
        subject.validate({**good, "color": "green"})
    with pytest.raises(ToolArgumentError, match=r"argument 'items'\[1\] must be string, "
                                                "got integer 2"):
        subject.validate({**good, "items": ["a", 2]})


CHECKS: list[tuple[Any, Any, Any]] = [
    (str, "x", "x"),
    (int, 3, 3),
    (float, 3, 3.0),
    (float, 2.5, 2.5),
    (bool, True, True),
    (list[int], [1, 2], [1, 2]),
    (dict[str, int], {"a": 1}, {"a": 1}),
    (Literal["a", "b"], "b", "b"),
    (Color, "red", Color.RED),
    (Level, 2, Level.HIGH),
    (Optional[int], None, None),  # noqa: UP045
    (int | str, "x", "x"),
    (Any, object, object),
]


@pytest.mark.parametrize(("tp", "value", "result"), CHECKS)
def test_check_accepts_and_converts(tp: Any, value: Any, result: Any) -> None:
    assert check(tp, value, "arg") == result


MISFITS: list[tuple[Any, Any, str]] = [
    (int, "3", "arg must be integer, got string '3'"),
    (int, True, "arg must be integer, got boolean True"),
    (int, 1.0, "arg must be integer, got number 1.0"),
    (float, "1.5", "arg must be number, got string '1.5'"),
    (float, False, "arg must be number, got boolean False"),
    (bool, 1, "arg must be boolean, got integer 1"),
    (str, None, "arg must be string, got null None"),
    (list[int], "1,2", "arg must be array of integer, got string '1,2'"),
    (list[int], [1, "2"], "arg[1] must be integer, got string '2'"),
    (dict[str, int], {"a": "1"}, "arg['a'] must be integer, got string '1'"),
    (dict, [1], "arg must be object, got array [1]"),
    (Literal[1, 2], 3, "arg must be one of 1, 2, got integer 3"),
    (Level, "2", "arg must be one of 1, 2, got string '2'"),
    (Optional[int], "x", "arg must be integer or null, got string 'x'"),  # noqa: UP045
    (int | str, 1.5, "arg must be integer or string, got number 1.5"),
    (int, "x" * 100, "arg must be integer, got string '" + "x" * 56 + "..."),
]


@pytest.mark.parametrize(("tp", "value", "message"), MISFITS)
def test_check_rejects_saying_expected_and_got(tp: Any, value: Any, message: str) -> None:
    with pytest.raises(ToolArgumentError) as info:
        check(tp, value, "arg")
    assert str(info.value) == message


@pytest.mark.parametrize(("tp", "text"), [
    (str, "string"), (list[str], "array of string"), (dict[str, int], "object"),
    (Optional[int], "integer or null"), (Literal["a"], "one of 'a'"),  # noqa: UP045
    (Color, "one of 'red', 'blue'"), (Any, "any value"), (int | str, "integer or string"),
])
def test_describe(tp: Any, text: str) -> None:
    assert describe(tp) == text
