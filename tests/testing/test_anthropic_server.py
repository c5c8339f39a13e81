"""AnthropicServer, with the real ``anthropic`` SDK as its client: replies plain and streamed,
thinking with its signature, errors as the SDK's own exceptions, and the prompt cache counted
as API.md §23 defines it."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import anthropic
import pytest

from convo import Message
from convo._messages import ToolCall
from convo.testing import AnthropicServer, ErrorReply

THOUGHT = {"type": "thinking", "thinking": "The user wants Oslo.", "signature": "c2lnLTE="}
EPH = {"type": "ephemeral"}


def _client(server: AnthropicServer, **kw: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.base_url, api_key="test", **kw)


def _ask(**kw: Any) -> dict[str, Any]:
    return {"model": "claude-x", "max_tokens": 100,
            "messages": [{"role": "user", "content": "Weather in Oslo?"}], **kw}


def test_text_and_tool_use_read_by_the_sdk(anthropic_server: AnthropicServer) -> None:
    anthropic_server.add("Let me look. {lookup(city='Oslo')}", "Sunny.")
    with _client(anthropic_server) as client:
        first = client.messages.create(**_ask())
        second = client.messages.create(**_ask())
    assert [b.type for b in first.content] == ["text", "tool_use"]
    assert first.content[0].text == "Let me look."  # type: ignore[union-attr]
    call = first.content[1]
    assert (call.name, call.input) == ("lookup", {"city": "Oslo"})  # type: ignore[union-attr]
    assert first.stop_reason == "tool_use"
    assert (second.content[0].text, second.stop_reason) == ("Sunny.", "end_turn")  # type: ignore[union-attr]
    assert anthropic_server.requests[0] == _ask()
    assert anthropic_server.paths == ["/v1/messages", "/v1/messages"]
    assert first.usage.output_tokens == 3 + 2  # three words, a call with one argument


def _thinking_reply() -> Message:
    return Message.assistant("It is sunny.", [ToolCall("toolu_1", "lookup", {"city": "Oslo"})],
                             reasoning=[THOUGHT, {"type": "redacted_thinking", "data": "xyz"}])


def test_streamed_thinking_text_and_tool_input(anthropic_server: AnthropicServer) -> None:
    anthropic_server.add(_thinking_reply())
    with _client(anthropic_server) as client, \
            client.messages.stream(**_ask()) as stream:
        kinds = [e.type for e in stream]
        final = stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert {"thinking", "signature", "text", "input_json"} <= set(kinds)
    assert [b.type for b in final.content] == ["thinking", "redacted_thinking", "text",
                                               "tool_use"]
    assert final.content[0].thinking == THOUGHT["thinking"]  # type: ignore[union-attr]
    assert final.content[0].signature == THOUGHT["signature"]  # type: ignore[union-attr]
    assert final.content[1].data == "xyz"  # type: ignore[union-attr]
    assert final.content[3].input == {"city": "Oslo"}  # type: ignore[union-attr]
    assert final.stop_reason == "tool_use"
    assert final.usage.output_tokens == 3 + 2
    assert anthropic_server.requests[0]["stream"] is True


def test_the_async_client_plain_and_create_stream_true(anthropic_server: AnthropicServer
                                                       ) -> None:
    anthropic_server.add("Hello there.", "Streamed hello.")

    async def main() -> tuple[str, list[str]]:
        async with anthropic.AsyncAnthropic(base_url=anthropic_server.base_url,
                                            api_key="test") as client:
            plain = await client.messages.create(**_ask())
            texts = []
            async for event in await client.messages.create(**_ask(), stream=True):
                if event.type == "content_block_delta" and event.delta.type == "text_delta":
                    texts.append(event.delta.text)
            return plain.content[0].text, texts  # type: ignore[union-attr]

    text, pieces = asyncio.run(main())
    assert text == "Hello there."
    assert "".join(pieces) == "Streamed hello." and len(pieces) == 2


@pytest.mark.parametrize(("status", "error", "kind"), [
    (429, anthropic.RateLimitError, "rate_limit_error"),
    (529, anthropic.InternalServerError, "overloaded_error"),
    (400, anthropic.BadRequestError, "invalid_request_error"),
    (401, anthropic.AuthenticationError, "authentication_error"),
])
def test_errors_are_the_sdks_own(anthropic_server: AnthropicServer, status: int,
                                 error: type[Exception], kind: str) -> None:
    anthropic_server.add(ErrorReply(status))
    with _client(anthropic_server, max_retries=0) as client, pytest.raises(error) as info:
        client.messages.create(**_ask())
    assert info.value.body == {"type": "error", "error": {  # type: ignore[attr-defined]
        "type": kind, "message": f"AnthropicServer: scripted HTTP {status} "
                                 f"{info.value.response.reason_phrase}"}}  # type: ignore[attr-defined]


def test_the_sdk_retries_a_429_with_retry_after(anthropic_server: AnthropicServer) -> None:
    anthropic_server.add(ErrorReply(429, {"retry-after": "0"}), "Fine.")
    with _client(anthropic_server, max_retries=1) as client:
        assert client.messages.create(**_ask()).content[0].text == "Fine."  # type: ignore[union-attr]
    assert anthropic_server.received == 2


def test_a_script_that_ran_out_is_a_500_in_anthropics_shape(anthropic_server: AnthropicServer
                                                             ) -> None:
    with _client(anthropic_server, max_retries=0) as client, \
            pytest.raises(anthropic.InternalServerError) as info:
        client.messages.create(**_ask())
    assert info.value.body == {"type": "error", "error": {  # type: ignore[attr-defined]
        "type": "api_error", "message": "AnthropicServer script ran out: 0 replies were "
                                        "scripted and request 1 asked for another"}}


def _size(block: dict[str, Any]) -> int:
    bare = {k: v for k, v in block.items() if k != "cache_control"}
    return len(json.dumps(bare, separators=(",", ":"), ensure_ascii=False))


def test_the_prompt_cache_is_counted_as_the_contract_says(anthropic_server: AnthropicServer
                                                          ) -> None:
    anthropic_server.add("One.", "Two.", "Three.")
    tool = {"name": "lookup", "input_schema": {"type": "object"}}
    system = [{"type": "text", "text": "Be brief. " * 40}]
    u1 = {"type": "text", "text": "Weather in Oslo?"}
    a1 = {"type": "text", "text": "One."}
    u2 = {"type": "text", "text": "And Rome? Ça va?"}
    first = {"model": "m", "max_tokens": 5, "tools": [{**tool, "cache_control": EPH}],
             "system": [{**system[0], "cache_control": EPH}],
             "messages": [{"role": "user", "content": [{**u1, "cache_control": EPH}]}]}
    second = {"model": "m", "max_tokens": 5, "tools": [{**tool, "cache_control": EPH}],
              "system": [{**system[0], "cache_control": EPH}],
              "messages": [{"role": "user", "content": [u1]},
                           {"role": "assistant", "content": [a1]},
                           {"role": "user", "content": [{**u2, "cache_control": EPH}]}]}
    plain = {"model": "m", "max_tokens": 5, "tools": [tool], "system": system,
             "messages": [{"role": "user", "content": [u1]}]}
    with _client(anthropic_server) as client:
        usages = [client.messages.create(**body).usage  # type: ignore[arg-type]
                  for body in (first, second, plain)]
    whole1 = _size(tool) + _size(system[0]) + _size(u1)
    assert (usages[0].input_tokens, usages[0].cache_read_input_tokens,
            usages[0].cache_creation_input_tokens) == (0, 0, math.ceil(whole1 / 4))
    read = math.ceil(whole1 / 4)  # the first request wrote this prefix at its last breakpoint
    whole2 = whole1 + _size(a1) + _size(u2)
    assert (usages[1].input_tokens, usages[1].cache_read_input_tokens,
            usages[1].cache_creation_input_tokens) == (0, read, math.ceil(whole2 / 4) - read)
    # no breakpoint: nothing read or written, the whole request is input
    assert (usages[2].input_tokens, usages[2].cache_read_input_tokens,
            usages[2].cache_creation_input_tokens) == (math.ceil(whole1 / 4), 0, 0)
    anthropic.types.Message.model_validate(
        {"id": "x", "type": "message", "role": "assistant", "model": "m", "content": [],
         "stop_reason": "end_turn", "stop_sequence": None, "usage": usages[1].model_dump()})


def test_a_scripted_usage_is_served_in_anthropics_words(anthropic_server: AnthropicServer
                                                        ) -> None:
    from convo._reply import Usage
    anthropic_server.add(Message.assistant("Hi.", usage=Usage(130, 5, 135, cache_read_tokens=100,
                                                              cache_write_tokens=20)))
    with _client(anthropic_server) as client:
        usage = client.messages.create(**_ask()).usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_input_tokens,
            usage.cache_creation_input_tokens) == (10, 5, 100, 20)


def test_a_request_with_no_message_is_refused_as_the_api_does(
        anthropic_server: AnthropicServer) -> None:
    client = _client(anthropic_server, max_retries=0)
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(**_ask(messages=[]))
    assert caught.value.status_code == 400
    assert caught.value.body == {"type": "error", "error": {
        "type": "invalid_request_error", "message": "messages: at least one message is required"}}
    assert anthropic_server.requests == []
