"""One run of a conversation: its counters and limits, and the answering of each request.

``Run`` holds what one run knows (the session, counts, usage, the last turn) and answers each
request type (``convo.requests``) with a pair of handlers, blocking and async, named by the
request's ``handler``. ``Runner`` (runner.py) drives the template generator and dispatches to
them; a served conversation (convo.serve) uses the same handlers, answering the requests that
pause (the user, an approval) itself.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .approval import Approval
from .errors import DefinitionError, InterfaceError, ModelError, ReachedEndTemplateException
from .events import (
    ApprovalDecided,
    ApprovalRequested,
    Event,
    MessageAdded,
    ModelCallEnded,
    ModelCallStarted,
    Replayed,
    RunEnded,
    TextDelta,
    ToolCallsRecovered,
    TurnEnded,
    UserInput,
)
from .interfaces.base import UserInterface
from .invoking import run_async, run_sync
from .messages import Message, ToolCall
from .requests import Approve, AskUser, CallModel, Invocation, Request, RunTools, ToolRun
from .session import NO_USAGE, Outcome, RunStatus, Session, TurnResult, Usage

if TYPE_CHECKING:
    from .models.base import Model
    from .runner import Runner


class MaxMessages(Exception):
    """The runner's ``max_messages`` bound was reached (ends the run ``max_messages``)."""


class UsageLimitReached(Exception):
    """A ``Limits`` field was reached (ends the run ``usage_limit``)."""

    def __init__(self, limit: str) -> None:
        super().__init__(f"the {limit} limit was reached")
        self.limit = limit


class Run:
    """The state of one run: counters, the clock, and the answers to requests."""

    __slots__ = ("added", "limit_reached", "model_calls", "on_event", "runner", "session",
                 "started", "tool_calls", "turn", "usage")

    def __init__(self, runner: Runner, session: Session) -> None:
        self.runner = runner
        self.session = session
        self.on_event = runner.on_event
        self.added = 0
        self.model_calls = 0
        self.tool_calls = 0
        self.usage: Usage = NO_USAGE
        self.turn: TurnResult | None = None
        self.limit_reached: str | None = None
        self.started = time.perf_counter()

    def emit(self, event: Event) -> None:
        if self.on_event is not None:
            self.on_event(event)

    def apply(self, step: Message | Event) -> None:
        """Append a message or pass an event on (TurnEnded also lands on session.turns)."""
        if isinstance(step, Message):
            if self.added >= self.runner.max_messages:
                raise MaxMessages
            self.session.messages.append(step)
            self.added += 1
            if self.on_event is not None:
                self.on_event(MessageAdded(step, len(self.session.messages) - 1))
            return
        if isinstance(step, TurnEnded):
            self.session.turns.append(step.result)
            self.turn = step.result
        elif isinstance(step, Replayed):
            self.model_calls += step.model_calls
            self.tool_calls += step.tool_calls
            self.usage = self.usage + step.usage
        self.emit(step)

    # -- limits ------------------------------------------------------------------------------

    def admit(self, request: Request) -> tuple[Request | None, list[ToolRun]]:
        """Check the limits before a request is answered.

        Returns the request to answer (``None``: nothing left to run) and the results of tool
        calls that may not run. Raises ``UsageLimitReached`` when the run must end here.
        """
        limits = self.runner.limits
        if self.limit_reached is not None and not isinstance(request, RunTools):
            raise UsageLimitReached(self.limit_reached)
        if limits is None and self.limit_reached is None:
            return request, []
        if isinstance(request, CallModel):
            if limits is not None and limits.model_calls is not None \
                    and self.model_calls >= limits.model_calls:
                raise UsageLimitReached("model_calls")
            return request, []
        if isinstance(request, RunTools):
            return self._admit_tools(request)
        return request, []

    def _admit_tools(self, request: RunTools) -> tuple[Request | None, list[ToolRun]]:
        # convo's own termination tools never count and are never blocked: a budget must not
        # keep a conversation from ending cleanly.
        limits = self.runner.limits
        room = None if limits is None or limits.tool_calls is None else \
            limits.tool_calls - self.tool_calls
        allowed: list[Invocation] = []
        skipped: list[ToolRun] = []
        for invocation in request.invocations:
            if invocation.tool.rerun_on_resume:
                allowed.append(invocation)
            elif self.limit_reached is not None:
                skipped.append(ToolRun(skipped=f"the {self.limit_reached} limit was reached"))
            elif room is not None and room <= 0:
                self.limit_reached = "tool_calls"
                skipped.append(ToolRun(skipped="the tool_calls limit was reached"))
            else:
                room = None if room is None else room - 1
                allowed.append(invocation)
        if not skipped:
            return request, []
        return (RunTools(tuple(allowed)) if allowed else None), skipped

    def counted_tools(self, invocations: Sequence[Invocation]) -> None:
        self.tool_calls += sum(not inv.tool.rerun_on_resume for inv in invocations)

    # -- the model ---------------------------------------------------------------------------

    def model_for(self, request: CallModel) -> Model:
        model = request.model or self.runner.model
        if model is None:
            raise DefinitionError(
                "no model to call: give the Runner a model, or the template its own model="
            )
        self.model_calls += 1
        if self.on_event is not None:  # no event objects when nobody listens
            self.on_event(ModelCallStarted(self.model_calls, len(self.session.messages),
                                           len(request.tools)))
        return model

    def on_delta(self) -> Callable[[str], None] | None:
        if self.on_event is None:
            return None
        emit = self.on_event
        return lambda text: emit(TextDelta(text))

    def model_replied(self, reply: Any, started: float) -> Message:
        if not isinstance(reply, Message) or reply.role != "assistant":
            raise ModelError(f"the model must return an assistant Message, got {reply!r}")
        usage = reply.metadata.get("usage") if reply.metadata else None
        call_usage = Usage.from_dict(usage) if usage else NO_USAGE
        if usage:
            self.usage = self.usage + call_usage
            limits = self.runner.limits
            if limits is not None and self.limit_reached is None:
                self.limit_reached = limits.tokens_over(self.usage)
        if self.on_event is not None:
            self.on_event(ModelCallEnded(self.model_calls, reply, call_usage,
                                         time.perf_counter() - started))
            if "recovered_tool_calls" in reply.metadata:
                self.on_event(ToolCallsRecovered(reply.tool_calls,
                                                 reply.metadata["recovered_tool_calls"]))
        return reply

    def call_model(self, request: CallModel) -> Message:
        model = self.model_for(request)
        started = time.perf_counter()
        reply = model.complete(self.session.messages, request.tools, on_delta=self.on_delta())
        return self.model_replied(reply, started)

    async def acall_model(self, request: CallModel) -> Message:
        model = self.model_for(request)
        started = time.perf_counter()
        reply = await model.acomplete(self.session.messages, request.tools,
                                      on_delta=self.on_delta())
        return self.model_replied(reply, started)

    # -- tools -------------------------------------------------------------------------------

    def run_tools(self, request: RunTools) -> list[ToolRun]:
        self.counted_tools(request.invocations)
        return [run_sync(inv) for inv in request.invocations]

    async def arun_tools(self, request: RunTools) -> list[ToolRun]:
        self.counted_tools(request.invocations)
        invocations = request.invocations
        if len(invocations) == 1:
            return [await run_async(invocations[0])]
        import asyncio

        return list(await asyncio.gather(*(run_async(inv) for inv in invocations)))

    # -- the user ----------------------------------------------------------------------------

    def user_interface(self) -> UserInterface:
        ui = self.runner.user_interface
        if ui is None:
            raise InterfaceError(
                "the template asks the user for input (a UserTemplate without content), "
                "but the Runner has no user_interface"
            )
        return ui

    def ask_user(self, request: AskUser) -> str:
        ui = self.user_interface()
        answer = ui.ask(self.session, request.instruction, request.default)
        self.emit(UserInput(getattr(ui, "echoes_input", False)))
        return answer

    async def aask_user(self, request: AskUser) -> str:
        ui = self.user_interface()
        aask = getattr(ui, "aask", None)
        if aask is not None:
            answer: str = await aask(self.session, request.instruction, request.default)
        else:
            answer = ui.ask(self.session, request.instruction, request.default)
        self.emit(UserInput(getattr(ui, "echoes_input", False)))
        return answer

    # -- approval ----------------------------------------------------------------------------

    def decided(self, call: ToolCall, approval: Approval) -> Approval:
        """Record a decision (a resumed or rebuilt run never asks for it again)."""
        self.session.approvals[call.id] = approval
        self.emit(ApprovalDecided(call, approval))
        return approval

    def approve(self, request: Approve) -> list[Approval]:
        return [self._approve_one(call) for call in request.calls]

    async def aapprove(self, request: Approve) -> list[Approval]:
        ui = self.runner.user_interface
        if getattr(ui, "aapprove", None) is None:
            return self.approve(request)
        answers = []
        for call in request.calls:
            known = self.session.approvals.get(call.id)
            if known is not None:
                answers.append(known)
                continue
            self.emit(ApprovalRequested(call))
            value = await ui.aapprove(self.session, call)  # type: ignore[union-attr]
            answers.append(self.decided(call, Approval.of(value)))
        return answers

    def _approve_one(self, call: ToolCall) -> Approval:
        known = self.session.approvals.get(call.id)
        if known is not None:
            return known
        self.emit(ApprovalRequested(call))
        approve = getattr(self.runner.user_interface, "approve", None)
        if approve is None:  # nobody can approve: an unapproved tool never runs
            return self.decided(call, Approval(False))
        return self.decided(call, Approval.of(approve(self.session, call)))

    # -- the end -----------------------------------------------------------------------------

    def finish(self, exc: BaseException | None) -> Outcome:
        """Decide the outcome from how the generator ended, and record it."""
        farewell = error = limit = None
        if exc is None:
            status = self.turn.status if self.turn is not None else RunStatus.COMPLETED
            if self.limit_reached is not None:
                status, limit = RunStatus.USAGE_LIMIT, self.limit_reached
        elif isinstance(exc, ReachedEndTemplateException):
            status, farewell = RunStatus.ENDED, exc.farewell_message
        elif isinstance(exc, UsageLimitReached):
            status, limit = RunStatus.USAGE_LIMIT, exc.limit
        elif isinstance(exc, EOFError | KeyboardInterrupt) or cancelled(exc):
            status = RunStatus.STOPPED
        elif isinstance(exc, MaxMessages):
            status = RunStatus.MAX_MESSAGES
        else:
            status, error = RunStatus.ERROR, f"{type(exc).__name__}: {exc}"
        outcome = Outcome(
            status=status, farewell=farewell, error=error, turn=self.turn,
            messages=len(self.session.messages), model_calls=self.model_calls,
            usage=self.usage, elapsed_s=time.perf_counter() - self.started, limit=limit,
        )
        self.session.outcome = outcome
        if self.on_event is not None:
            self.on_event(RunEnded(outcome))
        return outcome

    def reraise(self, exc: BaseException | None) -> bool:
        """Whether the exception that ended the run should propagate to the caller."""
        if exc is None or isinstance(exc, ReachedEndTemplateException | EOFError | MaxMessages
                                     | UsageLimitReached | KeyboardInterrupt):
            return False
        if not isinstance(exc, Exception):  # cancellation, SystemExit: always propagate
            return True
        return self.runner.raise_errors


def cancelled(exc: BaseException) -> bool:
    # Only a loaded asyncio can have raised its CancelledError.
    asyncio = sys.modules.get("asyncio")
    return asyncio is not None and isinstance(exc, asyncio.CancelledError)

