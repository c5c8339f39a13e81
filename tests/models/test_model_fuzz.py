"""Whatever a server sends, a call ends with a reply or a ``ModelError`` naming the server:
replies of any JSON shape, any bytes, split into any pieces, plain and
streamed, through the real openai SDK. Arguments sent as a JSON object are taken.

The fuzzing is bounded for CI; ``CONVO_FUZZ_EXAMPLES=2000`` runs it longer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from models_kit import (
    EXAMPLES,
    FUZZ,
    InjectedClient,
    Parsed,
    check_ends_well,
    encoded,
    fuzzed_models,
    json_values,
    malformed_said,
    split,
)
from models_kit import or_anything as _one_of_or
from rawserver import Raw, RawServer, sse

from convo import Message, ModelError, OpenAIModel


@pytest.fixture(scope="module")
def models(raw: RawServer) -> Iterator[dict[bool, OpenAIModel]]:
    yield from fuzzed_models(raw)


@st.composite
def tool_call(draw: st.DrawFn) -> Any:
    function = draw(st.fixed_dictionaries({
        "name": _one_of_or("lookup"),
        "arguments": st.one_of(st.just('{"city": "Oslo"}'), st.just({"city": "Oslo"}),
                               json_values),
    }))
    return draw(_one_of_or({"id": draw(_one_of_or("call_1")), "type": "function",
                            "function": draw(_one_of_or(function))}))


@st.composite
def completion(draw: st.DrawFn) -> Any:
    """A Chat Completions response with any of its parts replaced by anything."""
    message = draw(_one_of_or({
        "role": "assistant",
        "content": draw(_one_of_or("Hello")),
        "tool_calls": draw(st.one_of(st.none(), st.lists(tool_call(), max_size=2),
                                     json_values)),
        "refusal": draw(_one_of_or(None)),
    }))
    choice = draw(_one_of_or({"index": 0, "message": message,
                              "finish_reason": draw(_one_of_or("stop"))}))
    return draw(_one_of_or({
        "id": "x", "object": "chat.completion",
        "choices": draw(st.one_of(st.just([choice]), json_values)),
        "usage": draw(_one_of_or({"prompt_tokens": 1, "completion_tokens": 2,
                                  "total_tokens": 3})),
    }))


@st.composite
def chunk(draw: st.DrawFn) -> Any:
    """A streamed chunk with any of its parts replaced by anything."""
    fragment = draw(_one_of_or({"index": draw(_one_of_or(0)), "id": "call_1",
                                "function": draw(_one_of_or({
                                    "name": draw(_one_of_or("lookup")),
                                    "arguments": draw(_one_of_or('{"city": '))})),
                                }))
    delta = draw(_one_of_or({"content": draw(_one_of_or("Hel")),
                             "tool_calls": draw(st.one_of(st.just([fragment]), json_values))}))
    choice = draw(_one_of_or({"index": 0, "delta": delta,
                              "finish_reason": draw(_one_of_or(None))}))
    return draw(_one_of_or({"choices": draw(st.one_of(st.just([choice]), json_values)),
                            "usage": draw(_one_of_or(None))}))


bodies = st.one_of(
    completion().map(encoded),
    st.binary(max_size=64),
    st.just(b"[" * 100_000),  # deeper than any JSON parser recurses
    st.just(b'{"choices": [{"message": {"content": "\xff\xfe"}}]}'),  # not UTF-8
)
event_data = st.one_of(chunk().map(encoded), st.binary(max_size=24), st.just(b"{" * 50_000),
                       st.just(b'{"choices": [{"delta": {"content": "\xc3"}}]}'))
streams = st.one_of(
    st.lists(event_data, max_size=4).map(lambda events: sse(*events)),
    st.lists(event_data, max_size=3).map(lambda events: sse(*events, done=False)),
    st.binary(max_size=64),
    st.lists(chunk().map(encoded), max_size=3).map(
        lambda events: b":keep-alive\n\n" + sse(*events)),
)


# -- the fuzzing -------------------------------------------------------------------------------


@FUZZ
@given(body=bodies, cuts=st.lists(st.integers(0, 10_000), max_size=4),
       status=st.sampled_from([200, 200, 200, 201, 299]))
def test_any_plain_reply_ends_in_a_reply_or_a_model_error(
        raw: RawServer, models: dict[bool, OpenAIModel], body: bytes, cuts: list[int],
        status: int) -> None:
    raw.reply = Raw(split(body, cuts), status=status, chunked=bool(cuts))
    check_ends_well(raw, models[False])


@FUZZ
@given(body=streams, cuts=st.lists(st.integers(0, 10_000), max_size=6))
def test_any_stream_ends_in_a_reply_or_a_model_error(
        raw: RawServer, models: dict[bool, OpenAIModel], body: bytes, cuts: list[int]) -> None:
    raw.reply = Raw(split(body, cuts), content_type="text/event-stream", chunked=True)
    check_ends_well(raw, models[True])


@settings(max_examples=max(4, EXAMPLES // 8), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(body=st.one_of(bodies, streams), stream=st.booleans())
def test_any_reply_to_an_async_call_ends_in_a_reply_or_a_model_error(
        raw: RawServer, body: bytes, stream: bool) -> None:
    raw.reply = Raw([body], content_type="text/event-stream" if stream else "application/json")

    async def call() -> None:
        async with OpenAIModel("m", base_url=raw.base_url, api_key="k", max_retries=0,
                               stream=stream, timeout=10) as model:
            try:
                reply = await model.acomplete([Message("user", "hi")])
            except ModelError as exc:
                assert raw.base_url in str(exc)
            else:
                assert reply.role == "assistant"

    asyncio.run(call())


# -- the shapes seen failing, each pinned --------------------------------------------------------


SEEN = [
    ({"choices": "abc"}, "expected a Chat Completions response with 'choices', got"),
    ({"choices": [{"message": {"content": "x", "tool_calls": "abc"}}]},
     "expected message.tool_calls to be a list, got str 'abc'"),
    ({"choices": [{"message": {"content": "x", "tool_calls": ["abc"]}}]},
     "expected tool call 1 to be an object, got str 'abc'"),
    ({"choices": [{"message": {"tool_calls": [{"function": "f"}]}}]},
     "tool call 1 has no function name"),
    ({"choices": [{"message": {"content": {"a": 1}}}]},
     "expected message content to be a string, got dict"),
    ({"choices": [{"message": {"content": [{"text": 5}]}}]},
     "expected a content part's text to be a string, got int 5"),
]


@pytest.mark.parametrize(("body", "said"), SEEN)
def test_malformed_plain_replies_say_what_was_wrong(raw: RawServer,
                                                    models: dict[bool, OpenAIModel], body: Any,
                                                    said: str) -> None:
    assert said in malformed_said(raw, models, encoded(body), stream=False)


STREAMS_SEEN = [
    (sse(b'{"choices": "abc"}'), "expected a chunk's choices to be a list, got str"),
    (sse(b'{"choices": [{"delta": "abc"}]}'), "expected a chunk's delta to be an object"),
    (sse(b'{"choices": [{"delta": {"tool_calls": "abc"}}]}'),
     "expected delta.tool_calls to be a list"),
    (sse(b'{"choices": [{"delta": {"tool_calls": [{"function": "f"}]}}]}'),
     "expected a tool-call fragment's function to be an object"),
    (sse(b'{"choices": [{"delta": {"tool_calls": [{"index": "0"}]}}]}'),
     "expected a tool-call fragment's index to be a small number"),
    (sse(b"not json"), "an SSE event's data is not JSON"),
    (sse(b"[" * 100_000), "an SSE event's data is not JSON (RecursionError"),
    (b'data: {"choices": [{"delta": {"content": "\xff"}}]}\n\n', "the stream is not UTF-8 text"),
]


@pytest.mark.parametrize(("body", "said"), STREAMS_SEEN)
def test_malformed_streams_say_what_was_wrong(raw: RawServer, models: dict[bool, OpenAIModel],
                                              body: bytes, said: str) -> None:
    assert said in malformed_said(raw, models, body, stream=True)


def test_an_empty_stream_suggests_the_server_log(raw: RawServer,
                                                 models: dict[bool, OpenAIModel]) -> None:
    raw.reply = Raw([b""], content_type="text/event-stream", chunked=True)
    with pytest.raises(ModelError) as info:
        models[True].complete([Message("user", "hi")])
    assert str(info.value) == (f"the stream from {raw.base_url} (model 'm') ended without "
                               "sending any chunk. Check the server's log for why it did not "
                               "answer")


# -- item 2: arguments as a JSON object ----------------------------------------------------------


def _calls_lookup_with_an_object(stream: bool) -> Raw:
    call = {"id": "call_1", "type": "function",
            "function": {"name": "lookup", "arguments": {"city": "Oslo"}}}
    if not stream:
        return Raw([encoded({"choices": [{"message": {"role": "assistant", "content": None,
                                                       "tool_calls": [call]},
                                           "finish_reason": "tool_calls"}]})])
    fragment = {"index": 0, **call}
    return Raw([sse(encoded({"choices": [{"delta": {"tool_calls": [fragment]}}]}),
                    encoded({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}))],
               content_type="text/event-stream", chunked=True)


@pytest.mark.parametrize("stream", [False, True])
def test_tool_call_arguments_sent_as_an_object_are_taken(
        raw: RawServer, models: dict[bool, OpenAIModel], stream: bool) -> None:
    raw.reply = _calls_lookup_with_an_object(stream)
    reply = models[stream].complete([Message("user", "hi")])
    assert [(c.name, c.arguments, c.raw_arguments) for c in reply.tool_calls] == [
        ("lookup", {"city": "Oslo"}, None)]


# -- a client without raw responses: the SDK's own parsed objects, checked the same way ----------


@pytest.mark.parametrize(("stream", "reply", "said"), [
    (False, {"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}]}, None),
    (False, {"choices": [{"message": "abc"}]}, "expected choices[0].message to be an object"),
    (True, Parsed([{"choices": [{"delta": {"content": "hi"}, "finish_reason": "stop"}]}]), None),
    (True, Parsed([{"choices": [{"delta": 5}]}]), "expected a chunk's delta to be an object"),
])
def test_an_injected_client_without_raw_responses(stream: bool, reply: Any,
                                                  said: str | None) -> None:
    model = OpenAIModel("m", client=InjectedClient(reply), stream=stream)
    if said is None:
        assert model.complete([Message("user", "x")]).content == "hi"
        return
    with pytest.raises(ModelError) as info:
        model.complete([Message("user", "x")])
    assert str(info.value).startswith("malformed ")
    assert "from http://fake.invalid/v1 (model 'm'): " + said in str(info.value)
