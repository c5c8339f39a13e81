"""Spans and metrics of in-process runs (API.md §18), read back from the SDK's in-memory
exporter and reader: names, parents, attributes, statuses and span events, exactly."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import SpanKind, StatusCode
from otel_kit import Telemetry, one, shape
from refund_bot import refund

import convo.otel
from convo import (
    ContextWindow,
    Limits,
    Message,
    ModelError,
    Runner,
    ScriptedInterface,
    ToolCall,
    Usage,
)
from convo._reply import Finish
from convo._resume import resume
from convo._run.state import _WATCHERS
from convo.models import FunctionModel, MockModel
from convo.templates import (
    AssistantTemplate,
    GotoTemplate,
    LinearTemplate,
    StateMachineTemplate,
    SystemTemplate,
    ToolingTemplate,
    UserTemplate,
)
from convo.tools import tool


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def broken(x: int) -> int:
    """Always fails."""
    raise ValueError(f"no luck with {x}")


USAGE = {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
TEMPLATE = LinearTemplate([SystemTemplate("You add."), UserTemplate("What is 1+2?"),
                           ToolingTemplate([add, broken, refund])])


def model() -> MockModel:
    return MockModel([
        Message("assistant", "", tool_calls=[ToolCall("call_1", "add", {"a": 1, "b": 2})],
                metadata={"usage": USAGE, "finish_reason": "tool_calls"}),
        Message("assistant", "It is 3.", metadata={"usage": USAGE, "finish_reason": "stop"}),
    ])


RUN = ("invoke_agent convo", None)
CHAT = ("chat", "invoke_agent convo")


def test_a_run_is_one_invoke_agent_span_with_its_model_and_tool_calls_in_order(
        otel: Telemetry) -> None:
    session = Runner(model(), TEMPLATE).run()

    spans = otel.spans()
    assert shape(spans) == [RUN, CHAT, ("execute_tool add", "invoke_agent convo"), CHAT]
    run = one(spans, "invoke_agent convo")
    assert run.kind is SpanKind.INTERNAL
    assert dict(run.attributes or {}) == {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "convo",
        "convo.outcome.status": "completed",
        "gen_ai.usage.input_tokens": 24, "gen_ai.usage.output_tokens": 6}
    assert run.status.status_code is StatusCode.UNSET
    first, second = sorted((s for s in spans if s.name == "chat"), key=lambda s: s.start_time)
    assert first.kind is SpanKind.CLIENT
    assert dict(first.attributes or {}) == {
        "gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": ("tool_calls",),
        "gen_ai.usage.input_tokens": 12, "gen_ai.usage.output_tokens": 3}
    assert second.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    call = one(spans, "execute_tool add")
    assert call.kind is SpanKind.INTERNAL
    assert dict(call.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "add",
        "gen_ai.tool.call.id": "call_1", "gen_ai.tool.type": "function"}
    assert call.status.status_code is StatusCode.UNSET
    assert len({s.context.trace_id for s in spans}) == 1
    assert session.outcome is not None and session.outcome.status == "completed"


def test_cache_reads_and_writes_are_on_the_model_span_and_the_run(otel: Telemetry) -> None:
    usage = Usage(100, 4, 104, cache_read_tokens=80, cache_write_tokens=16)
    Runner(MockModel([Message.assistant("Hi.", finish=Finish.STOP, usage=usage)]),
           LinearTemplate([UserTemplate("Hello"), AssistantTemplate()])).run()
    chat = one(otel.spans(), "chat")
    assert dict(chat.attributes or {}) == {
        "gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": ("stop",),
        "gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 4,
        "gen_ai.usage.cache_read.input_tokens": 80,
        "gen_ai.usage.cache_creation.input_tokens": 16}
    run = one(otel.spans(), "invoke_agent convo")
    assert run.attributes is not None
    assert run.attributes["gen_ai.usage.cache_read.input_tokens"] == 80
    assert run.attributes["gen_ai.usage.cache_creation.input_tokens"] == 16


def test_arun_makes_the_same_spans(otel: Telemetry) -> None:
    asyncio.run(Runner(model(), TEMPLATE).arun())
    assert shape(otel.spans()) == [RUN, CHAT, ("execute_tool add", "invoke_agent convo"), CHAT]


def test_a_failing_tool_marks_its_span_error_and_the_run_goes_on(otel: Telemetry) -> None:
    replies = ["{broken(x=7)}", "That did not work."]
    Runner(MockModel(replies), TEMPLATE).run()

    spans = otel.spans()
    assert shape(spans) == [RUN, CHAT, ("execute_tool broken", "invoke_agent convo"), CHAT]
    failed = one(spans, "execute_tool broken")
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.attributes["error.type"] == "tool_error"
    run = one(spans, "invoke_agent convo")
    assert run.status.status_code is StatusCode.UNSET
    assert run.attributes["convo.outcome.status"] == "completed"


def test_a_failed_model_call_ends_its_span_and_the_run_in_error(otel: Telemetry) -> None:
    def fail(messages: Sequence[Message], tools: Any) -> Message:
        raise ModelError("HTTP 503 from the test model")

    session = Runner(FunctionModel(fail), TEMPLATE, raise_errors=False).run()

    assert session.outcome is not None and session.outcome.status == "error"
    spans = otel.spans()
    assert shape(spans) == [RUN, CHAT]
    for span in spans:
        assert span.status.status_code is StatusCode.ERROR, span.name
        assert span.attributes["error.type"] == "ModelError", span.name
    assert one(spans, "invoke_agent convo").attributes["convo.outcome.status"] == "error"
    [(attributes, point)] = otel.points("gen_ai.client.operation.duration")
    assert attributes == {"gen_ai.operation.name": "chat", "error.type": "ModelError"}
    assert point.count == 1


def test_no_content_is_recorded_unless_asked(otel: Telemetry) -> None:
    Runner(model(), TEMPLATE).run()
    content = {"gen_ai.input.messages", "gen_ai.output.messages",
               "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"}
    for span in otel.spans():
        assert not content & set(span.attributes or {}), span.name


def test_capture_content_records_messages_and_tool_content_as_json(otel: Telemetry) -> None:
    convo.otel.instrument(tracer_provider=otel.tracer_provider,
                          meter_provider=otel.meter_provider, capture_content=True)
    Runner(model(), TEMPLATE).run()

    spans = otel.spans()
    first = min((s for s in spans if s.name == "chat"), key=lambda s: s.start_time)
    assert json.loads(first.attributes["gen_ai.input.messages"]) == [
        {"role": "system", "parts": [{"type": "text", "content": "You add."}]},
        {"role": "user", "parts": [{"type": "text", "content": "What is 1+2?"}]}]
    assert json.loads(first.attributes["gen_ai.output.messages"]) == [
        {"role": "assistant", "finish_reason": "tool_calls", "parts": [
            {"type": "tool_call", "id": "call_1", "name": "add",
             "arguments": {"a": 1, "b": 2}}]}]
    call = one(spans, "execute_tool add")
    assert call.attributes["gen_ai.tool.call.arguments"] == '{"a": 1, "b": 2}'
    assert call.attributes["gen_ai.tool.call.result"] == "3"


def test_token_usage_and_duration_histograms(otel: Telemetry) -> None:
    Runner(model(), TEMPLATE).run()

    tokens = sorted(otel.points("gen_ai.client.token.usage"),
                    key=lambda p: p[0]["gen_ai.token.type"])
    assert [(a, p.count, p.sum) for a, p in tokens] == [
        ({"gen_ai.operation.name": "chat", "gen_ai.token.type": "input"}, 2, 24),
        ({"gen_ai.operation.name": "chat", "gen_ai.token.type": "output"}, 2, 6)]
    assert list(tokens[0][1].explicit_bounds[:3]) == [1, 4, 16]
    [(attributes, duration)] = otel.points("gen_ai.client.operation.duration")
    assert attributes == {"gen_ai.operation.name": "chat"}
    assert duration.count == 2
    assert list(duration.explicit_bounds[:3]) == [0.01, 0.02, 0.04]


def test_approvals_are_events_of_the_run_span(otel: Telemetry) -> None:
    user = ScriptedInterface([], approvals=[False])
    Runner(MockModel(["{refund(order='A1')}", "Not refunded."]), TEMPLATE, user).run()

    run = one(otel.spans(), "invoke_agent convo")
    assert [(e.name, dict(e.attributes or {})) for e in run.events] == [
        ("convo.approval.requested",
         {"gen_ai.tool.name": "refund", "gen_ai.tool.call.id": "call_1"}),
        ("convo.approval.decided", {"gen_ai.tool.name": "refund",
                                    "gen_ai.tool.call.id": "call_1",
                                    "convo.approval.approved": False})]
    rejected = one(otel.spans(), "execute_tool refund")
    assert rejected.status.status_code is StatusCode.UNSET


def test_state_changes_context_trims_and_limits_are_span_events(otel: Telemetry) -> None:
    machine = StateMachineTemplate({
        "a": LinearTemplate([SystemTemplate("In a."), UserTemplate("hello there"),
                             GotoTemplate("b")]),
        "b": LinearTemplate([UserTemplate("and again"), AssistantTemplate(),
                             AssistantTemplate()]),
    }, start="a")
    runner = Runner(MockModel(["One.", "Two."]), machine,
                    context=ContextWindow(max_tokens=10_000, keep_last=1),
                    limits=Limits(model_calls=1))
    session = runner.run()

    assert session.outcome is not None and session.outcome.limit == "model_calls"
    run = one(otel.spans(), "invoke_agent convo")
    assert [(e.name, dict(e.attributes or {})) for e in run.events] == [
        ("convo.state.entered", {"convo.state.name": "a"}),
        ("convo.state.entered", {"convo.state.name": "b", "convo.state.previous": "a"}),
        # the system message and the newest user message are always kept (docs/context.md)
        ("convo.context.trimmed", {"convo.context.dropped": 1, "convo.context.kept": 2,
                                   "convo.context.summarized": False}),
        # the second call is fitted, then refused by the limit
        ("convo.context.trimmed", {"convo.context.dropped": 1, "convo.context.kept": 3,
                                   "convo.context.summarized": False}),
        ("convo.limit.reached", {"convo.limit.name": "model_calls"})]
    assert run.attributes["convo.outcome.status"] == "usage_limit"


def test_a_run_inside_the_callers_span_is_its_child(otel: Telemetry) -> None:
    tracer = otel.tracer_provider.get_tracer("the caller")
    with tracer.start_as_current_span("handle request"):
        Runner(model(), TEMPLATE).run()
    assert shape(otel.spans())[:2] == [("handle request", None),
                                       ("invoke_agent convo", "handle request")]


def test_the_runners_own_on_event_still_gets_every_event(otel: Telemetry) -> None:
    seen: list[str] = []
    Runner(model(), TEMPLATE, on_event=lambda e: seen.append(type(e).__name__)).run()
    assert seen.count("ModelCallEnded") == 2 and seen[-1] == "RunEnded"
    assert len(otel.spans()) == 4


def test_uninstrument_stops_the_spans_and_stops_watching_runs(otel: Telemetry) -> None:
    convo.otel.uninstrument()
    assert _WATCHERS == []
    Runner(model(), TEMPLATE).run()
    assert otel.spans() == []


def test_a_resumed_run_makes_no_spans_for_what_it_replays(otel: Telemetry) -> None:
    chat = LinearTemplate([UserTemplate("What is 1+2?"), ToolingTemplate([add]),
                           UserTemplate(), AssistantTemplate()])
    saved = Runner(model(), chat, ScriptedInterface([])).run()  # stops at the second question
    otel.exporter.clear()

    template, session = resume(chat, saved)
    Runner(MockModel(["Bye."]), template, ScriptedInterface(["thanks"])).run(session)

    assert shape(otel.spans()) == [RUN, CHAT]


def test_captured_spans_collects_for_the_block_and_restores_what_was_there(
        otel: Telemetry) -> None:
    from convo.testing import captured_spans

    with captured_spans() as spans:
        Runner(model(), TEMPLATE).run()
        assert [s.name for s in spans][-1] == "invoke_agent convo"
    assert len(spans) == 4
    assert otel.spans() == []  # went to the block's spans only
    Runner(model(), TEMPLATE).run()
    assert len(otel.spans()) == 4  # and the instrumentation before it is back


def test_captured_spans_without_instrumentation_before_leaves_none() -> None:
    from convo.otel._state import active
    from convo.testing import captured_spans

    with captured_spans(capture_content=True) as spans:
        Runner(model(), TEMPLATE).run()
    assert "gen_ai.tool.call.result" in one(spans, "execute_tool add").attributes
    assert active() is None
    assert _WATCHERS == []


def test_instrument_takes_a_provider_of_its_own() -> None:
    provider = TracerProvider()
    convo.otel.instrument(tracer_provider=provider)
    try:
        from convo.otel._state import active

        telemetry = active()
        assert telemetry is not None and telemetry.capture_content is False
    finally:
        convo.otel.uninstrument()


@pytest.mark.parametrize("code", [
    "import sys, convo; print(sorted(m for m in sys.modules if 'opentelemetry' in m))",
    # the anthropic SDK (which `from convo import *` loads for AnthropicModel) imports the
    # OpenTelemetry API itself: what convo loads besides is what counts
    "import sys, anthropic; sdk = set(sys.modules); import convo; from convo import *; "
    "convo.Runner(convo.MockModel(['hi']), convo.AssistantTemplate()).run(); "
    "print(sorted(m for m in set(sys.modules) - sdk if 'opentelemetry' in m))",
    "import sys, convo.cli, convo.serve._http.app, convo.otel; "
    "print(sorted(m for m in sys.modules if 'opentelemetry' in m))",
])
def test_not_instrumented_nothing_of_opentelemetry_is_loaded(code: str) -> None:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_the_example_prints_its_runs_spans_as_a_tree() -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "traced_bot.py"
    out = subprocess.run([sys.executable, str(example)], capture_output=True, text=True,
                         check=True, timeout=120).stdout.splitlines()
    assert out[0] == "The run ended stopped; its spans:"
    assert [line.split("  (")[0] for line in out[1:]] == [
        "invoke_agent convo", "  chat", "  execute_tool get_weather", "  chat"]
