"""Served turns (API.md §18): each request that runs the template is one ``invoke_agent
convo`` span, the child of an incoming ``traceparent``, with the conversation's id; the run's
model and tool spans go under it. Against the app under uvicorn on 127.0.0.1."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode
from otel_kit import Telemetry
from refund_bot import TEMPLATE
from refund_bot import reply as refund_reply

from convo import Message, ModelError
from convo.models import FunctionModel
from convo.serve import create_app
from convo.templates import LinearTemplate, LoopTemplate, ToolingTemplate, UserTemplate
from convo.tools import tool

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"


fail_next: list[bool] = []


def reply(messages: Sequence[Message], tools: Any) -> str:
    """The refund bot's model, whose next call fails when ``fail_next`` says so."""
    if fail_next:
        fail_next.pop()
        raise ModelError("HTTP 500 from the test model")
    return refund_reply(messages, tools)


@pytest.fixture
def api(otel: Telemetry, served: Callable[[Any], str]) -> Iterator[httpx.Client]:
    fail_next.clear()
    with httpx.Client(base_url=served(create_app(TEMPLATE, FunctionModel(reply))),
                      timeout=30) as client:
        yield client


def turns(spans: list[ReadableSpan]) -> list[ReadableSpan]:
    return sorted((s for s in spans if s.name == "invoke_agent convo"),
                  key=lambda s: s.start_time or 0)


def under(spans: list[ReadableSpan], parent: ReadableSpan) -> list[str]:
    return [s.name for s in sorted(spans, key=lambda s: s.start_time or 0)
            if s.parent is not None and s.parent.span_id == parent.context.span_id]


def test_a_turn_with_a_traceparent_is_its_child_and_names_the_conversation(
        otel: Telemetry, api: httpx.Client) -> None:
    created = api.post("/api/conversations", json={}, headers={"traceparent": TRACEPARENT})
    assert created.status_code == 201
    conversation = created.json()["id"]
    answered = api.post(f"/api/conversations/{conversation}/messages",
                        json={"content": "hello"}, headers={"traceparent": TRACEPARENT})
    assert answered.status_code == 200

    spans = otel.spans()
    create, message = turns(spans)
    for turn in (create, message):
        assert format(turn.context.trace_id, "032x") == TRACE_ID
        assert turn.parent is not None and format(turn.parent.span_id, "016x") == PARENT_ID
        assert turn.parent.is_remote
        assert turn.attributes["gen_ai.conversation.id"] == conversation
        assert turn.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert under(spans, create) == []  # the template ran until it waited for the user
    assert under(spans, message) == ["chat"]
    [chat] = [s for s in spans if s.name == "chat"]
    assert chat.attributes["gen_ai.conversation.id"] == conversation
    assert "convo.outcome.status" not in message.attributes  # the conversation goes on
    assert message.attributes["user.id"] == "default"  # nobody signed in: the default user


def test_a_turn_names_the_signed_in_user(otel: Telemetry,
                                         served: Callable[[Any], str]) -> None:
    from convo.serve import TokenTable

    app = create_app(TEMPLATE, FunctionModel(reply),
                     auth=TokenTable({"t-ann": {"user": "ann"}}))
    with httpx.Client(base_url=served(app), timeout=30,
                      headers={"Authorization": "Bearer t-ann"}) as client:
        conversation = client.post("/api/conversations", json={}).json()["id"]
        assert client.post(f"/api/conversations/{conversation}/messages",
                           json={"content": "hello"}).status_code == 200
    assert [t.attributes["user.id"] for t in turns(otel.spans())] == ["ann", "ann"]


def _awaiting_approval(api: httpx.Client, text: str) -> tuple[str, str]:
    """A new conversation told ``text``, waiting for the approval of a call: its id and the
    call's."""
    conversation = api.post("/api/conversations", json={}).json()["id"]
    paused = api.post(f"/api/conversations/{conversation}/messages",
                      json={"content": text}).json()
    return conversation, paused["waiting_for"]["calls"][0]["id"]


def test_an_approval_spans_two_turns_and_the_tool_runs_in_the_second(
        otel: Telemetry, api: httpx.Client) -> None:
    conversation, call_id = _awaiting_approval(api, "refund A1")
    done = api.post(f"/api/conversations/{conversation}/approvals",
                    json={"decisions": [{"call_id": call_id, "approve": True}]})
    assert done.status_code == 200

    spans = otel.spans()
    create, message, approval = turns(spans)
    assert create.parent is None  # no traceparent: a trace of its own
    assert under(spans, message) == ["chat"]
    assert [(e.name, dict(e.attributes or {})) for e in message.events] == [
        ("convo.approval.requested", {"gen_ai.tool.name": "refund",
                                      "gen_ai.tool.call.id": call_id})]
    assert under(spans, approval) == ["execute_tool refund", "chat", "execute_tool finish"]
    assert [(e.name, dict(e.attributes or {})) for e in approval.events] == [
        ("convo.approval.decided", {"gen_ai.tool.name": "refund",
                                    "gen_ai.tool.call.id": call_id,
                                    "convo.approval.approved": True})]
    tool_span = next(s for s in spans if s.name == "execute_tool refund")
    assert tool_span.start_time >= approval.start_time
    assert tool_span.attributes["gen_ai.tool.call.id"] == call_id


def test_a_failed_model_call_marks_the_turn_and_the_call_then_retry_is_a_new_turn(
        otel: Telemetry, api: httpx.Client) -> None:
    conversation = api.post("/api/conversations", json={}).json()["id"]
    fail_next.append(True)
    failed = api.post(f"/api/conversations/{conversation}/messages", json={"content": "hi"})
    assert failed.status_code == 502
    retried = api.post(f"/api/conversations/{conversation}/retry", json={})
    assert retried.status_code == 200

    spans = otel.spans()
    _, message, retry = turns(spans)
    assert message.status.status_code is StatusCode.ERROR
    assert message.attributes["error.type"] == "ModelError"
    [bad] = [s for s in spans if s.name == "chat" and s.parent is not None
             and s.parent.span_id == message.context.span_id]
    assert bad.status.status_code is StatusCode.ERROR
    assert bad.attributes["error.type"] == "ModelError"
    assert retry.status.status_code is StatusCode.UNSET
    assert under(spans, retry) == ["chat"]


def test_a_streamed_turn_has_ended_its_span_when_the_stream_ends(
        otel: Telemetry, api: httpx.Client) -> None:
    conversation = api.post("/api/conversations", json={}).json()["id"]
    with api.stream("POST", f"/api/conversations/{conversation}/messages",
                    json={"content": "hello"},
                    headers={"accept": "text/event-stream", "traceparent": TRACEPARENT}) as r:
        body = "".join(r.iter_text())
    assert "event: done" in body

    spans = otel.spans()
    _, streamed = turns(spans)
    assert format(streamed.context.trace_id, "032x") == TRACE_ID
    assert under(spans, streamed) == ["chat"]


def test_a_rejection_reason_is_content_and_is_not_kept(
        otel: Telemetry, api: httpx.Client) -> None:
    conversation, call_id = _awaiting_approval(api, "refund B2")
    api.post(f"/api/conversations/{conversation}/approvals",
             json={"decisions": [{"call_id": call_id, "approve": False, "reason": "gift"}]})

    last = turns(otel.spans())[-1]
    assert [dict(e.attributes or {}) for e in last.events] == [
        {"gen_ai.tool.name": "refund", "gen_ai.tool.call.id": call_id,
         "convo.approval.approved": False}]
    # finish() ends the turn and the loop asks the user again: the conversation goes on
    assert "convo.outcome.status" not in last.attributes


def test_the_turn_in_which_the_conversation_ends_says_its_outcome(
        otel: Telemetry, served: Callable[[Any], str]) -> None:
    once = LinearTemplate([UserTemplate(), ToolingTemplate([])])
    with httpx.Client(base_url=served(create_app(once, FunctionModel(reply))),
                      timeout=30) as client:
        conversation = client.post("/api/conversations", json={}).json()["id"]
        ended = client.post(f"/api/conversations/{conversation}/messages",
                            json={"content": "hello"}).json()
    assert ended["status"] == "ended"

    create, message = turns(otel.spans())
    assert "convo.outcome.status" not in create.attributes
    assert message.attributes["convo.outcome.status"] == "completed"
    assert message.status.status_code is StatusCode.UNSET


def test_a_conversation_rebuilt_from_the_store_reports_only_what_its_turn_did(
        otel: Telemetry, served: Callable[[Any], str]) -> None:
    app = create_app(TEMPLATE, FunctionModel(reply), cache_size=1)
    with httpx.Client(base_url=served(app), timeout=30) as client:
        first = client.post("/api/conversations", json={}).json()["id"]
        paused = client.post(f"/api/conversations/{first}/messages",
                             json={"content": "refund C3"}).json()
        call_id = paused["waiting_for"]["calls"][0]["id"]
        client.post(f"/api/conversations/{first}/approvals",
                    json={"decisions": [{"call_id": call_id, "approve": True}]})
        client.post("/api/conversations", json={})  # the cache holds one: the first is evicted
        otel.exporter.clear()
        again = client.post(f"/api/conversations/{first}/messages", json={"content": "thanks"})
        assert again.status_code == 200

    spans = otel.spans()
    [turn] = turns(spans)
    assert turn.attributes["gen_ai.conversation.id"] == first
    assert under(spans, turn) == ["chat"]  # the replayed refund and model calls: no spans
    assert [s.name for s in spans] == ["chat", "invoke_agent convo"]
    assert turn.events == ()


def test_a_conversation_evicted_and_collected_makes_no_span(
        otel: Telemetry, served: Callable[[Any], str]) -> None:
    app = create_app(TEMPLATE, FunctionModel(reply), cache_size=1)
    with httpx.Client(base_url=served(app), timeout=30) as client:
        first = client.post("/api/conversations", json={}).json()["id"]
        second = client.post("/api/conversations", json={}).json()["id"]  # evicts the first
        gc.collect()  # its run's generator closes: that ends no turn and is no error

    spans = otel.spans()
    assert [(s.name, (s.attributes or {}).get("gen_ai.conversation.id"), s.status.status_code)
            for s in turns(spans)] == [("invoke_agent convo", first, StatusCode.UNSET),
                                       ("invoke_agent convo", second, StatusCode.UNSET)]
    assert len(spans) == 2


def test_a_request_refused_before_any_template_runs_makes_no_span(
        otel: Telemetry, api: httpx.Client) -> None:
    conversation, call_id = _awaiting_approval(api, "refund A1")
    otel.exporter.clear()
    missing = api.post(f"/api/conversations/{conversation}/approvals", json={"decisions": []})
    assert (missing.status_code, missing.json()) == (
        400, {"error": f"decide every pending call; missing: {call_id}"})
    pending = api.post(f"/api/conversations/{conversation}/messages", json={"content": "hi"})
    assert pending.status_code == 409
    not_failed = api.post(f"/api/conversations/{conversation}/retry", json={})
    assert not_failed.status_code == 409
    assert otel.spans() == []  # refusals: no turn ran, so no invoke_agent span (and no ERROR)

    done = api.post(f"/api/conversations/{conversation}/approvals",
                    json={"decisions": [{"call_id": call_id, "approve": True}]})
    assert done.status_code == 200
    [turn] = turns(otel.spans())
    assert turn.status.status_code is StatusCode.UNSET
    assert under(otel.spans(), turn) == ["execute_tool refund", "chat", "execute_tool finish"]


def test_a_span_another_library_starts_during_a_turn_is_the_turns_child(
        otel: Telemetry, served: Callable[[Any], str]) -> None:
    @tool
    async def look_up(order: str) -> str:
        """Look an order up (an async tool: it runs in the turn's context)."""
        with otel.tracer_provider.get_tracer("a.database").start_as_current_span("SELECT"):
            return f"{order}: delivered"

    def asks(messages: Sequence[Message], tools: Any) -> str:
        last = messages[-1]
        return f"Done: {last.content}" if last.role == "tool" else "{look_up(order='A1')}"

    bot = LoopTemplate([UserTemplate(), ToolingTemplate([look_up])])
    with httpx.Client(base_url=served(create_app(bot, FunctionModel(asks))),
                      timeout=30) as client:
        conversation = client.post("/api/conversations", json={}).json()["id"]
        assert client.post(f"/api/conversations/{conversation}/messages",
                           json={"content": "where?"}).status_code == 200
    spans = otel.spans()
    _, message = turns(spans)
    assert under(spans, message) == ["chat", "execute_tool look_up", "SELECT", "chat"]
