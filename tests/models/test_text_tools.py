"""Tool calls written as text: the parser, leaked-call recovery, the text protocol."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from convo import Message, ToolCall
from convo._errors import ToolCallParseError
from convo.models._openai.text_protocol import (
    messages_for_text,
    read_reply,
    tools_prompt,
)
from convo.models._text_tools import (
    MALFORMED_CALL,
    new_call_id,
    parse_block,
    parse_text_calls,
    recover_tool_calls,
)


def ids() -> Callable[[], str]:
    counter = itertools.count(1)
    return lambda: f"c{next(counter)}"


WEATHER = {"type": "function", "function": {
    "name": "weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                    "days": {"type": "integer"}},
                   "required": ["city"]}}}
FINISH = {"name": "finish", "description": "End the turn.",
          "parameters": {"type": "object", "properties": {}}}
TOOLS = (WEATHER, FINISH)
NAMES = {"weather", "finish"}

# -- the text protocol: <tool_call> blocks ----------------------------------------------------

PARSE = [
    pytest.param("Hello there.", "Hello there.", [], {}, id="plain-text"),
    pytest.param('<tool_call>{"name": "weather", "arguments": {"city": "Oslo"}}</tool_call>',
                 "", [ToolCall("c1", "weather", {"city": "Oslo"})], {}, id="one-call"),
    pytest.param('Let me look.\n<tool_call>\n{"name": "weather", "arguments": {"city": "Oslo"}}'
                 '\n</tool_call>', "Let me look.",
                 [ToolCall("c1", "weather", {"city": "Oslo"})], {}, id="text-before"),
    pytest.param('<tool_call>{"name": "weather", "arguments": {"city": "Oslo"}}</tool_call>\n'
                 '<tool_call>{"name": "weather", "arguments": {"city": "Rome"}}</tool_call>',
                 "", [ToolCall("c1", "weather", {"city": "Oslo"}),
                      ToolCall("c2", "weather", {"city": "Rome"})], {}, id="parallel"),
    pytest.param('<tool_call>{"name": "finish"}</tool_call>', "",
                 [ToolCall("c1", "finish", {})], {}, id="no-arguments"),
    pytest.param('<tool_call>{"name": "weather", "parameters": {"city": "Oslo"}}</tool_call>',
                 "", [ToolCall("c1", "weather", {"city": "Oslo"})], {}, id="parameters-alias"),
    pytest.param('<tool_call>{"name": "weather", "arguments": "{\\"city\\": \\"Oslo\\"}"}'
                 '</tool_call>', "", [ToolCall("c1", "weather", {"city": "Oslo"})], {},
                 id="arguments-as-json-string"),
    pytest.param('<tool_call>```json\n{"name": "finish", "arguments": {}}\n```</tool_call>', "",
                 [ToolCall("c1", "finish", {})], {}, id="fenced-inside-block"),
    pytest.param('<tool_call>[{"name": "finish", "arguments": {}}, '
                 '{"name": "weather", "arguments": {"city": "Oslo"}}]</tool_call>', "",
                 [ToolCall("c1", "finish", {}), ToolCall("c2", "weather", {"city": "Oslo"})],
                 {}, id="list-in-one-block"),
    pytest.param('Sure.\n<tool_call>\n{"name": "weather", "arguments": {"city": "Oslo"}}',
                 "Sure.", [ToolCall("c1", "weather", {"city": "Oslo"})], {},
                 id="unclosed-last-block"),
    pytest.param('<tool_call>{"name": "weather", "arguments": {"city": </tool_call>', "",
                 [ToolCall("c1", MALFORMED_CALL, {}, raw_arguments='{"name": "weather", '
                           '"arguments": {"city":')],
                 {"c1": "the <tool_call> block is not valid JSON (Expecting value: line 1 "
                        "column 42 (char 41))"}, id="bad-json"),
    pytest.param("<tool_call></tool_call>", "",
                 [ToolCall("c1", MALFORMED_CALL, {}, raw_arguments="")],
                 {"c1": "the <tool_call> block is empty"}, id="empty-block"),
    pytest.param('<tool_call>{"arguments": {}}</tool_call>', "",
                 [ToolCall("c1", MALFORMED_CALL, {}, raw_arguments='{"arguments": {}}')],
                 {"c1": "the call has no \"name\" (the tool's name, a string)"}, id="no-name"),
    pytest.param('<tool_call>{"name": "weather", "arguments": [1]}</tool_call>', "",
                 [ToolCall("c1", MALFORMED_CALL, {},
                           raw_arguments='{"name": "weather", "arguments": [1]}')],
                 {"c1": "\"arguments\" of 'weather' must be a JSON object, got list"},
                 id="arguments-not-object"),
    pytest.param('<tool_call>"weather"</tool_call> ok', "ok",
                 [ToolCall("c1", MALFORMED_CALL, {}, raw_arguments='"weather"')],
                 {"c1": 'expected a JSON object with "name" and "arguments", got str'},
                 id="not-an-object"),
]


@pytest.mark.parametrize(("text", "content", "calls", "errors"), PARSE)
def test_parse_text_calls(text: str, content: str, calls: list[ToolCall],
                          errors: dict[str, str]) -> None:
    reply = parse_text_calls(text, ids())
    assert reply.content == content
    assert list(reply.calls) == calls
    assert dict(reply.errors) == errors


def test_parse_block_raises_its_own_error_type() -> None:
    with pytest.raises(ToolCallParseError, match="not valid JSON") as info:
        parse_block("{nope")
    assert not isinstance(info.value, AssertionError)


def test_call_ids_are_fresh() -> None:
    assert new_call_id() != new_call_id()
    assert new_call_id().startswith("call_")


# -- recovery of leaked calls (native format) ----------------------------------------------

OSLO = [ToolCall("c1", "weather", {"city": "Oslo"})]

RECOVER = [
    pytest.param('<tool_call>{"name": "weather", "arguments": {"city": "Oslo"}}</tool_call>',
                 (OSLO, "tool_call_tags"), id="tags"),
    pytest.param('  {"name": "weather", "arguments": {"city": "Oslo"}}\n', (OSLO, "json"),
                 id="bare-object"),
    pytest.param('[{"name": "weather", "arguments": {"city": "Oslo"}}]', (OSLO, "json"),
                 id="list"),
    pytest.param('{"type": "function", "function": {"name": "weather", '
                 '"arguments": "{\\"city\\": \\"Oslo\\"}"}}', (OSLO, "json"),
                 id="api-shape"),
    pytest.param('```json\n{"name": "weather", "arguments": {"city": "Oslo"}}\n```',
                 (OSLO, "fenced_json"), id="fenced"),
    pytest.param('```\n{"name": "weather", "arguments": {"city": "Oslo"}}\n```',
                 (OSLO, "fenced_json"), id="fenced-no-language"),
    # Anything else stays text.
    pytest.param("The weather in Oslo is fine.", None, id="prose"),
    pytest.param('{"name": "Alice", "arguments": {}}', None, id="not-an-offered-tool"),
    pytest.param('{"name": "weather"}', None, id="object-without-arguments"),
    pytest.param('{"city": "Oslo"}', None, id="other-json"),
    pytest.param('Here: {"name": "weather", "arguments": {"city": "Oslo"}}', None,
                 id="text-around"),
    pytest.param('<tool_call>{"name": "weather", "arguments": {}}</tool_call> done', None,
                 id="tags-with-text-after"),
    pytest.param('<tool_call>{"name": "weather", "arguments": </tool_call>', None,
                 id="tags-malformed"),
    pytest.param('<b>{"name": "weather", "arguments": {}}</b>', None, id="other-tag"),
    pytest.param('```json\n{"name": "weather", "arguments": {}}\n```\nand\n```\n{}\n```', None,
                 id="two-fences"),
    pytest.param("```python\nprint(1)\n```", None, id="code-fence"),
    pytest.param('[{"name": "weather", "arguments": {}}, {"name": "rm", "arguments": {}}]',
                 None, id="list-with-unknown-tool"),
    pytest.param("[]", None, id="empty-list"),
    pytest.param("", None, id="empty"),
]


@pytest.mark.parametrize(("text", "expected"), RECOVER)
def test_recover_tool_calls(text: str, expected: tuple[list[ToolCall], str] | None) -> None:
    found = recover_tool_calls(text, NAMES, ids())
    if expected is None:
        assert found is None
    else:
        assert found is not None
        assert (list(found[0]), found[1]) == expected


# -- reading a reply -------------------------------------------------------------------------


def test_native_reply_with_a_leaked_call_is_read_as_the_call_with_a_note() -> None:
    leaked = Message("assistant", '{"name": "finish", "arguments": {}}',
                     metadata={"finish_reason": "stop"})
    reply = read_reply(leaked, TOOLS, tool_format="native")
    assert reply.content == ""
    assert [c.name for c in reply.tool_calls] == ["finish"]
    assert dict(reply.metadata) == {"finish_reason": "stop", "recovered_tool_calls": "json"}


def test_recovery_can_be_switched_off() -> None:
    leaked = Message("assistant", '{"name": "finish", "arguments": {}}')
    assert read_reply(leaked, TOOLS, tool_format="native", recover=False) is leaked


@pytest.mark.parametrize("message", [
    Message("assistant", "plain"),
    Message("assistant", "", tool_calls=[ToolCall("a", "finish", {})]),
    Message("assistant", '{"name": "finish", "arguments": {}}',
            tool_calls=[ToolCall("a", "finish", {})]),
])
def test_replies_that_need_nothing_are_returned_as_they_are(message: Message) -> None:
    assert read_reply(message, TOOLS, tool_format="native") is message
    assert read_reply(message, TOOLS, tool_format="text") is message


def test_no_tools_offered_means_no_recovery() -> None:
    leaked = Message("assistant", '{"name": "finish", "arguments": {}}')
    assert read_reply(leaked, (), tool_format="native") is leaked


def test_text_reply_with_a_malformed_call_keeps_the_problem() -> None:
    message = Message("assistant", "Let me see. <tool_call>{oops</tool_call>")
    reply = read_reply(message, TOOLS, tool_format="text")
    assert reply.content == "Let me see."
    [call] = reply.tool_calls
    assert (call.name, call.raw_arguments) == (MALFORMED_CALL, "{oops")
    errors = reply.metadata["tool_call_errors"]
    assert errors == {call.id: "the <tool_call> block is not valid JSON (Expecting property "
                               "name enclosed in double quotes: line 1 column 2 (char 1))"}


def test_text_format_also_recovers_a_bare_call() -> None:
    reply = read_reply(Message("assistant", '{"name": "finish", "arguments": {}}'), TOOLS,
                       tool_format="text")
    assert [c.name for c in reply.tool_calls] == ["finish"]


# -- the conversation as a model without native tools reads it --------------------------------


def test_tools_prompt_names_every_tool_with_its_schema_and_an_exact_example() -> None:
    prompt = tools_prompt(TOOLS)
    assert prompt == (
        "You can call these tools:\n"
        "\n"
        "- weather: The weather in a city.\n"
        '  arguments (JSON schema): {"type": "object", "properties": {"city": {"type": '
        '"string"}, "days": {"type": "integer"}}, "required": ["city"]}\n'
        "- finish: End the turn.\n"
        '  arguments (JSON schema): {"type": "object", "properties": {}}\n'
        "\n"
        "To call a tool, write a <tool_call> block holding one JSON object with the tool's "
        '"name" and its "arguments", exactly like this:\n'
        "<tool_call>\n"
        '{"name": "weather", "arguments": {"city": "..."}}\n'
        "</tool_call>\n"
        "Write one block per call (several blocks call several tools), and nothing after "
        "them: each result comes back in a <tool_response> block. When no tool is needed, "
        "answer in plain text."
    )
    example = prompt.split("exactly like this:\n", 1)[1].split("\nWrite one", 1)[0]
    assert [c.name for c in parse_text_calls(example).calls] == ["weather"]


def _wire(messages: list[Message]) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in messages]


def test_messages_for_text() -> None:
    calls = [ToolCall("a", "weather", {"city": "Oslo"}), ToolCall("b", "weather", {"city": "Rome"})]
    messages = [
        Message("system", "Be brief."),
        Message("user", "Weather?"),
        Message("assistant", "Looking.", tool_calls=calls),
        Message("tool", "Sunny", tool_call_id="a", name="weather"),
        Message("tool", "Rainy", tool_call_id="b", name="weather"),
        Message("assistant", "Sunny in Oslo, rainy in Rome."),
    ]
    out = messages_for_text(messages, TOOLS)
    assert _wire(out) == [
        ("system", "Be brief.\n\n" + tools_prompt(TOOLS)),
        ("user", "Weather?"),
        ("assistant", 'Looking.\n<tool_call>\n{"name": "weather", "arguments": {"city": '
                      '"Oslo"}}\n</tool_call>\n<tool_call>\n{"name": "weather", "arguments": '
                      '{"city": "Rome"}}\n</tool_call>'),
        ("user", '<tool_response name="weather">\nSunny\n</tool_response>\n'
                 '<tool_response name="weather">\nRainy\n</tool_response>'),
        ("assistant", "Sunny in Oslo, rainy in Rome."),
    ]
    assert all(not m.tool_calls for m in out)


def test_messages_for_text_without_a_system_message_gets_one() -> None:
    out = messages_for_text([Message("user", "Hi")], TOOLS)
    assert _wire(out) == [("system", tools_prompt(TOOLS)), ("user", "Hi")]


def test_a_malformed_call_is_answered_with_the_expected_format() -> None:
    bad = ToolCall("x", MALFORMED_CALL, {}, raw_arguments="{oops")
    messages = [
        Message("user", "Weather?"),
        Message("assistant", "", tool_calls=[bad],
                metadata={"tool_call_errors": {"x": "not valid JSON"}}),
        Message("tool", "Error: there is no tool named 'malformed_tool_call'",
                tool_call_id="x", name=MALFORMED_CALL),
    ]
    out = messages_for_text(messages, TOOLS)
    assert _wire(out)[2:] == [
        ("assistant", "<tool_call>\n{oops\n</tool_call>"),
        ("user", f'<tool_response name="{MALFORMED_CALL}">\nError: your tool call could not '
                 'be read: not valid JSON. Write each call as a JSON object with "name" and '
                 '"arguments" inside <tool_call> tags, exactly like this:\n<tool_call>\n'
                 '{"name": "weather", "arguments": {"city": "..."}}\n</tool_call>\n'
                 "</tool_response>"),
    ]


def test_without_tools_the_earlier_calls_still_go_as_text() -> None:
    messages = [Message("user", "Hi"),
                Message("assistant", "", tool_calls=[ToolCall("a", "finish", {})]),
                Message("tool", "Finished", tool_call_id="a", name="finish")]
    assert _wire(messages_for_text(messages, ())) == [
        ("user", "Hi"),
        ("assistant", '<tool_call>\n{"name": "finish", "arguments": {}}\n</tool_call>'),
        ("user", '<tool_response name="finish">\nFinished\n</tool_response>'),
    ]


def test_a_raw_newline_inside_a_string_is_read() -> None:
    # Small local models write control characters inside JSON strings (seen with SmolLM2).
    from convo.models._text_tools import parse_block

    [call] = parse_block('{"name": "answer", "arguments": {"text": "two\nlines"}}')
    assert (call.name, call.arguments) == ("answer", {"text": "two\nlines"})
