"""The Responses API converter on its own (``convo.models._openai.wire_responses`` and its server
side): exact request bodies, replies read back, and the stream rebuilt; no network."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convo import Message, OpenAIModel, ToolCall
from convo.models._openai.wire import WireError
from convo.models._openai.wire_responses import (
    ReplyFailed,
    ResponsesAccumulator,
    input_to_wire,
    message_from_response,
    tool_choice_to_wire,
    tools_to_wire,
    usage_from_wire,
)
from convo.testing._server.responses_wire import (
    events_from_message,
    messages_from_input,
    response_from_message,
)

REASONING = {"id": "rs_1", "type": "reasoning", "encrypted_content": "gAAA-opaque",
             "summary": [{"type": "summary_text", "text": "The user wants Oslo's weather."}]}
WEATHER = {"type": "function", "function": {
    "name": "weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]},
    "strict": True}}


def conversation() -> list[Message]:
    return [
        Message("system", "You are terse."),
        Message("user", "Weather in Oslo?"),
        Message("assistant", "Checking.", tool_calls=[ToolCall("call_1", "weather",
                                                               {"city": "Oslo"})],
                metadata={"reasoning": [REASONING], "usage": {"prompt_tokens": 1}}),
        Message("tool", "Sunny", tool_call_id="call_1", name="weather"),
        Message("assistant", "", tool_calls=[ToolCall("call_2", "weather", {"city": "Rome"})]),
        Message("tool", "Rainy", tool_call_id="call_2", name="weather"),
        Message("assistant", "Sunny in Oslo, rainy in Rome."),
    ]


# -- out ---------------------------------------------------------------------------------------


def test_input_items_in_order_with_reasoning_in_place() -> None:
    assert input_to_wire(conversation()) == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Weather in Oslo?"},
        REASONING,
        {"role": "assistant", "content": "Checking."},
        {"type": "function_call", "call_id": "call_1", "name": "weather",
         "arguments": '{"city": "Oslo"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "Sunny"},
        {"type": "function_call", "call_id": "call_2", "name": "weather",
         "arguments": '{"city": "Rome"}'},
        {"type": "function_call_output", "call_id": "call_2", "output": "Rainy"},
        {"role": "assistant", "content": "Sunny in Oslo, rainy in Rome."},
    ]


def test_raw_arguments_go_back_as_they_came() -> None:
    broken = Message("assistant", "", tool_calls=[ToolCall("c", "f", raw_arguments='{"a": ')])
    assert input_to_wire([broken]) == [
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": '{"a": '}]


def test_reasoning_that_is_not_a_list_of_items_is_refused() -> None:
    odd = Message("assistant", "x", metadata={"reasoning": "thought hard"})
    with pytest.raises(WireError, match="metadata\\['reasoning'\\] to be a list of reasoning "
                                        "items \\(objects\\), got str 'thought hard'"):
        input_to_wire([odd])


def test_tools_are_flat_function_tools() -> None:
    bare = {"name": "ping", "parameters": {"type": "object", "properties": {}}}
    hosted = {"type": "web_search"}
    assert tools_to_wire([WEATHER, bare, hosted]) == [
        {"type": "function", "name": "weather", "description": "The weather in a city.",
         "parameters": WEATHER["function"]["parameters"], "strict": True},
        {"type": "function", "name": "ping", "parameters": {"type": "object",
                                                           "properties": {}}},
        {"type": "web_search"},
    ]
    with pytest.raises(WireError, match="needs a 'function' \\(or a 'name'\\)"):
        tools_to_wire([{"parameters": {}}])


def test_tool_choice_naming_a_function_is_flat() -> None:
    assert tool_choice_to_wire("required") == "required"
    assert tool_choice_to_wire({"type": "function", "function": {"name": "weather"}}) == {
        "type": "function", "name": "weather"}


def model(**kw: Any) -> OpenAIModel:
    return OpenAIModel("o4-mini", api="responses", api_key="k", **kw)


def test_the_exact_request_body() -> None:
    request = model(max_tokens=300, temperature=0.5, reasoning={"effort": "low",
                                                                "summary": "auto"}
                    ).request(conversation()[:2], [WEATHER])
    assert request == {
        "model": "o4-mini",
        "input": [{"role": "system", "content": "You are terse."},
                  {"role": "user", "content": "Weather in Oslo?"}],
        "store": False,
        "tools": tools_to_wire([WEATHER]),
        "tool_choice": "auto",
        "reasoning": {"effort": "low", "summary": "auto"},
        "include": ["reasoning.encrypted_content"],
        "temperature": 0.5,
        "max_output_tokens": 300,
    }


def test_stored_requests_ask_for_no_encrypted_reasoning_and_stream_as_asked() -> None:
    request = model(store=True, stream=True, reasoning={"effort": "high"}, tool_choice=None,
                    timeout=5).request([Message("user", "hi")], [WEATHER])
    assert request == {
        "model": "o4-mini", "input": [{"role": "user", "content": "hi"}], "store": True,
        "tools": tools_to_wire([WEATHER]), "reasoning": {"effort": "high"},
        "stream": True, "timeout": 5}


def test_text_tool_format_sends_no_tools_and_calls_as_text() -> None:
    request = model(tool_format="text").request(conversation()[:4], [WEATHER])
    assert "tools" not in request and "tool_choice" not in request
    assert [item.get("role", item.get("type")) for item in request["input"]] == [
        "system", "user", "reasoning", "assistant", "user"]
    assert "<tool_call>" in request["input"][3]["content"]
    assert "weather" in request["input"][0]["content"]


def test_other_apis_and_chat_only_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="api must be 'chat' \\(Chat Completions\\) or "
                                         "'responses' \\(the Responses API\\), got 'completions'"):
        OpenAIModel(api="completions")
    with pytest.raises(ValueError, match="store= and reasoning= are Responses API settings"):
        OpenAIModel(reasoning={"effort": "low"})


# -- in ----------------------------------------------------------------------------------------


def response(output: list[Any], **more: Any) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "status": "completed", "output": output,
            "usage": {"input_tokens": 12, "output_tokens": 30, "total_tokens": 42,
                      "output_tokens_details": {"reasoning_tokens": 24}}, **more}


def test_a_reply_with_reasoning_text_and_calls() -> None:
    message = message_from_response(response([
        REASONING,
        {"type": "message", "role": "assistant", "id": "msg_1", "content": [
            {"type": "output_text", "text": "Checking ", "annotations": []},
            {"type": "output_text", "text": "Oslo."}]},
        {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "weather",
         "arguments": '{"city": "Oslo"}'},
    ]))
    assert message == Message(
        "assistant", "Checking Oslo.",
        tool_calls=[ToolCall("call_9", "weather", {"city": "Oslo"})],
        metadata={"finish_reason": "tool_calls", "reasoning": [REASONING], "usage": {
            "prompt_tokens": 12, "completion_tokens": 30, "total_tokens": 42,
            "reasoning_tokens": 24}})


def test_an_incomplete_reply_is_truncated_and_a_refusal_is_seen() -> None:
    cut = message_from_response(response(
        [{"type": "message", "content": [{"type": "output_text", "text": "Once upon"}]}],
        status="incomplete", incomplete_details={"reason": "max_output_tokens"}))
    assert (cut.content, cut.metadata["finish_reason"]) == ("Once upon", "length")
    refused = message_from_response(response(
        [{"type": "message", "content": [{"type": "refusal", "refusal": "I can't."}]}]))
    assert (refused.content, refused.metadata["refusal"]) == ("I can't.", "I can't.")


@pytest.mark.parametrize(("body", "error", "said"), [
    ({"error": {"message": "bad key", "code": "invalid_api_key"}}, ReplyFailed,
     "the reply is an error, not a response: bad key (invalid_api_key)"),
    ({"status": "failed", "output": [], "error": {"message": "server overloaded"}},
     ReplyFailed, "the response failed: server overloaded"),
    ({"choices": []}, WireError, "expected a Responses API response with an 'output' list"),
    ({"output": ["text"]}, WireError, "expected output item 1 to be an object, got str"),
    ({"output": [{"type": "function_call", "arguments": "{}"}]}, WireError,
     "function_call item 1 has no name"),
    ({"output": [{"type": "message", "content": 5}]}, WireError,
     "a message item's content to be a list, got int 5"),
])
def test_malformed_replies_say_what_was_expected(body: dict[str, Any], error: type[Exception],
                                                said: str) -> None:
    with pytest.raises(error) as caught:
        message_from_response(body)
    assert said in str(caught.value)


def test_usage_without_numbers_is_unreported() -> None:
    assert usage_from_wire({"input_tokens": "many"}) is None
    assert usage_from_wire({"input_tokens": 3, "output_tokens": 4}) == {
        "prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}


# -- the server's side, and the stream ---------------------------------------------------------


def reply() -> Message:
    return Message("assistant", "Let me look that up for you.",
                   tool_calls=[ToolCall("call_1", "weather", {"city": "Rio de Janeiro"})],
                   metadata={"reasoning": [REASONING]})


def test_a_response_is_read_back_as_the_message_it_carries() -> None:
    usage = {"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14}
    wire = response_from_message(reply(), model="m", response_id="resp_7", created=0,
                                 usage=usage)
    assert [item["type"] for item in wire["output"]] == ["reasoning", "message",
                                                         "function_call"]
    assert message_from_response(wire) == Message(
        "assistant", reply().content, tool_calls=reply().tool_calls,
        metadata={"finish_reason": "tool_calls", "usage": usage, "reasoning": [REASONING]})


def test_the_stream_gives_the_same_message_and_the_text_and_reasoning_as_they_come() -> None:
    events = events_from_message(reply(), model="m", response_id="resp_7", created=0)
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert [e["type"] for e in events][:3] == ["response.created", "response.in_progress",
                                              "response.output_item.added"]
    deltas = [e for e in events if e["type"] == "response.function_call_arguments.delta"]
    assert [e["delta"] for e in deltas] == ['{"city":', ' "Rio de', ' Janeiro', '"}']
    thoughts: list[str] = []
    accumulator = ResponsesAccumulator(thoughts.append)
    texts = [accumulator.add(e) for e in events]
    assert "".join(texts) == "Let me look that up for you."
    assert "".join(thoughts) == "The user wants Oslo's weather."
    assert accumulator.complete
    assert accumulator.message() == message_from_response(events[-1]["response"])


def test_a_stream_whose_final_response_has_no_output_is_rebuilt_from_its_deltas() -> None:
    events = events_from_message(reply(), model="m", response_id="r", created=0)
    events[-1] = {**events[-1], "response": {**events[-1]["response"], "output": []}}
    # the function call's and the text's items never finish: their deltas make them
    events = [e for e in events if not (e["type"] == "response.output_item.done"
                                        and e["item"]["type"] != "reasoning")]
    accumulator = ResponsesAccumulator()
    for event in events:
        accumulator.add(event)
    message = accumulator.message()
    assert message.content == "Let me look that up for you."
    assert message.tool_calls == reply().tool_calls
    assert message.metadata["reasoning"] == [REASONING]


def test_a_truncated_reply_streams_as_response_incomplete() -> None:
    cut = Message("assistant", "Once upon", metadata={"finish_reason": "length"})
    events = events_from_message(cut, model="m", response_id="r", created=0)
    assert events[-1]["type"] == "response.incomplete"
    accumulator = ResponsesAccumulator()
    for event in events:
        accumulator.add(event)
    assert accumulator.message().metadata == {"finish_reason": "length"}


@pytest.mark.parametrize(("event", "said"), [
    ({"type": "error", "message": "overloaded", "code": "server_error"},
     "the stream said the reply failed (error): overloaded (server_error)"),
    ({"type": "response.failed", "response": {"error": {"message": "boom"}}},
     "the stream said the reply failed (response.failed): boom"),
])
def test_failure_events_are_reply_failures(event: dict[str, Any], said: str) -> None:
    with pytest.raises(ReplyFailed) as caught:
        ResponsesAccumulator().add(event)
    assert str(caught.value) == said


def test_input_is_read_back_into_the_messages_it_came_from() -> None:
    messages = conversation()
    back = messages_from_input(input_to_wire(messages))
    assert [(m.role, m.content, m.tool_calls, m.tool_call_id) for m in back] == [
        (m.role, m.content, m.tool_calls, m.tool_call_id) for m in messages]
    assert back[2].metadata == {"reasoning": [REASONING]}
    with pytest.raises(WireError, match="role must be one of system, user, assistant, tool; "
                                        "got 'robot'"):
        messages_from_input([{"role": "robot", "content": "beep"}])


# -- any reply survives the wire, streamed or not ----------------------------------------------

_words = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
_calls = st.lists(st.builds(lambda i, city: ToolCall(f"call_{i}", "weather", {"city": city}),
                            st.integers(0, 99), _words), max_size=3, unique_by=lambda c: c.id)
_thoughts = st.lists(st.builds(lambda i, text: {"id": f"rs_{i}", "type": "reasoning",
                                                "summary": [{"type": "summary_text",
                                                             "text": text}]},
                               st.integers(0, 9), _words), max_size=2)


@settings(max_examples=60, deadline=None)
@given(text=_words, calls=_calls, thoughts=_thoughts, cut=st.booleans(),
       piece=st.integers(1, 12))
def test_any_reply_reads_back_the_same_streamed_or_not(
        text: str, calls: list[ToolCall], thoughts: list[dict[str, Any]], cut: bool,
        piece: int) -> None:
    metadata: dict[str, Any] = {"reasoning": thoughts} if thoughts else {}
    if cut:
        metadata["finish_reason"] = "length"
    sent = Message("assistant", text, tool_calls=calls, metadata=metadata)
    usage = {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
    plain = message_from_response(response_from_message(
        sent, model="m", response_id="r", created=0, usage=usage))
    accumulator = ResponsesAccumulator()
    shown = [accumulator.add(e) for e in events_from_message(
        sent, model="m", response_id="r", created=0, usage=usage, piece=piece)]
    assert accumulator.message() == plain
    assert "".join(shown) == text
    assert (plain.content, plain.tool_calls) == (text, tuple(calls))
    assert plain.metadata.get("reasoning", []) == thoughts
    finish = "length" if cut else "tool_calls" if calls else "stop"
    assert plain.metadata["finish_reason"] == finish


def test_another_providers_reasoning_items_are_left_out() -> None:
    claude = Message.assistant("Hello.", reasoning=[
        {"type": "thinking", "thinking": "Greet.", "signature": "sig"},
        {"type": "redacted_thinking", "data": "x"}, REASONING])
    assert input_to_wire([Message("user", "Hi"), claude]) == [
        {"role": "user", "content": "Hi"}, REASONING,
        {"role": "assistant", "content": "Hello."}]
