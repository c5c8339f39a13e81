"""Shared by the model tests of this folder (their conftest hands on the fixtures): the
fuzzing's bounds, its raw server and its plain and streaming models, the strategies of any
JSON value, and the check that a fuzzed call ended in a reply or a ``ModelError`` naming the
server."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from rawserver import Raw, RawServer

from convo import Message, ModelError, OpenAIModel, Runner, RunStatus
from convo.templates import LinearTemplate, SystemTemplate, ToolingTemplate, UserTemplate
from convo.tools import tool

EXAMPLES = int(os.environ.get("CONVO_FUZZ_EXAMPLES", "40"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize="CONVO_FUZZ_EXAMPLES" not in
                os.environ, suppress_health_check=[HealthCheck.too_slow,
                                                   HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def raw() -> Iterator[RawServer]:
    with RawServer() as server:
        yield server


def fuzzed_models(raw: RawServer, **options: Any) -> Iterator[dict[bool, OpenAIModel]]:
    """A plain and a streaming model, made once per module (an SDK client takes ~0.2 s to
    make), closed after it."""
    made = {stream: OpenAIModel("m", base_url=raw.base_url, api_key="k", max_retries=0,
                                stream=stream, timeout=10, **options)
            for stream in (False, True)}
    yield made
    for model in made.values():
        model.close()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                  max_size=3),
    max_leaves=8,
)


def or_anything(value: Any) -> st.SearchStrategy[Any]:
    """A well-formed value, or anything else in its place."""
    return st.one_of(st.just(value), json_values)


def encoded(value: Any) -> bytes:
    return json.dumps(value).encode()


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


@tool
def lookup(city: str) -> str:
    """Looks a city up."""
    return f"{city}: found"


def conversation() -> LinearTemplate:
    return LinearTemplate([SystemTemplate("s"), UserTemplate("hi"), ToolingTemplate([lookup])])


def check_ends_well(raw: RawServer, model: OpenAIModel,
                    errors: tuple[str, ...] = ("ModelError: ",)) -> None:
    """The run ended; if in an error, one of ``errors`` that names the server."""
    session = Runner(model, conversation(), raise_errors=False, max_messages=8).run()
    outcome = session.outcome
    assert outcome is not None
    if outcome.status == RunStatus.ERROR:  # any other ending is a conversation that went on
        assert (outcome.error or "").startswith(errors), outcome.error
        assert raw.base_url in (outcome.error or ""), outcome.error
    assert outcome.messages == len(session.messages)


def malformed_said(raw: RawServer, models: dict[bool, OpenAIModel], body: bytes,
                   stream: bool) -> str:
    """What the ``ModelError`` of a call answered with ``body`` says after naming the server
    and the model (its words differ for a stream)."""
    raw.reply = Raw([body], content_type="text/event-stream" if stream else "application/json",
                    chunked=stream)
    with pytest.raises(ModelError) as info:
        models[stream].complete([Message("user", "hi")])
    said = str(info.value)
    start = f"malformed {'streamed ' if stream else ''}reply from {raw.base_url} (model 'm'): "
    assert said.startswith(start), said
    return said[len(start):]


def check_model_error(model: Any, error: type[Exception], said: str, where: str) -> None:
    """``model`` (entered and closed here) answers "Hi" with exactly ``error``, its message
    holding ``said`` and naming ``where`` (the server and the model)."""
    with model, pytest.raises(error) as info:
        model.complete([Message("user", "Hi")])
    assert type(info.value) is error, repr(info.value)
    assert said in str(info.value), str(info.value)
    assert where in str(info.value), str(info.value)


class Parsed(list[Any]):
    """A stream of the SDK's parsed chunks or events, as an injected client gives it."""

    def close(self) -> None:
        pass


class _Create:
    def __init__(self, reply: Any) -> None:
        self.reply = reply

    def create(self, **kwargs: Any) -> Any:
        return self.reply


class InjectedClient:
    """An injected client without raw responses: its ``chat.completions.create`` and
    ``responses.create`` give ``reply``, the SDK's own parsed object (or a ``Parsed``)."""

    base_url = "http://fake.invalid/v1"

    def __init__(self, reply: Any) -> None:
        self.chat = type("Chat", (), {"completions": _Create(reply)})()
        self.responses = _Create(reply)
