"""The Messages API converter: requests out and replies in, as exact dicts (no SDK, no server)."""

from __future__ import annotations

import pytest

from convo import Document, Image, Message, ModelError
from convo._messages import ToolCall
from convo._parts import Audio, Text
from convo._reply import Finish, Usage
from convo.models._anthropic.wire import StreamAccumulator, message_from_response, request_body

TOOL = {"type": "function", "function": {"name": "lookup", "description": "Look a city up.",
                                          "parameters": {"type": "object", "properties": {
                                              "city": {"type": "string"}}}}}
EPH = {"type": "ephemeral"}
THOUGHT = {"type": "thinking", "thinking": "Oslo first.", "signature": "sig-1"}


def _history() -> list[Message]:
    return [
        Message("system", "Be brief."),
        Message("system", "Use tools."),
        Message("user", "Weather?"),
        Message.assistant("Looking.", [ToolCall("t1", "lookup", {"city": "Oslo"}),
                                       ToolCall("t2", "lookup", {"city": "Rome"})],
                          reasoning=[THOUGHT, {"type": "reasoning", "id": "rs_1"}]),
        Message("tool", "sunny", tool_call_id="t1", name="lookup"),
        Message("tool", "no such city", tool_call_id="t2", name="lookup",
                metadata={"error": True}),
        Message("system", "Answer in French."),
        Message("user", "And?"),
    ]


def test_a_conversation_with_tools_thinking_and_a_later_system_message() -> None:
    body = request_body(_history(), [TOOL], model="claude-x", max_tokens=100)
    assert body == {
        "model": "claude-x", "max_tokens": 100,
        "system": [{"type": "text", "text": "Be brief."},
                   {"type": "text", "text": "Use tools.", "cache_control": EPH}],
        "tools": [{"name": "lookup", "description": "Look a city up.",
                   "input_schema": {"type": "object",
                                    "properties": {"city": {"type": "string"}}},
                   "cache_control": EPH}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
            {"role": "assistant", "content": [
                THOUGHT,  # in place, unchanged; OpenAI's reasoning item left out
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "t1", "name": "lookup", "input": {"city": "Oslo"}},
                {"type": "tool_use", "id": "t2", "name": "lookup", "input": {"city": "Rome"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "sunny"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "no such city",
                 "is_error": True},
                {"type": "text", "text": "<system>Answer in French.</system>"},
                {"type": "text", "text": "And?", "cache_control": EPH},
            ]},
        ],
    }


def test_a_system_message_between_tool_results_goes_after_all_of_them() -> None:
    messages = [Message("user", "Go"), Message.assistant("", [ToolCall("a", "f", {}),
                                                              ToolCall("b", "f", {})]),
                Message("tool", "1", tool_call_id="a"), Message("system", "Hurry."),
                Message("tool", "2", tool_call_id="b")]
    body = request_body(messages, [], model="m", max_tokens=5, cache=False)
    assert body["messages"][-1] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "a", "content": "1"},
        {"type": "tool_result", "tool_use_id": "b", "content": "2"},
        {"type": "text", "text": "<system>Hurry.</system>"}]}
    # the history holds tool blocks but no tools are offered: the used ones, with choice none
    assert body["tools"] == [{"name": "f", "input_schema": {"type": "object"}}]
    assert body["tool_choice"] == {"type": "none"}
    assert "system" not in body


def test_a_later_system_message_at_the_end_is_a_user_turn_of_its_own() -> None:
    messages = [Message("system", "S"), Message("user", "Hi"), Message("assistant", "Hello"),
                Message("system", "Now say goodbye.")]
    body = request_body(messages, model="m", max_tokens=5)
    assert body["messages"][-1] == {"role": "user", "content": [
        {"type": "text", "text": "<system>Now say goodbye.</system>", "cache_control": EPH}]}
    assert "tools" not in body and "tool_choice" not in body


def test_consecutive_messages_of_one_role_are_one_turn_and_cache_false_marks_nothing() -> None:
    body = request_body([Message("user", "a"), Message("user", "b"), Message("assistant", "c")],
                        [TOOL], model="m", max_tokens=5, cache=False)
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "a"},
                                     {"type": "text", "text": "b"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "c"}]}]
    assert "cache_control" not in str(body)


def test_images_and_documents_are_blocks_and_audio_is_refused() -> None:
    message = Message("user", (Text("Read these"), Image(b"\x89PNG", media_type="image/png"),
                               Image(url="https://x.test/a.jpg"),
                               Document(b"%PDF-1.4", media_type="application/pdf",
                                        filename="a.pdf"),
                               Document(b"plain words", media_type="text/plain")))
    body = request_body([message], model="m", max_tokens=5, cache=False)
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "Read these"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                     "data": "iVBORw=="}},
        {"type": "image", "source": {"type": "url", "url": "https://x.test/a.jpg"}},
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                        "data": "JVBERi0xLjQ="}, "title": "a.pdf"},
        {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                        "data": "plain words"}},
    ]
    with pytest.raises(ModelError) as info:
        request_body([Message("user", (Audio(b"RIFF", media_type="audio/wav"),))],
                     model="m", max_tokens=5)
    assert str(info.value) == ("the Anthropic Messages API takes no audio; message 1 has an "
                               "Audio part (audio/wav)")


def test_a_tool_result_with_an_image_carries_it_as_blocks() -> None:
    messages = [Message("user", "x"), Message.assistant("", [ToolCall("a", "shot", {})]),
                Message("tool", (Text("here"), Image(b"GIF", media_type="image/gif")),
                        tool_call_id="a")]
    body = request_body(messages, model="m", max_tokens=5, cache=False)
    assert body["messages"][-1]["content"] == [{"type": "tool_result", "tool_use_id": "a",
        "content": [{"type": "text", "text": "here"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/gif",
                                                 "data": "R0lG"}}]}]


def _response(content: list[dict[str, object]], stop: str, **usage: int) -> dict[str, object]:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5, **usage}}


def test_a_response_with_thinking_tool_use_and_cache_usage() -> None:
    reply = message_from_response(_response(
        [THOUGHT, {"type": "text", "text": "Let me see."},
         {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"city": "Oslo"}}],
        "tool_use", cache_read_input_tokens=100, cache_creation_input_tokens=20))
    assert reply.text == "Let me see."
    assert reply.tool_calls == (ToolCall("toolu_1", "lookup", {"city": "Oslo"}),)
    assert reply.finish is Finish.TOOL_CALLS
    assert reply.reasoning == (THOUGHT,)
    assert reply.usage == Usage(130, 5, 135, cache_read_tokens=100, cache_write_tokens=20)


@pytest.mark.parametrize(("stop", "finish"), [("end_turn", Finish.STOP),
                                              ("stop_sequence", Finish.STOP),
                                              ("max_tokens", Finish.LENGTH),
                                              ("pause_turn", None)])
def test_stop_reasons(stop: str, finish: Finish | None) -> None:
    assert message_from_response(_response([{"type": "text", "text": "x"}], stop)
                                 ).finish is finish


def test_a_refusal_keeps_its_text_or_says_refused() -> None:
    said = message_from_response(_response([{"type": "text", "text": "I can't."}], "refusal"))
    assert (said.text, said.refusal, said.finish) == ("I can't.", "I can't.", Finish.REFUSED)
    bare = message_from_response(_response([], "refusal"))
    assert (bare.refusal, bare.finish) == ("refused", Finish.REFUSED)


def test_streamed_events_make_the_same_message() -> None:
    start = _response([], "")
    start["stop_reason"] = None
    events = [
        {"type": "message_start", "message": start},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "thinking_delta", "thinking": "Oslo "}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "thinking_delta", "thinking": "first."}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "signature_delta", "signature": "sig-1"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1,
         "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1,
         "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "content_block_stop", "index": 1},
        {"type": "content_block_start", "index": 2,
         "content_block": {"type": "tool_use", "id": "toolu_1", "name": "lookup",
                           "input": {}}},
        {"type": "content_block_delta", "index": 2,
         "delta": {"type": "input_json_delta", "partial_json": '{"city": '}},
        {"type": "content_block_delta", "index": 2,
         "delta": {"type": "input_json_delta", "partial_json": '"Oslo"}'}},
        {"type": "content_block_stop", "index": 2},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
         "usage": {"output_tokens": 7}},
        {"type": "message_stop"},
    ]
    stream = StreamAccumulator()
    pieces = [stream.add(e) for e in events]
    assert [p for p in pieces if p != ("", "")] == [("", "Oslo "), ("", "first."), ("Hi", "")]
    assert stream.done
    reply = stream.message()
    assert reply.reasoning == (THOUGHT,)
    assert reply.tool_calls == (ToolCall("toolu_1", "lookup", {"city": "Oslo"}),)
    assert reply.usage == Usage(10, 7, 17)
    assert reply.finish is Finish.TOOL_CALLS
