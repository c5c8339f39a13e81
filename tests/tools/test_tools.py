"""Tool, ToolArgument and ToolResult on their own: validation, execution, results."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

import pytest

from convo import Tool, ToolArgument, ToolArgumentError, ToolCall, ToolResult
from convo.tools._base import TERMINAL_NOTE, to_text


class Greet(Tool):
    name = "greet"
    description = "Greet someone."
    arguments = {  # noqa: RUF012
        "who": ToolArgument("who", "Whom to greet", str),
        "times": ToolArgument("times", "How often", int, required=False),
        "tone": ToolArgument("tone", "How", Literal["warm", "dry"], required=False),
    }

    def _execute(self, args: dict[str, Any]) -> str:
        return " ".join([f"Hello, {args['who']}!"] * args.get("times", 1))


class Reply(Tool):
    name = "reply"
    description = "Reply to the user."
    arguments = {"text": ToolArgument("text", "", str)}  # noqa: RUF012
    terminal = True

    def _execute(self, args: dict[str, Any]) -> str:
        return str(args["text"])


def test_tool_argument_fields() -> None:
    arg = ToolArgument("who", "Whom", str)
    assert (arg.name, arg.description, arg.value_type, arg.required) == ("who", "Whom", str,
                                                                         True)
    assert ToolArgument("n", "", int, required=False).required is False


def test_execute_validates_then_runs() -> None:
    greet = Greet()
    assert greet.execute(who="Ada") == "Hello, Ada!"
    assert greet.execute(who="Ada", times=2) == "Hello, Ada! Hello, Ada!"
    assert not greet.is_async


@pytest.mark.parametrize(("kwargs", "message"), [
    ({}, "tool 'greet' is missing required argument 'who' (string); it takes who (string), "
         "times (integer, optional), tone (one of 'warm', 'dry', optional)"),
    ({"who": "Ada", "age": 3},
     "tool 'greet' got unexpected argument 'age'; it takes who (string), times (integer, "
     "optional), tone (one of 'warm', 'dry', optional)"),
    ({"who": 7}, "tool 'greet' argument 'who' must be string, got integer 7"),
    ({"who": "Ada", "times": 1.5}, "tool 'greet' argument 'times' must be integer, got number 1.5"),
    ({"who": "Ada", "tone": "cold"},
     "tool 'greet' argument 'tone' must be one of 'warm', 'dry', got string 'cold'"),
    ({"who": None}, "tool 'greet' argument 'who' must be string, got null None"),
])
def test_execute_rejects_bad_arguments_saying_what_was_expected(
    kwargs: dict[str, Any], message: str,
) -> None:
    with pytest.raises(ToolArgumentError) as info:
        Greet().execute(**kwargs)
    assert str(info.value) == message


def test_arguments_of_a_call_from_json_text_or_an_object() -> None:
    greet = Greet()
    assert greet.arguments_of(ToolCall("c", "greet", {"who": "Ada"})) == {"who": "Ada"}
    assert greet.arguments_of(ToolCall("c", "greet", {}, raw_arguments='{"who": "Bo"}')) == {
        "who": "Bo"}
    with pytest.raises(ToolArgumentError, match="are not valid JSON"):
        greet.arguments_of(ToolCall("c", "greet", {}, raw_arguments='{"who": '))
    with pytest.raises(ToolArgumentError, match="must be a JSON object, got '\"Ada\"'"):
        greet.arguments_of(ToolCall("c", "greet", {}, raw_arguments='"Ada"'))


def test_a_tool_without_arguments() -> None:
    class Ping(Tool):
        name = "ping"
        description = "Ping."

        def _execute(self, args: dict[str, Any]) -> str:
            return "pong"

    assert Ping().execute() == "pong"
    assert Ping().signature_text() == "no arguments"
    assert Ping().schema()["function"]["parameters"] == {
        "type": "object", "properties": {}, "required": [], "additionalProperties": False}


def test_a_subclass_that_forgets_execute_says_so() -> None:
    class Lazy(Tool):
        name = "lazy"

    with pytest.raises(NotImplementedError, match="Lazy must implement _execute"):
        Lazy().execute()


def test_an_async_subclass() -> None:
    class Fetch(Tool):
        name = "fetch"
        description = "Fetch."
        arguments = {"url": ToolArgument("url", "", str)}  # noqa: RUF012

        async def _execute(self, args: dict[str, Any]) -> str:
            await asyncio.sleep(0)
            return f"fetched {args['url']}"

    fetch = Fetch()
    assert fetch.is_async
    assert asyncio.run(fetch.execute(url="x")) == "fetched x"
    assert asyncio.run(fetch.ainvoke({"url": "y"})) == "fetched y"


def test_terminal_flag_adds_the_note_to_the_description_sent_to_the_model() -> None:
    assert TERMINAL_NOTE == ("Calling this tool ends your turn: its output is your response. "
                             "Do not add text after calling it.")
    assert Reply().schema()["function"]["description"] == f"Reply to the user. {TERMINAL_NOTE}"
    assert Reply.description == "Reply to the user."
    assert Greet().schema()["function"]["description"] == "Greet someone."


def test_tool_result_never_encodes_a_string_twice() -> None:
    assert ToolResult("plain").text == "plain"
    assert ToolResult('{"a": 1}').text == '{"a": 1}'
    assert ToolResult('"quoted"').text == '"quoted"'
    assert ToolResult({"a": [1, "é"]}).text == '{"a": [1, "é"]}'
    assert ToolResult([1, 2]).text == "[1, 2]"
    assert ToolResult(3).text == "3"
    assert ToolResult(None).text == "null"
    assert ToolResult(True).text == "true"
    assert ToolResult("x", metadata={"k": 1}).metadata == {"k": 1}


def test_to_text_of_return_values() -> None:
    assert to_text("x") == "x"
    assert to_text(ToolResult({"a": 1})) == '{"a": 1}'
    assert to_text({"b": 2}) == '{"b": 2}'
    assert to_text({1}) == "[1]"  # what pydantic dumps: sets, dataclasses, models, dates
    with pytest.raises(TypeError) as info:
        to_text(Greet())
    assert str(info.value) == (
        "the tool returned a Greet, which cannot be sent to the model as JSON (Unable to "
        "serialize unknown type: <class 'test_tools.Greet'>); return a str, a ToolResult or "
        "JSON values")


def test_schema_is_built_once() -> None:
    greet = Greet()
    assert greet.schema() is greet.schema()


def test_repr_names_the_tool() -> None:
    assert repr(Greet()) == "<Greet 'greet'>"
