"""One run's spans and metrics, made from its events (the sink ``convo.otel._hook`` gives
every run while instrumented).

Spans: ``invoke_agent convo`` for the run (a served turn's span when the run is served), and
under it, in order, ``chat {model}`` per model call and ``execute_tool {tool}`` per tool call.
A tool's span is made when its ``ToolCallEnded`` arrives, with the times its own run began
and ended (``convo.tools._calls`` notes them; the calls of a batch may run at once), so that
what a resumed run replays never becomes a span. A model call that fails sends no event: its
span ends in error at the run's end (or the served turn's). With ``capture_content``, a model
call's span ends when its reply is stored (``MessageAdded``), at the time the call ended, and
its output is the stored reply: what the output guards left of it, as the user was shown it
(API.md §27: a redaction keeps no copy of the original anywhere, spans included).

(Just over 300 lines: one handler per event kind, each a few lines, and the table of them.)
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, StatusCode

from .._messages import ToolCall
from .._session import Outcome, RunStatus, Session
from ..events import (
    ApprovalDecided,
    ApprovalRequested,
    CaughtUp,
    ContextTrimmed,
    Event,
    GuardTripped,
    MessageAdded,
    ModelCallEnded,
    ModelCallStarted,
    ReplayStarted,
    RunEnded,
    StateEntered,
    SubroutineEnded,
    SubroutineStarted,
    ToolCallEnded,
    ToolCallStarted,
)
from ..models._responded import Responded, listen
from ._content import dumps, input_messages, output_messages
from ._conventions import cache_attributes
from ._telemetry import Telemetry, model_attributes
from ._turns import CURRENT, Turn

logger = logging.getLogger("convo.otel")


class RunSpans:
    """The spans of one run; called with each of its events."""

    hears_messages = False  # no span is made of a message added: spare the run the events

    def __init__(self, telemetry: Telemetry, run: Any, model: Any, session: Session) -> None:
        self.telemetry = telemetry
        self.run_id = id(run)  # not the run: a run's handler holds this, and no cycle may
        # keep a finished run alive until the garbage collector comes (a served turn holds
        # its run, so the id is its own while the turn lasts)
        self.model = model_attributes(model)
        name = self.model.get("gen_ai.request.model")
        self.chat_name = f"chat {name}" if name else "chat"
        self.measured = {"gen_ai.operation.name": "chat", **self.model}  # metric attributes
        self.parent = otel_context.get_current()
        self.started_ns = time.time_ns()
        self.root: Span | None = None
        self.root_context: Context | None = None
        self.chat: Span | None = None
        self.chat_started = 0.0
        # A model call's span and when the call ended, until its reply is stored.
        self.replied: tuple[Span, int] | None = None
        if telemetry.capture_content:
            self.hears_messages = True  # the stored reply is the span's output
        self.responded = Responded()
        self.tools: dict[str, int] = {}  # a call's id -> when it was asked for, until it ends
        self.sessions = [session]  # the innermost subroutine's session last
        self.replaying = False
        self.turn: Turn | None = None
        self.was_served = False  # started in, or reported in, a served turn
        turn = CURRENT.get()
        if turn is not None:
            self.was_served = True
            if turn.run is None:  # the run a served create starts
                turn.run = run

    def __call__(self, event: Event) -> None:
        handle = _HANDLERS.get(type(event))
        if handle is None:
            return
        try:
            handle(self, event)
        except Exception:  # telemetry never ends a conversation
            logger.exception("convo.otel could not record %s", type(event).__name__)

    # -- where spans go ----------------------------------------------------------------------

    def owner(self) -> Span:
        """The run's span: the served turn this run is in, else its own (made on first use)."""
        turn = self.served()
        return self.own()[0] if turn is None else self.join(turn).span

    def join(self, turn: Turn) -> Turn:
        if turn is not self.turn:
            self.turn, self.was_served = turn, True
            turn.runs.append(self)
        return turn

    def own(self) -> tuple[Span, Context]:
        if self.root is None:
            self.root = self.telemetry.tracer.start_span(
                "invoke_agent convo", context=self.parent, kind=SpanKind.INTERNAL,
                start_time=self.started_ns, attributes={
                    "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "convo",
                    **self.model})
            self.root_context = trace.set_span_in_context(self.root)
        assert self.root_context is not None
        return self.root, self.root_context

    def served(self) -> Turn | None:
        turn = CURRENT.get()
        if turn is None or turn.run is None or id(turn.run) != self.run_id:
            return None
        return turn

    def child(self, name: str, kind: SpanKind, attributes: dict[str, Any],
              start_time: int | None = None) -> Span:
        """A span under the run's (or the served turn's) span."""
        turn = self.served()
        if turn is None:
            parent = self.own()[1]
        else:
            parent = self.join(turn).context
            if turn.conversation_id is not None:
                attributes = {**attributes, "gen_ai.conversation.id": turn.conversation_id}
        return self.telemetry.tracer.start_span(name, context=parent, kind=kind,
                                                attributes=attributes, start_time=start_time)

    # -- model calls -------------------------------------------------------------------------

    def model_started(self, event: ModelCallStarted) -> None:
        self.unstored()
        if self.chat is not None:  # the last call failed and the template went on
            self.end_chat("_OTHER")
        attributes = self.measured  # the same as the metrics' (start_span copies them)
        if self.telemetry.capture_content:
            messages = self.sessions[-1].messages
            sent = messages[-event.messages:] if 0 < event.messages <= len(messages) \
                else messages
            attributes = {**attributes, "gen_ai.input.messages": input_messages(sent)}
        self.chat = self.child(self.chat_name, SpanKind.CLIENT, attributes)
        self.responded = listen()  # the model says its response's id and model here
        self.chat_started = time.perf_counter()

    def model_ended(self, event: ModelCallEnded) -> None:
        span, self.chat = self.chat, None
        if span is None:
            return
        reply = event.message
        metadata = reply.metadata
        attributes: dict[str, Any] = {}
        measured = self.measured
        # What the response said of itself (OpenAIModel), else what a model put in metadata.
        responded = self.responded
        response_id, response_model = responded.id, responded.model
        if metadata:
            if response_id is None and isinstance(metadata.get("id"), str):
                response_id = metadata["id"]
            if response_model is None and isinstance(metadata.get("model"), str):
                response_model = metadata["model"]
        finish = reply.finish
        if finish is not None:
            attributes["gen_ai.response.finish_reasons"] = (finish.value,)
        if response_id is not None:
            attributes["gen_ai.response.id"] = response_id
        if response_model is not None:
            attributes["gen_ai.response.model"] = response_model
            measured = {**measured, "gen_ai.response.model": response_model}
        usage = event.usage
        if usage.known:
            attributes["gen_ai.usage.input_tokens"] = usage.prompt_tokens
            attributes["gen_ai.usage.output_tokens"] = usage.completion_tokens
            tokens = self.telemetry.token_usage
            tokens.record(usage.prompt_tokens, {**measured, "gen_ai.token.type": "input"})
            tokens.record(usage.completion_tokens, {**measured, "gen_ai.token.type": "output"})
            attributes.update(cache_attributes(usage))
        self.telemetry.duration.record(event.elapsed_s, measured)
        if attributes:
            span.set_attributes(attributes)
        if self.telemetry.capture_content:  # its output: the reply as stored (message_added)
            self.replied = span, time.time_ns()
            return
        span.end()

    def message_added(self, event: MessageAdded) -> None:
        """The reply of the last model call is stored (the first message after it): its
        span's output is this message, what the guards made of the model's reply."""
        if self.replied is not None:
            span, ended = self.replied
            self.replied = None
            span.set_attribute("gen_ai.output.messages", output_messages(event.message))
            span.end(ended)

    def unstored(self) -> None:
        """A model call whose reply was never stored (the run ended, or went on without it):
        its span ends without its output."""
        if self.replied is not None:
            span, ended = self.replied
            self.replied = None
            span.end(ended)

    def end_chat(self, error_type: str | None) -> None:
        """End the open model call's span: it failed (``error_type``) or was cut short."""
        span, self.chat = self.chat, None
        if span is None:
            return
        measured = self.measured
        if error_type is not None:
            span.set_status(StatusCode.ERROR)
            span.set_attribute("error.type", error_type)
            measured = {**measured, "error.type": error_type}
        self.telemetry.duration.record(time.perf_counter() - self.chat_started, measured)
        span.end()

    # -- tool calls --------------------------------------------------------------------------

    def tool_started(self, event: ToolCallStarted) -> None:
        if not self.replaying:
            self.tools[event.call.id] = time.time_ns()

    def tool_ended(self, event: ToolCallEnded) -> None:
        """One ``execute_tool`` span per call, timed by its own run (the calls of a batch may
        run at once); a call no tool ran for (bad arguments, rejected, a limit) is a moment,
        at the time it was asked for."""
        asked = self.tools.pop(event.call.id, None)
        if self.replaying:
            return
        if event.started_ns:
            start, end = event.started_ns, event.ended_ns
        elif asked is not None:
            turn = self.served()  # asked in an earlier turn (it waited for an approval)
            start = end = asked if turn is None else max(asked, turn.started_ns)
        else:  # asked before a replay caught up, and not run now
            return
        call = event.call
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id, "gen_ai.tool.type": "function"}
        if self.telemetry.capture_content:
            attributes["gen_ai.tool.call.arguments"] = dumps(call.arguments)
            attributes["gen_ai.tool.call.result"] = event.content
        if event.is_error:
            attributes["error.type"] = "tool_error"
        span = self.child(f"execute_tool {call.name}", SpanKind.INTERNAL, attributes, start)
        if event.is_error:
            span.set_status(StatusCode.ERROR)
        span.end(end)

    # -- span events -------------------------------------------------------------------------

    def note(self, name: str, attributes: dict[str, Any]) -> None:
        if not self.replaying:
            self.owner().add_event(name, attributes)

    def approval_requested(self, event: ApprovalRequested) -> None:
        self.note("convo.approval.requested", _call(event.call))

    def approval_decided(self, event: ApprovalDecided) -> None:
        attributes = {**_call(event.call), "convo.approval.approved": event.approval.approved}
        if self.telemetry.capture_content and event.approval.reason is not None:
            attributes["convo.approval.reason"] = event.approval.reason
        self.note("convo.approval.decided", attributes)

    def state_entered(self, event: StateEntered) -> None:
        attributes = {"convo.state.name": event.name}
        if event.previous is not None:
            attributes["convo.state.previous"] = event.previous
        self.note("convo.state.entered", attributes)

    def guard_tripped(self, event: GuardTripped) -> None:
        # Never the value (a redaction keeps no copy of the original anywhere): what tripped.
        self.note("convo.guard.tripped", {
            "convo.guard.name": event.guard, "convo.guard.on": event.on,
            "convo.guard.action": event.action, "convo.guard.reason": event.reason})

    def context_trimmed(self, event: ContextTrimmed) -> None:
        self.note("convo.context.trimmed", {
            "convo.context.dropped": event.dropped, "convo.context.kept": event.kept,
            "convo.context.summarized": event.summarized})

    # -- replays, subroutines ------------------------------------------------------------------

    def replayed(self, event: ReplayStarted) -> None:
        self.replaying = True  # until CaughtUp: what is replayed already has its spans
        self.tools.clear()

    def caught_up(self, event: CaughtUp) -> None:
        self.replaying = False

    def subroutine_started(self, event: SubroutineStarted) -> None:
        if event.child is not None:
            self.sessions.append(event.child)

    def subroutine_ended(self, event: SubroutineEnded) -> None:
        if len(self.sessions) > 1:
            self.sessions.pop()

    # -- the end -----------------------------------------------------------------------------

    def run_ended(self, event: RunEnded) -> None:
        outcome = event.outcome
        self.tools.clear()
        if self.was_served and self.root is None and self.served() is None:
            return  # a served run closed outside any turn (evicted, collected): no turn
        failed = error_type(outcome) if outcome.status == RunStatus.ERROR else None
        self.unstored()
        self.end_chat(failed)
        span = self.owner()
        attributes: dict[str, Any] = {"convo.outcome.status": str(outcome.status.value)}
        if outcome.limit is not None:
            span.add_event("convo.limit.reached", {"convo.limit.name": outcome.limit})
        if failed is not None:
            span.set_status(StatusCode.ERROR)
            attributes["error.type"] = failed
            turn = self.served()
            if turn is not None:
                turn.error_type = failed
        if span is self.root and outcome.usage.known and outcome.usage:
            attributes["gen_ai.usage.input_tokens"] = outcome.usage.prompt_tokens
            attributes["gen_ai.usage.output_tokens"] = outcome.usage.completion_tokens
            attributes.update(cache_attributes(outcome.usage))
        span.set_attributes(attributes)
        if span is self.root:
            span.end()

    def turn_ended(self, turn: Turn) -> None:
        """A served turn is over; a model call it left open failed."""
        self.unstored()
        if self.chat is not None:
            self.end_chat(turn.error_type or "_OTHER")
        self.turn = None


def _call(call: ToolCall) -> dict[str, Any]:
    return {"gen_ai.tool.name": call.name, "gen_ai.tool.call.id": call.id}


def error_type(outcome: Outcome) -> str:
    """The class name an error outcome names (``"ModelError: ..."``), else ``_OTHER``."""
    head = (outcome.error or "").split(":", 1)[0]
    return head if head.isidentifier() else "_OTHER"


_HANDLERS: dict[type[Event], Callable[[RunSpans, Any], None]] = {
    ModelCallStarted: RunSpans.model_started,
    ModelCallEnded: RunSpans.model_ended,
    MessageAdded: RunSpans.message_added,
    ToolCallStarted: RunSpans.tool_started,
    ToolCallEnded: RunSpans.tool_ended,
    ApprovalRequested: RunSpans.approval_requested,
    ApprovalDecided: RunSpans.approval_decided,
    StateEntered: RunSpans.state_entered,
    ContextTrimmed: RunSpans.context_trimmed,
    GuardTripped: RunSpans.guard_tripped,
    ReplayStarted: RunSpans.replayed,
    CaughtUp: RunSpans.caught_up,
    SubroutineStarted: RunSpans.subroutine_started,
    SubroutineEnded: RunSpans.subroutine_ended,
    RunEnded: RunSpans.run_ended,
}
