"""OpenAI's cached and reasoning token counts, mapped in OpenAI's room to Usage's
cache_read_tokens and reasoning_tokens (Chat Completions and the Responses API, streamed or
not, through the real SDK against the fake server); a reply that reports none stores exactly
what it always stored."""

from __future__ import annotations

import json

import pytest

from convo import AssistantTemplate, LinearTemplate, Message, OpenAIModel, Runner, Usage
from convo import UserTemplate as User
from convo.models._openai import wire as wire
from convo.models._openai import wire_responses as wire_responses
from convo.testing import OpenAIServer

CHAT = LinearTemplate([User("Hi"), AssistantTemplate()])
SCRIPTED = {"prompt_tokens": 1200, "completion_tokens": 80, "total_tokens": 1280,
            "cache_read_tokens": 1024, "reasoning_tokens": 64}


def test_chat_completions_details_become_usage_fields() -> None:
    reply = wire.message_from_response({
        "choices": [{"message": {"role": "assistant", "content": "ok"},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1200, "completion_tokens": 80, "total_tokens": 1280,
                  "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0},
                  "completion_tokens_details": {"reasoning_tokens": 64}}})
    assert reply.metadata["usage"] == SCRIPTED
    assert reply.usage == Usage(1200, 80, 1280, cache_read_tokens=1024, reasoning_tokens=64)


def test_zero_details_store_what_a_reply_always_stored() -> None:
    reply = wire.message_from_response({
        "choices": [{"message": {"role": "assistant", "content": "ok"},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6,
                  "prompt_tokens_details": {"cached_tokens": 0},
                  "completion_tokens_details": {"reasoning_tokens": 0}}})
    assert json.dumps(reply.to_dict()) == json.dumps({
        "role": "assistant", "content": "ok", "metadata": {
            "finish_reason": "stop",
            "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}}})


def test_responses_api_details_become_usage_fields() -> None:
    reply = wire_responses.message_from_response({
        "status": "completed",
        "output": [{"type": "message", "role": "assistant",
                    "content": [{"type": "output_text", "text": "ok"}]}],
        "usage": {"input_tokens": 1200, "output_tokens": 80, "total_tokens": 1280,
                  "input_tokens_details": {"cached_tokens": 1024},
                  "output_tokens_details": {"reasoning_tokens": 64}}})
    assert reply.usage == Usage(1200, 80, 1280, cache_read_tokens=1024, reasoning_tokens=64)


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("stream", [False, True])
def test_a_run_adds_up_cached_and_reasoning_tokens(api: str, stream: bool) -> None:
    reply = Message("assistant", "Hello.", metadata={"usage": SCRIPTED})
    with OpenAIServer([reply]) as server, OpenAIModel(
            "gpt-4o-mini", base_url=server.base_url, api_key="k", api=api, stream=stream,
            max_retries=0) as model:
        session = Runner(model, CHAT).run()
    assert session.messages[-1].usage == Usage(1200, 80, 1280, cache_read_tokens=1024,
                                               reasoning_tokens=64)
    assert session.outcome is not None
    assert session.outcome.usage == Usage(1200, 80, 1280, cache_read_tokens=1024,
                                          reasoning_tokens=64)
    assert session.outcome.to_dict()["usage"] == {
        "prompt_tokens": 1200, "completion_tokens": 80, "total_tokens": 1280,
        "unreported": 0, "cache_read_tokens": 1024, "reasoning_tokens": 64}
