"""Spans and metrics of a run through the real ``openai`` SDK against the fake OpenAI server
(127.0.0.1): the provider, the model, the server, the tokens it reports, a failed call."""

from __future__ import annotations

import asyncio

import pytest
from opentelemetry.trace import SpanKind, StatusCode
from otel_kit import Telemetry, one, shape

from convo import (
    LinearTemplate,
    Message,
    OpenAIModel,
    Runner,
    SystemTemplate,
    ToolingTemplate,
    UserTemplate,
    tool,
)
from convo.testing import ErrorReply, OpenAIServer


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}."


TEMPLATE = LinearTemplate([SystemTemplate("Be brief."), UserTemplate("Weather in Oslo?"),
                           ToolingTemplate([weather])])
USAGE = {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}


@pytest.mark.parametrize("stream", [False, True])
def test_a_run_through_the_openai_sdk(otel: Telemetry, stream: bool) -> None:
    replies = ["{weather(city='Oslo')}",
               Message("assistant", "Sunny.", metadata={"usage": USAGE})]
    with OpenAIServer(replies) as server, \
            OpenAIModel("gpt-test", base_url=server.base_url, api_key="test",
                        stream=stream) as model:
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
    last = max((s for s in spans if s.name == "chat gpt-test"), key=lambda s: s.start_time)
    assert last.kind is SpanKind.CLIENT
    assert dict(last.attributes or {}) == {
        "gen_ai.operation.name": "chat", **model_attributes,
        "gen_ai.response.finish_reasons": ("stop",),
        "gen_ai.usage.input_tokens": 20, "gen_ai.usage.output_tokens": 5}
    tokens = {a["gen_ai.token.type"]: (a, p.sum) for a, p in otel.points(
        "gen_ai.client.token.usage")}
    assert tokens["input"] == ({"gen_ai.operation.name": "chat", "gen_ai.token.type": "input",
                                **model_attributes}, 27)
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
