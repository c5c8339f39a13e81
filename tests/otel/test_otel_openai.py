"""Spans and metrics of a run through the real ``openai`` SDK against the fake OpenAI server
(127.0.0.1): the provider, the model, the server, the tokens it reports, a failed call."""

from __future__ import annotations

import asyncio
import json

import pytest
from opentelemetry.trace import SpanKind, StatusCode
from otel_kit import Telemetry, one, shape
from rawserver import Raw, RawServer, sse

from convo import Message, OpenAIModel, Runner
from convo.templates import LinearTemplate, SystemTemplate, ToolingTemplate, UserTemplate
from convo.testing import ErrorReply, OpenAIServer
from convo.testing._server import responses_wire as responses
from convo.testing._server.chat_wire import chunks_from_message, response_from_message
from convo.tools import tool


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}."


TEMPLATE = LinearTemplate([SystemTemplate("Be brief."), UserTemplate("Weather in Oslo?"),
                           ToolingTemplate([weather])])
USAGE = {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("stream", [False, True])
def test_a_run_through_the_openai_sdk(otel: Telemetry, stream: bool, api: str) -> None:
    replies = ["{weather(city='Oslo')}",
               Message("assistant", "Sunny.", metadata={"usage": USAGE})]
    with OpenAIServer(replies) as server, \
            OpenAIModel("gpt-test", base_url=server.base_url, api_key="test",
                        stream=stream, api=api) as model:
        Runner(model, TEMPLATE).run()
        port = int(server.base_url.split(":")[2].split("/")[0])

    spans = otel.spans()
    assert shape(spans) == [
        ("invoke_agent convo", None), ("chat gpt-test", "invoke_agent convo"),
        ("execute_tool weather", "invoke_agent convo"), ("chat gpt-test", "invoke_agent convo")]
    model_attributes = {"gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-test",
                        "server.address": "127.0.0.1", "server.port": port}
    run = one(spans, "invoke_agent convo")
    assert dict(run.attributes or {}) == {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "convo",
        **model_attributes, "convo.outcome.status": "completed",
        # the server counts the first call's tokens in words: 7 in, 2 out
        "gen_ai.usage.input_tokens": 27, "gen_ai.usage.output_tokens": 7}
    first, last = sorted((s for s in spans if s.name == "chat gpt-test"),
                         key=lambda s: s.start_time or 0)
    assert last.kind is SpanKind.CLIENT
    prefix = "resp_" if api == "responses" else "chatcmpl-"  # the fake server's ids
    assert dict(last.attributes or {}) == {
        "gen_ai.operation.name": "chat", **model_attributes,
        "gen_ai.response.id": f"{prefix}2", "gen_ai.response.model": "gpt-test",
        "gen_ai.response.finish_reasons": ("stop",),
        "gen_ai.usage.input_tokens": 20, "gen_ai.usage.output_tokens": 5}
    assert first.attributes is not None
    assert first.attributes["gen_ai.response.id"] == f"{prefix}1"
    tokens = {a["gen_ai.token.type"]: (a, p.sum) for a, p in otel.points(
        "gen_ai.client.token.usage")}
    assert tokens["input"] == ({"gen_ai.operation.name": "chat", "gen_ai.token.type": "input",
                                **model_attributes, "gen_ai.response.model": "gpt-test"}, 27)
    assert tokens["output"][1] == 7


def test_a_failed_openai_call_is_an_error_span_with_the_exception_class(
        otel: Telemetry) -> None:
    with OpenAIServer([ErrorReply(400, body={"error": {"message": "bad request"}})]) as server, \
            OpenAIModel("gpt-test", base_url=server.base_url, api_key="test",
                        max_retries=0) as model:
        session = asyncio.run(Runner(model, TEMPLATE, raise_errors=False).arun())

    assert session.outcome is not None and session.outcome.status == "error"
    chat = one(otel.spans(), "chat gpt-test")
    assert chat.status.status_code is StatusCode.ERROR
    assert chat.attributes["error.type"] == "ModelError"
    [(attributes, point)] = otel.points("gen_ai.client.operation.duration")
    assert attributes["error.type"] == "ModelError" and point.count == 1


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("stream", [False, True])
def test_the_response_says_its_id_and_model_and_the_reply_is_unchanged(
        otel: Telemetry, stream: bool, api: str) -> None:
    # A server that answers with a more exact model than was asked for, and an id of its own.
    said = {"model": "gpt-test-2026-01-01", "response_id": "answer-7f3a", "created": 0}
    reply = Message("assistant", "Sunny.")
    if api == "responses":
        if stream:
            raw = Raw([sse(*(json.dumps(e).encode()
                             for e in responses.events_from_message(reply, **said)))],
                      content_type="text/event-stream")
        else:
            raw = Raw([json.dumps(responses.response_from_message(reply, **said)).encode()])
    elif stream:
        raw = Raw([sse(*(json.dumps(c).encode() for c in chunks_from_message(reply, **said)))],
                  content_type="text/event-stream")
    else:
        raw = Raw([json.dumps(response_from_message(reply, **said)).encode()])
    with RawServer(raw) as server, \
            OpenAIModel("gpt-test", base_url=server.base_url, api_key="test", stream=stream,
                        api=api, max_retries=0) as model:
        runner = Runner(model, LinearTemplate([UserTemplate("Weather?"),
                                               ToolingTemplate([weather])]))
        # streamed through arun (the model's async path), else through run
        session = asyncio.run(runner.arun()) if stream else runner.run()

    chat = one(otel.spans(), "chat gpt-test")
    assert chat.attributes is not None
    assert (chat.attributes["gen_ai.request.model"], chat.attributes["gen_ai.response.model"],
            chat.attributes["gen_ai.response.id"]) == ("gpt-test", "gpt-test-2026-01-01",
                                                       "answer-7f3a")
    [(attributes, _)] = otel.points("gen_ai.client.operation.duration")
    assert attributes["gen_ai.response.model"] == "gpt-test-2026-01-01"
    # the reply is what it always was: the response's id and model are not in its metadata
    assert session.messages[-1] == Message("assistant", "Sunny.",
                                           metadata={"finish_reason": "stop"})


@pytest.mark.parametrize(("sdk", "name", "provider"), [
    pytest.param("anthropic", "claude-test", "anthropic", id="the_anthropic_sdk"),
    pytest.param("google_genai", "gemini-test", "gcp.gemini", id="the_google_genai_sdk")])
def test_a_run_through_another_sdk_names_its_provider_and_server(
        otel: Telemetry, sdk: str, name: str, provider: str) -> None:
    from convo import AnthropicModel, GeminiModel
    from convo.testing import AnthropicServer, GeminiServer

    server_class, model_class = {"anthropic": (AnthropicServer, AnthropicModel),
                                 "google_genai": (GeminiServer, GeminiModel)}[sdk]
    with server_class(["{weather(city='Oslo')}", "Sunny."]) as server, \
            model_class(name, base_url=server.base_url, api_key="test") as model:
        Runner(model, TEMPLATE).run()
        port = int(server.base_url.rsplit(":", 1)[1])
    chats = [s for s in otel.spans() if s.name == f"chat {name}"]
    assert len(chats) == 2
    attributes = dict(chats[0].attributes or {})
    assert {k: attributes[k] for k in ("gen_ai.provider.name", "gen_ai.request.model",
                                       "server.address", "server.port")} == {
        "gen_ai.provider.name": provider, "gen_ai.request.model": name,
        "server.address": "127.0.0.1", "server.port": port}
