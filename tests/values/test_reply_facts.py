"""A reply's facts, typed (convo._reply): views over the keys a message stores, so what is
stored stays byte for byte what it was, and a provider writes them with Message.assistant."""

from __future__ import annotations

import json

import pytest

from convo import Message, Outcome, RunStatus, Session, ToolCall, Usage
from convo._reply import Finish


def test_finish_is_read_from_the_stored_words_of_any_transcript() -> None:
    def finish(**metadata: object) -> Finish | None:
        return Message("assistant", "x", metadata=metadata).finish

    assert finish(finish_reason="stop") is Finish.STOP
    assert finish(finish_reason="length") is Finish.LENGTH
    assert finish(finish_reason="tool_calls") is Finish.TOOL_CALLS
    assert finish(finish_reason="content_filter") is Finish.REFUSED
    assert finish(finish_reason="function_call") is Finish.TOOL_CALLS
    assert finish(finish_reason="stop", refusal="I can't") is Finish.STOP  # as OpenAI said it
    assert finish(refusal="I can't") is Finish.REFUSED
    assert finish(cancelled=True) is Finish.CANCELLED
    assert finish(finish_reason="eos") is None  # a word convo does not know: not said
    assert finish() is None
    assert Message("assistant", "x").finish is None


def test_usage_is_none_when_not_reported_and_old_usage_reads_with_zero_details() -> None:
    assert Message("assistant", "x").usage is None
    assert Message("assistant", "x", metadata={"usage": {}}).usage is None
    old = Message.from_dict({"role": "assistant", "content": "x", "metadata": {
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}}})
    assert old.usage == Usage(10, 2, 12)
    assert old.usage.cache_read_tokens == old.usage.reasoning_tokens == 0


def test_assistant_writes_the_keys_a_transcript_has_always_held() -> None:
    reply = Message.assistant(
        "Hi", [ToolCall("c1", "look", {"q": 1})], finish=Finish.TOOL_CALLS,
        usage=Usage(30, 5, 35, cache_read_tokens=20, reasoning_tokens=3),
        reasoning=[{"type": "thinking", "thinking": "hm", "signature": "s"}],
        provider={"stop_sequence": None, "id": "msg_1"})
    assert json.dumps(reply.to_dict()) == json.dumps({
        "role": "assistant", "content": "Hi",
        "tool_calls": [{"id": "c1", "name": "look", "arguments": {"q": 1}}],
        "metadata": {"finish_reason": "tool_calls",
                     "usage": {"prompt_tokens": 30, "completion_tokens": 5, "total_tokens": 35,
                               "cache_read_tokens": 20, "reasoning_tokens": 3},
                     "reasoning": [{"type": "thinking", "thinking": "hm", "signature": "s"}],
                     "stop_sequence": None, "id": "msg_1"}})
    again = Message.from_dict(json.loads(json.dumps(reply.to_dict())))
    assert again == reply
    assert again.finish is Finish.TOOL_CALLS
    assert again.usage == Usage(30, 5, 35, cache_read_tokens=20, reasoning_tokens=3)
    assert again.reasoning == ({"type": "thinking", "thinking": "hm", "signature": "s"},)
    assert dict(again.provider) == {"stop_sequence": None, "id": "msg_1"}


def test_a_refusal_and_a_cancel_are_stored_as_convo_has_stored_them() -> None:
    refused = Message.assistant(finish=Finish.REFUSED)
    assert refused.to_dict()["metadata"] == {"finish_reason": "refused", "refusal": "refused"}
    assert (refused.finish, refused.refusal, refused.text) == (Finish.REFUSED, "refused", "")
    said = Message.assistant(refusal="I won't help with that", finish="refused")
    assert said.text == "I won't help with that"  # seen, when it is all there is
    assert Message.assistant("so far", finish=Finish.CANCELLED).to_dict()["metadata"] == {
        "cancelled": True}


def test_provider_may_not_hide_a_typed_fact() -> None:
    with pytest.raises(ValueError, match=r"provider= holds 'usage': give finish=, usage="):
        Message.assistant("x", provider={"usage": {"prompt_tokens": 1}})


def test_tool_message_facts() -> None:
    failed = Message("tool", "boom", tool_call_id="c", metadata={"error": True})
    rejected = Message("tool", "no", tool_call_id="c", metadata={"rejected": True})
    ended = Message("tool", "done", tool_call_id="c",
                    metadata={"terminated": {"status": "completed"}})
    assert (failed.error, failed.rejected, failed.terminated) == (True, False, None)
    assert (rejected.error, rejected.rejected) == (False, True)
    assert ended.terminated == {"status": "completed"}


def test_usage_details_add_up_and_are_written_only_when_reported() -> None:
    a = Usage(10, 2, 12, cache_read_tokens=8, cache_write_tokens=1)
    b = Usage(5, 5, 10, reasoning_tokens=4)
    assert a + b == Usage(15, 7, 22, cache_read_tokens=8, cache_write_tokens=1,
                          reasoning_tokens=4)
    # What an Outcome wrote before the details existed, it writes the same.
    plain = Outcome(status=RunStatus.COMPLETED, usage=Usage(1, 2, 3))
    assert plain.to_dict()["usage"] == {"prompt_tokens": 1, "completion_tokens": 2,
                                        "total_tokens": 3, "unreported": 0}
    cached = Outcome(status=RunStatus.COMPLETED, usage=a)
    assert cached.to_dict()["usage"] == {"prompt_tokens": 10, "completion_tokens": 2,
                                         "total_tokens": 12, "unreported": 0,
                                         "cache_read_tokens": 8, "cache_write_tokens": 1}
    session = Session(outcome=cached)
    assert Session.from_json(session.to_json()).outcome == cached
