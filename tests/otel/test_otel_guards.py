"""A guard that trips is a span event ``convo.guard.tripped`` (API.md §27), without the value."""

from __future__ import annotations

from otel_kit import Telemetry

from convo import LinearTemplate, MockModel, Runner, ToolingTemplate, UserTemplate
from convo.guards import pii


def test_a_tripped_guard_is_a_span_event_without_the_value(otel: Telemetry) -> None:
    Runner(MockModel(["card 4111 1111 1111 1111"]),
           LinearTemplate([UserTemplate("hi"), ToolingTemplate([])]), guards=[pii()]).run()
    events = [(e.name, dict(e.attributes or {})) for span in otel.spans()
              for e in span.events if e.name.startswith("convo.guard")]
    assert events == [("convo.guard.tripped", {
        "convo.guard.name": "pii", "convo.guard.on": "output", "convo.guard.action": "redact",
        "convo.guard.reason": "redacted"})]
    assert not any("4111" in str(dict(span.attributes or {})) for span in otel.spans())
