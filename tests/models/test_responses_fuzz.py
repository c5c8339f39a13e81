"""Whatever a server sends on ``/v1/responses``, a call ends with a reply or a ``ModelError``
naming the server: responses and typed stream events of any shape, any bytes, split into any
pieces, through the real openai SDK (the Responses half of tests/models/test_model_fuzz.py).

The fuzzing is bounded for CI; ``CONVO_FUZZ_EXAMPLES=2000`` runs it longer.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from models_kit import (
    FUZZ,
    check_ends_well,
    encoded,
    fuzzed_models,
    json_values,
    malformed_said,
    split,
)
from models_kit import or_anything as _or
from rawserver import Raw, RawServer

from convo import Message, OpenAIModel


@pytest.fixture(scope="module")
def models(raw: RawServer) -> Iterator[dict[bool, OpenAIModel]]:
    yield from fuzzed_models(raw, api="responses")


@st.composite
def output_item(draw: st.DrawFn) -> Any:
    text = draw(_or({"type": "output_text", "text": draw(_or("Hello"))}))
    return draw(st.one_of(
        _or({"type": "message", "role": "assistant", "content": draw(_or([text]))}),
        _or({"type": "function_call", "call_id": draw(_or("call_1")),
             "name": draw(_or("lookup")), "arguments": draw(_or('{"city": "Oslo"}'))}),
        _or({"type": "reasoning", "id": "rs_1", "summary": draw(_or([]))}),
    ))


@st.composite
def response(draw: st.DrawFn) -> Any:
    """A Responses API response with any of its parts replaced by anything."""
    return draw(_or({
        "id": "r", "object": "response", "status": draw(_or("completed")),
        "output": draw(st.one_of(st.lists(output_item(), max_size=3), json_values)),
        "incomplete_details": draw(_or(None)),
        "usage": draw(_or({"input_tokens": 1, "output_tokens": 2, "total_tokens": 3})),
    }))


@st.composite
def event(draw: st.DrawFn) -> Any:
    """A typed stream event with any of its parts replaced by anything."""
    kind = draw(st.sampled_from([
        "response.output_text.delta", "response.function_call_arguments.delta",
        "response.reasoning_summary_text.delta", "response.output_item.added",
        "response.output_item.done", "response.completed", "response.incomplete",
        "response.failed", "error", "response.created"]))
    return draw(_or({"type": kind, "output_index": draw(_or(0)), "delta": draw(_or("Hel")),
                     "item": draw(output_item()), "response": draw(response()),
                     "message": draw(_or("boom"))}))


def _sse(*events: bytes) -> bytes:
    return b"".join(b"event: x\ndata: " + e + b"\n\n" for e in events)


bodies = st.one_of(response().map(encoded), st.binary(max_size=64),
                   st.just(b"[" * 100_000))
streams = st.one_of(
    st.lists(event().map(encoded), max_size=5).map(lambda events: _sse(*events)),
    st.lists(st.one_of(event().map(encoded), st.binary(max_size=24)), max_size=3).map(
        lambda events: b":keep-alive\n\n" + _sse(*events)),
)


@FUZZ
@given(body=bodies, cuts=st.lists(st.integers(0, 10_000), max_size=4))
def test_any_plain_response_ends_in_a_reply_or_a_model_error(
        raw: RawServer, models: dict[bool, OpenAIModel], body: bytes, cuts: list[int]) -> None:
    raw.reply = Raw(split(body, cuts), chunked=bool(cuts))
    check_ends_well(raw, models[False],
                    errors=("ModelError: ", "ContextLengthError: "))


@FUZZ
@given(body=streams, cuts=st.lists(st.integers(0, 10_000), max_size=6))
def test_any_event_stream_ends_in_a_reply_or_a_model_error(
        raw: RawServer, models: dict[bool, OpenAIModel], body: bytes, cuts: list[int]) -> None:
    raw.reply = Raw(split(body, cuts), content_type="text/event-stream", chunked=True)
    check_ends_well(raw, models[True],
                    errors=("ModelError: ", "ContextLengthError: "))


STREAMS_SEEN = [
    (_sse(b'{"type": "response.output_text.delta", "delta": 5}'),
     "expected an output_text delta to be a string, got int 5"),
    (_sse(b'{"type": "response.output_text.delta", "output_index": "0", "delta": "a"}'),
     "expected an event's output_index to be a small number, got str '0'"),
    (_sse(b'{"type": "response.output_item.added", "item": "abc"}'),
     "expected response.output_item.added's item to be an object, got str 'abc'"),
    (_sse(b'{"type": "response.completed", "response": null}'),
     "expected response.completed's response to be an object, got NoneType None"),
    (_sse(b'{"type": "response.completed", "response": {"output": [{"type": "function_call"}]}}'),
     "function_call item 1 has no name"),
    (_sse(b"not json"), "an SSE event's data is not JSON"),
]


@pytest.mark.parametrize(("body", "said"), STREAMS_SEEN)
def test_malformed_event_streams_say_what_was_wrong(
        raw: RawServer, models: dict[bool, OpenAIModel], body: bytes, said: str) -> None:
    assert said in malformed_said(raw, models, body, stream=True)


def test_arguments_sent_as_an_object_are_taken(raw: RawServer,
                                               models: dict[bool, OpenAIModel]) -> None:
    raw.reply = Raw([encoded({"status": "completed", "output": [
        {"type": "function_call", "call_id": "c", "name": "lookup",
         "arguments": {"city": "Oslo"}}]})])
    reply = models[False].complete([Message("user", "hi")])
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("c", "lookup", {"city": "Oslo"})]
