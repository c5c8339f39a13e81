"""A guard that trips is a span event ``convo.guard.tripped`` (API.md §27), without the value;
with content captured, a model call's span carries its reply as the guards left it."""

from __future__ import annotations

import json
from typing import Any

from guard_kit import carries_card
from otel_kit import Telemetry

from convo import LinearTemplate, MockModel, Runner, ToolingTemplate, UserTemplate, tool
from convo.guards import matches, pii
from convo.testing import captured_spans


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}."


def test_a_tripped_guard_is_a_span_event_without_the_value(otel: Telemetry) -> None:
    Runner(MockModel(["card 4111 1111 1111 1111"]),
           LinearTemplate([UserTemplate("hi"), ToolingTemplate([])]), guards=[pii()]).run()
    events = [(e.name, dict(e.attributes or {})) for span in otel.spans()
              for e in span.events if e.name.startswith("convo.guard")]
    assert events == [("convo.guard.tripped", {
        "convo.guard.name": "pii", "convo.guard.on": "output", "convo.guard.action": "redact",
        "convo.guard.reason": "redacted"})]
    assert not any("4111" in str(dict(span.attributes or {})) for span in otel.spans())


def _everything(spans: list[Any]) -> str:
    """Every attribute of every span and span event, as text."""
    return json.dumps([[dict(s.attributes or {}), [dict(e.attributes or {}) for e in s.events]]
                       for s in spans], default=str)


def _outputs(spans: list[Any]) -> list[Any]:
    return [json.loads(s.attributes["gen_ai.output.messages"]) for s in spans
            if s.name == "chat" and "gen_ai.output.messages" in (s.attributes or {})]


def test_with_content_captured_a_redacted_reply_is_on_its_span_as_the_user_saw_it() -> None:
    with captured_spans(capture_content=True) as spans:
        session = Runner(MockModel(["Your card: 4111 1111 1111 1111."]),
                         LinearTemplate([UserTemplate("hi"), ToolingTemplate([])]),
                         guards=[pii()]).run()
    assert session.messages[-1].text == "Your card: [card]."
    assert _outputs(spans) == [[{"role": "assistant", "finish_reason": "stop", "parts": [
        {"type": "text", "content": "Your card: [card]."}]}]]
    assert not carries_card(_everything(spans))
    assert [s.name for s in spans] == ["chat", "invoke_agent convo"]


def test_with_content_captured_a_blocked_reply_is_on_its_span_as_its_replacement() -> None:
    with captured_spans(capture_content=True) as spans:
        Runner(MockModel(["the secret is 42", "{get_weather(city='Oslo')}", "Sunny."]),
               LinearTemplate([UserTemplate("hi"), ToolingTemplate([]),
                               UserTemplate("weather?"), ToolingTemplate([get_weather])]),
               guards=[matches("secret")]).run()
    assert _outputs(spans)[0] == [{"role": "assistant", "finish_reason": "stop", "parts": [
        {"type": "text", "content": "Sorry, I can't help with that."}]}]
    assert "secret is" not in _everything(spans)
    # The next calls' spans are as before: each its own reply, ended before the tool's span.
    assert _outputs(spans)[1][0]["parts"][0]["name"] == "get_weather"
    assert _outputs(spans)[2][0]["parts"] == [{"type": "text", "content": "Sunny."}]
    assert [s.name for s in spans] == ["chat", "chat", "execute_tool get_weather", "chat",
                                       "invoke_agent convo"]
