"""A served turn: the ``invoke_agent convo`` span that a request which runs the template
opens (``convo.otel._serving``), and that the run's spans join while it lasts.

The span is started when first used (by the run's spans, by a span another library starts
under the current one, or by the answer), with the request's start time: a request refused
before any template runs (a 400, 403, 409) makes no span at all.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any, Protocol

import attrs
from opentelemetry.context import Context
from opentelemetry.trace import (
    Span,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    Tracer,
    set_span_in_context,
)
from opentelemetry.util.types import Attributes, AttributeValue


class Reporter(Protocol):
    """A run's span maker, as a turn sees it (``convo.otel._spans.RunSpans``)."""

    def turn_ended(self, turn: Turn) -> None: ...


@attrs.define(eq=False)
class Turn:
    """``run``: the served run whose events belong to this turn (``None`` until the run that
    a create starts claims it); ``runs``: the span makers that reported in it."""

    tracer: Tracer
    parent: Context
    attributes: dict[str, Any]
    run: Any = None
    conversation_id: str | None = None
    started_ns: int = attrs.field(factory=time.time_ns)
    runs: list[Reporter] = attrs.field(factory=list)
    error_type: str | None = None
    _span: Span | None = None

    @property
    def span(self) -> Span:
        """The turn's span, started (at the request's start) the first time it is asked for."""
        if self._span is None:
            self._span = self.tracer.start_span(
                "invoke_agent convo", context=self.parent, kind=SpanKind.INTERNAL,
                attributes=self.attributes, start_time=self.started_ns)
        return self._span

    @property
    def context(self) -> Context:
        return set_span_in_context(self.span, self.parent)

    def finish(self, code: int, body: dict[str, Any]) -> None:
        """What the request answered: the conversation's id and, for a failure, its kind."""
        span = self.span
        conversation_id = body.get("id")
        if isinstance(conversation_id, str):
            self.conversation_id = conversation_id
            span.set_attribute("gen_ai.conversation.id", conversation_id)
        waiting = body.get("waiting_for")
        if isinstance(waiting, dict) and waiting.get("type") == "approval":
            # a served approval pauses the run before any ApprovalRequested event: said here
            for call in waiting.get("calls", ()):
                span.add_event("convo.approval.requested", {
                    "gen_ai.tool.name": call["name"], "gen_ai.tool.call.id": call["id"]})
        if code == 502:  # a failed model call (API.md §9): the conversation waits for retry
            self.fail("ModelError")
        elif code >= 500:
            self.fail(self.error_type or "_OTHER")

    def fail(self, error_type: str) -> None:
        self.error_type = error_type
        self.span.set_status(StatusCode.ERROR)
        self.span.set_attribute("error.type", error_type)

    def close(self) -> None:
        """The request is over: a model call it left unanswered failed; the span ends (if
        anything started it)."""
        for run in self.runs:
            run.turn_ended(self)
        if self._span is not None:
            self._span.end()


class Deferred(Span):
    """The turn's span as the current span while the request runs: whatever reads it (a span
    another library starts as its child) starts the turn's span, which it stands for."""

    def __init__(self, turn: Turn) -> None:
        self.turn = turn

    def get_span_context(self) -> SpanContext:
        return self.turn.span.get_span_context()

    def is_recording(self) -> bool:
        return self.turn.span.is_recording()

    def set_attributes(self, attributes: Mapping[str, AttributeValue]) -> None:
        self.turn.span.set_attributes(attributes)

    def set_attribute(self, key: str, value: AttributeValue) -> None:
        self.turn.span.set_attribute(key, value)

    def add_event(self, name: str, attributes: Attributes = None,
                  timestamp: int | None = None) -> None:
        self.turn.span.add_event(name, attributes, timestamp)

    def add_link(self, context: SpanContext, attributes: Attributes = None) -> None:
        self.turn.span.add_link(context, attributes)

    def update_name(self, name: str) -> None:
        self.turn.span.update_name(name)

    def set_status(self, status: Status | StatusCode, description: str | None = None) -> None:
        self.turn.span.set_status(status, description)

    def record_exception(self, exception: BaseException, attributes: Attributes = None,
                         timestamp: int | None = None, escaped: bool = False) -> None:
        self.turn.span.record_exception(exception, attributes, timestamp, escaped)

    def end(self, end_time: int | None = None) -> None:
        pass  # the turn ends its span when the request is over


CURRENT: ContextVar[Turn | None] = ContextVar("convo_otel_turn", default=None)
