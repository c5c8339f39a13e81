"""The AG-UI and AI SDK faces' turns are traced as the native routes' are (API.md §18, §24):
each request that runs the template is one ``invoke_agent convo`` span, the child of an
incoming ``traceparent``, naming the thread's conversation and the signed-in user, with the
run's model spans under it; a request that runs nothing makes none."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
from otel_kit import Telemetry
from test_otel_serve import PARENT_ID, TEMPLATE, TRACE_ID, TRACEPARENT, reply, turns, under

from convo import FunctionModel
from convo.serve import create_app


def agui_input(thread: str, run: str, *messages: tuple[str, str]) -> dict[str, Any]:
    return {"threadId": thread, "runId": run, "state": {}, "tools": [], "context": [],
            "forwardedProps": {}, "messages": [
                {"id": i, "role": "user", "content": text} for i, text in messages]}


def test_agui_runs_are_spans_of_the_thread(otel: Telemetry,
                                           served: Callable[[Any], str]) -> None:
    url = served(create_app(TEMPLATE, FunctionModel(reply)))
    with httpx.Client(base_url=url, timeout=30,
                      headers={"traceparent": TRACEPARENT}) as client:
        first = client.post("/agui", json=agui_input("t1", "r1", ("u1", "hello")))
        again = client.post("/agui", json=agui_input("t1", "r2", ("u1", "hello")))
    assert first.status_code == again.status_code == 200
    spans = otel.spans()
    create, message = turns(spans)  # the second run adds nothing: no span
    for turn in (create, message):
        assert format(turn.context.trace_id, "032x") == TRACE_ID
        assert turn.parent is not None and format(turn.parent.span_id, "016x") == PARENT_ID
        assert turn.attributes["gen_ai.conversation.id"] == "t1"
        assert turn.attributes["user.id"] == "default"
    assert under(spans, create) == []
    assert under(spans, message) == ["chat"]


def test_ai_sdk_requests_and_a_regenerate_are_spans_of_the_chat(
        otel: Telemetry, served: Callable[[Any], str]) -> None:
    url = served(create_app(TEMPLATE, FunctionModel(reply)))
    said = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hello"}]}
    with httpx.Client(base_url=url, timeout=30) as client:
        for trigger in ("submit-message", "regenerate-message"):
            answer = client.post("/ai-sdk/chat", json={"id": "c", "trigger": trigger,
                                                       "messages": [said]})
            assert answer.status_code == 200 and "[DONE]" in answer.text
    spans = otel.spans()
    # (the branch's replay, which calls nothing, opens a span of its own, as a native
    # branch's does: only the turns that name the chat are the requests')
    create, message, regenerated = [t for t in turns(spans)
                                    if t.attributes.get("gen_ai.conversation.id") == "c"]
    assert (under(spans, message), under(spans, regenerated)) == (["chat"], ["chat"])
    assert create.parent is None
