"""The Chat Completions converter: pure dicts, no network."""

from __future__ import annotations

from typing import Any

import pytest

from convo import Message, ToolCall
from convo.models._openai.wire import (
    StreamAccumulator,
    WireError,
    message_from_response,
    message_to_wire,
    tool_to_wire,
)
from convo.testing._server.chat_wire import (
    chunks_from_message,
    message_from_wire,
    response_from_message,
)

USAGE = {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}

# -- out ------------------------------------------------------------------------------------

OUT = [
    pytest.param(Message("system", "Be brief."), {"role": "system", "content": "Be brief."},
                 id="system"),
    pytest.param(Message("user", "Hi", name="ann"),
                 {"role": "user", "content": "Hi", "name": "ann"}, id="user-with-name"),
    pytest.param(Message("assistant", ""), {"role": "assistant", "content": ""},
                 id="assistant-empty"),
    pytest.param(
        Message("assistant", "", tool_calls=[ToolCall("c1", "add", {"a": 1}),
                                             ToolCall("c2", "add", {"a": 2})]),
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1}'}},
            {"id": "c2", "type": "function", "function": {"name": "add", "arguments": '{"a": 2}'}},
        ]},
        id="parallel-tool-calls",
    ),
    pytest.param(
        Message("assistant", "Let me look.",
                tool_calls=[ToolCall("c1", "finish_task", raw_arguments="all done")]),
        {"role": "assistant", "content": "Let me look.", "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "finish_task", "arguments": "all done"}},
        ]},
        id="raw-arguments-with-text",
    ),
    pytest.param(
        Message("tool", "42", tool_call_id="c1", name="add", metadata={"error": False}),
        {"role": "tool", "tool_call_id": "c1", "content": "42"},
        id="tool-message",
    ),
    pytest.param(Message("user", "ünïcode ✓"), {"role": "user", "content": "ünïcode ✓"},
                 id="unicode"),
]


@pytest.mark.parametrize(("message", "wire"), OUT)
def test_message_to_wire(message: Message, wire: dict[str, Any]) -> None:
    assert message_to_wire(message) == wire


@pytest.mark.parametrize(("message", "wire"), OUT)
def test_request_messages_read_back(message: Message, wire: dict[str, Any]) -> None:
    back = message_from_wire(wire)
    assert back.role == message.role
    assert back.content == message.content
    assert back.tool_calls == message.tool_calls
    assert back.tool_call_id == message.tool_call_id


FUNCTION = {"name": "add", "description": "Add.", "parameters": {"type": "object"}}


@pytest.mark.parametrize(("schema", "wire"), [
    ({"type": "function", "function": FUNCTION}, {"type": "function", "function": FUNCTION}),
    (FUNCTION, {"type": "function", "function": FUNCTION}),
    ({"type": "custom", "custom": {"name": "x"}}, {"type": "custom", "custom": {"name": "x"}}),
])
def test_tool_to_wire(schema: dict[str, Any], wire: dict[str, Any]) -> None:
    assert tool_to_wire(schema) == wire


def test_tool_without_a_name_is_refused() -> None:
    with pytest.raises(WireError, match="needs a 'function'"):
        tool_to_wire({"description": "nameless"})


# -- in -------------------------------------------------------------------------------------


def response(message: dict[str, Any], finish: str | None = "stop",
             usage: dict[str, int] | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {"id": "x", "object": "chat.completion", "model": "m", "created": 0,
                         "choices": [{"index": 0, "message": message, "finish_reason": finish}]}
    if usage is not None:
        d["usage"] = usage
    return d


def fn_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": arguments}}


IN = [
    pytest.param(
        response({"role": "assistant", "content": "Hello"}, usage=USAGE),
        Message("assistant", "Hello", metadata={"finish_reason": "stop", "usage": USAGE}),
        id="text-with-usage",
    ),
    pytest.param(
        response({"role": "assistant", "content": None}),
        Message("assistant", "", metadata={"finish_reason": "stop"}),
        id="empty-content",
    ),
    pytest.param(
        response({"role": "assistant", "content": "cut", "tool_calls": None}, "length"),
        Message("assistant", "cut", metadata={"finish_reason": "length"}),
        id="finish-length",
    ),
    pytest.param(
        response({"role": "assistant", "content": ""}, "content_filter"),
        Message("assistant", "", metadata={"finish_reason": "content_filter"}),
        id="finish-content-filter",
    ),
    pytest.param(
        response({"role": "assistant", "content": None, "refusal": "I can't help with that."}),
        Message("assistant", "I can't help with that.",
                metadata={"finish_reason": "stop", "refusal": "I can't help with that."}),
        id="refusal",
    ),
    pytest.param(
        response({"role": "assistant", "content": None, "tool_calls": [
            fn_call("c1", "weather", '{"city": "Oslo"}'),
            fn_call("c2", "weather", '{"city": "Rome"}'),
        ]}, "tool_calls"),
        Message("assistant", "", tool_calls=[ToolCall("c1", "weather", {"city": "Oslo"}),
                                             ToolCall("c2", "weather", {"city": "Rome"})],
                metadata={"finish_reason": "tool_calls"}),
        id="parallel-tool-calls",
    ),
    pytest.param(
        response({"role": "assistant", "content": None, "tool_calls": [
            fn_call("c1", "add", '{"a": 1'),
        ]}, "tool_calls"),
        Message("assistant", "", tool_calls=[ToolCall("c1", "add", raw_arguments='{"a": 1')],
                metadata={"finish_reason": "tool_calls"}),
        id="malformed-arguments-kept-raw",
    ),
    pytest.param(
        response({"role": "assistant", "content": None, "tool_calls": [
            fn_call("c1", "finish_task", '"all done"'),
            fn_call("c2", "f", "[1, 2]"),
        ]}, "tool_calls"),
        Message("assistant", "", tool_calls=[
            ToolCall("c1", "finish_task", raw_arguments='"all done"'),
            ToolCall("c2", "f", raw_arguments="[1, 2]"),
        ], metadata={"finish_reason": "tool_calls"}),
        id="non-object-arguments-kept-raw",
    ),
    pytest.param(
        response({"role": "assistant", "content": None, "tool_calls": [
            fn_call("c1", "ping", ""),
        ]}, "tool_calls"),
        Message("assistant", "", tool_calls=[ToolCall("c1", "ping", {})],
                metadata={"finish_reason": "tool_calls"}),
        id="empty-arguments",
    ),
    pytest.param(
        response({"role": "assistant", "content": [{"type": "text", "text": "a"},
                                                   {"type": "text", "text": "b"}]}),
        Message("assistant", "ab", metadata={"finish_reason": "stop"}),
        id="content-parts",
    ),
    pytest.param(
        response({"role": "assistant", "content": "x"}, None,
                 usage={"prompt_tokens": 2, "completion_tokens": 1}),
        Message("assistant", "x", metadata={"usage": {
            "prompt_tokens": 2, "completion_tokens": 1, "total_tokens": 3}}),
        id="no-finish-reason-total-computed",
    ),
]


@pytest.mark.parametrize(("wire", "message"), IN)
def test_message_from_response(wire: dict[str, Any], message: Message) -> None:
    assert message_from_response(wire) == message


# The SDK's types want string content and a finish_reason; the rest goes through it too.
IN_SDK = [p for p in IN if p.id not in ("content-parts", "no-finish-reason-total-computed")]


@pytest.mark.parametrize(("wire", "message"), IN_SDK)
def test_message_from_sdk_object(wire: dict[str, Any], message: Message) -> None:
    from openai.types.chat import ChatCompletion

    assert message_from_response(ChatCompletion.model_validate(wire)) == message


@pytest.mark.parametrize(("wire", "expected"), [
    ({"object": "list", "data": []}, "with 'choices'"),
    ({"choices": []}, "with 'choices'"),
    ({"error": {"message": "overloaded"}}, "overloaded"),
    ({"choices": [{"index": 0, "text": "legacy"}]}, "choices\\[0\\].message"),
    (response({"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]}),
     "tool call 1 has no function name"),
    (response({"role": "assistant", "content": 42}), "content to be a string"),
    ("not a response", "got str"),
])
def test_malformed_responses_say_what_was_expected(wire: Any, expected: str) -> None:
    with pytest.raises(WireError, match=expected):
        message_from_response(wire)


# -- streaming ------------------------------------------------------------------------------

REPLIES = [
    pytest.param(Message("assistant", "Hello there, how are you today?"), id="text"),
    pytest.param(Message("assistant", ""), id="empty"),
    pytest.param(Message("assistant", "Checking.", tool_calls=[
        ToolCall("call_1", "weather", {"city": "Oslo", "days": 3, "units": "metric"}),
        ToolCall("call_2", "weather", {"city": "Reykjavík", "days": 10}),
    ]), id="text-and-parallel-calls"),
    pytest.param(Message("assistant", "", tool_calls=[
        ToolCall("call_9", "finish_task", raw_arguments="a bare summary string"),
    ]), id="raw-arguments"),
    pytest.param(Message("assistant", "", tool_calls=[ToolCall("call_1", "ping", {})]),
                 id="no-arguments"),
    pytest.param(Message("assistant", "I can't help with that.",
                         metadata={"refusal": "I can't help with that."}), id="refusal"),
    pytest.param(Message("assistant", "trunc", metadata={"finish_reason": "length"}),
                 id="finish-length"),
]


@pytest.mark.parametrize("message", REPLIES)
@pytest.mark.parametrize("piece", [1, 3, 8, 1000])
def test_streamed_reply_equals_the_plain_one(message: Message, piece: int) -> None:
    plain = message_from_response(response_from_message(
        message, model="m", response_id="r", created=0, usage=USAGE))
    accumulator = StreamAccumulator()
    deltas = [accumulator.add(c) for c in chunks_from_message(
        message, model="m", response_id="r", created=0, usage=USAGE, piece=piece)]
    assert accumulator.complete
    assert accumulator.message() == plain
    if not message.metadata.get("refusal"):
        assert "".join(deltas) == message.content
    assert plain.content == message.content
    assert plain.tool_calls == message.tool_calls
    assert plain.metadata["usage"] == USAGE


def test_streamed_tool_call_arguments_arrive_in_fragments() -> None:
    message = Message("assistant", "", tool_calls=[ToolCall("c1", "f", {"text": "x" * 40})])
    chunks = chunks_from_message(message, model="m", response_id="r", created=0, piece=8)
    fragments = [c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
                 for c in chunks if c["choices"] and c["choices"][0]["delta"].get("tool_calls")]
    assert fragments[0] == ""
    assert len(fragments) > 5
    assert "".join(fragments) == '{"text": "' + "x" * 40 + '"}'


def test_accumulator_without_indexes_and_with_sdk_chunks() -> None:
    from openai.types.chat import ChatCompletionChunk

    def chunk(delta: dict[str, Any], finish: str | None = None) -> ChatCompletionChunk:
        return ChatCompletionChunk.model_validate({
            "id": "r", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    accumulator = StreamAccumulator()
    for c in [
        chunk({"role": "assistant", "tool_calls": [
            {"index": 0, "id": "a", "function": {"name": "f", "arguments": '{"x"'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]}),
        chunk({"tool_calls": [
            {"index": 1, "id": "b", "function": {"name": "g", "arguments": "{}"}}]}),
        chunk({}, "tool_calls"),
    ]:
        accumulator.add(c)
    assert accumulator.message() == Message(
        "assistant", "", tool_calls=[ToolCall("a", "f", {"x": 1}), ToolCall("b", "g", {})],
        metadata={"finish_reason": "tool_calls"})

    # Some servers leave out the index: a new id starts a new call.
    loose = StreamAccumulator()
    for delta in [
        {"tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{"}}]},
        {"tool_calls": [{"function": {"arguments": "}"}}]},
        {"tool_calls": [{"id": "b", "function": {"name": "g", "arguments": "{}"}}]},
    ]:
        loose.add({"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
    loose.add({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    assert [c.id for c in loose.message().tool_calls] == ["a", "b"]


def test_a_name_repeated_in_every_fragment_is_taken_once() -> None:
    accumulator = StreamAccumulator()
    for arguments in ('{"a"', ": 1}"):
        accumulator.add({"choices": [{"index": 0, "finish_reason": None, "delta": {
            "tool_calls": [{"index": 0, "id": "c1", "function": {"name": "add",
                                                                "arguments": arguments}}]}}]})
    accumulator.add({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    assert accumulator.message().tool_calls == (ToolCall("c1", "add", {"a": 1}),)


def test_a_cut_stream_is_not_complete() -> None:
    chunks = chunks_from_message(Message("assistant", "Hello there"), model="m",
                                 response_id="r", created=0)
    accumulator = StreamAccumulator()
    for c in chunks[:-1]:
        accumulator.add(c)
    assert not accumulator.complete
    assert accumulator.chunks == len(chunks) - 1


def test_an_error_in_the_stream_is_reported() -> None:
    with pytest.raises(WireError, match="the stream carried an error"):
        StreamAccumulator().add({"error": {"message": "boom"}})


def test_a_streamed_call_without_a_name_is_malformed() -> None:
    accumulator = StreamAccumulator()
    accumulator.add({"choices": [{"index": 0, "finish_reason": "tool_calls", "delta": {
        "tool_calls": [{"index": 0, "id": "a", "function": {"arguments": "{}"}}]}}]})
    with pytest.raises(WireError, match="never got a function name"):
        accumulator.message()
