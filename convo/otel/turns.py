"""A served turn: the ``invoke_agent convo`` span that a request which runs the template
opens (``convo.otel.serving``), and that the run's spans join while it lasts."""

from __future__ import annotations

import time
from contextvars import ContextVar
from typing import Any, Protocol

import attrs
from opentelemetry.context import Context
from opentelemetry.trace import Span, StatusCode, set_span_in_context


class Reporter(Protocol):
    """A run's span maker, as a turn sees it (``convo.otel.spans.RunSpans``)."""

    def turn_ended(self, turn: Turn) -> None: ...


@attrs.define(eq=False)
class Turn:
    """``run``: the served run whose events belong to this turn (``None`` until the run that
    a create starts claims it); ``runs``: the span makers that reported in it."""

    span: Span
    run: Any = None
    conversation_id: str | None = None
    started_ns: int = attrs.field(factory=time.time_ns)
    runs: list[Reporter] = attrs.field(factory=list)
    error_type: str | None = None
    context: Context = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.context = set_span_in_context(self.span)

    def finish(self, code: int, body: dict[str, Any]) -> None:
        """What the request answered: the conversation's id and, for a failure, its kind."""
        conversation_id = body.get("id")
        if isinstance(conversation_id, str):
            self.conversation_id = conversation_id
            self.span.set_attribute("gen_ai.conversation.id", conversation_id)
        waiting = body.get("waiting_for")
        if isinstance(waiting, dict) and waiting.get("type") == "approval":
            # a served approval pauses the run before any ApprovalRequested event: said here
            for call in waiting.get("calls", ()):
                self.span.add_event("convo.approval.requested", {
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
        """The request is over: a model call it left unanswered failed; the span ends."""
        for run in self.runs:
            run.turn_ended(self)
        self.span.end()


CURRENT: ContextVar[Turn | None] = ContextVar("convo_otel_turn", default=None)
