"""How each request is answered, blocking and async: one pair of methods per request, named by
the request's ``handler`` (``call_model`` / ``acall_model``, ...). ``Run`` (driving.py) is an
``Answers``: the state they count into lives there.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .approval import Approval
from .errors import DefinitionError, InterfaceError, ModelError
from .events import (
    ApprovalDecided,
    ApprovalRequested,
    Event,
    ModelCallEnded,
    ModelCallStarted,
    ReplyTruncated,
    TextDelta,
    ToolCallsRecovered,
    UserInput,
)
from .interfaces.base import UserInterface
from .invoking import run_async, run_sync
from .messages import Message, ToolCall
from .requests import Approve, AskUser, CallModel, Invocation, RunTools, ToolRun
from .session import UNREPORTED, Session, Usage

if TYPE_CHECKING:
    from .limits import Limits
    from .models.base import Model


class Settings(Protocol):
    """What a run needs to know of its runner (``convo.runner.Runner`` is one)."""

    model: Model | None
    user_interface: UserInterface | None
    on_event: Callable[[Event], None] | None
    max_messages: int
    raise_errors: bool
    truncated_is_error: bool
    limits: Limits | None


class Answers:
    """The answers to requests; mixed into ``Run``, which holds the counts they update."""

    runner: Settings
    session: Session
    on_event: Callable[[Event], None] | None
    model_calls: int
    tool_calls: int
    usage: Usage
    limit_reached: str | None

    def emit(self, event: Event) -> None:
        if self.on_event is not None:
            self.on_event(event)

    def counted_tools(self, invocations: Sequence[Invocation]) -> None:
        self.tool_calls += sum(not inv.tool.rerun_on_resume for inv in invocations)

    # -- the model ---------------------------------------------------------------------------

    def model_for(self, request: CallModel) -> tuple[Model, Sequence[Message]]:
        """The model to call and what it is sent; counts the call."""
        model = request.model or self.runner.model
        if model is None:
            raise DefinitionError(
                "no model to call: give the Runner a model, or the template its own model="
            )
        self.model_calls += 1
        messages = self.sent(request)
        if self.on_event is not None:  # no event objects when nobody listens
            self.on_event(ModelCallStarted(self.model_calls, len(messages), len(request.tools)))
        return model, messages

    def sent(self, request: CallModel) -> Sequence[Message]:
        """What the model is sent: the session's messages, a subroutine's own, or those a
        ContextWindow chose; then the budget note, if the limits tell the model (sent only,
        never stored)."""
        messages = self.session.messages if request.messages is None else request.messages
        note = self.budget_note(request)
        return messages if note is None else (*messages, note)

    def budget_note(self, request: CallModel) -> Message | None:
        """``Limits(tell_model=True)``: a system note of what is left of each limit, for a
        reply call (not a summary); the calls made so far, this one once it is counted."""
        limits = self.runner.limits
        if limits is None or not limits.tell_model or request.purpose != "reply":
            return None
        text = limits.left(self.model_calls, self.tool_calls, self.usage)
        return None if text is None else Message("system", text)

    def on_delta(self, request: CallModel) -> Callable[[str], None] | None:
        if self.on_event is None or request.purpose != "reply":
            return None
        emit = self.on_event
        return lambda text: emit(TextDelta(text))

    def model_replied(self, reply: Any, started: float) -> Message:
        if not isinstance(reply, Message) or reply.role != "assistant":
            raise ModelError(f"the model must return an assistant Message, got {reply!r}")
        usage = reply.metadata.get("usage") if reply.metadata else None
        call_usage = Usage.from_dict(usage) if usage else UNREPORTED  # unknown, not zero
        self.usage = self.usage + call_usage
        if usage:
            limits = self.runner.limits
            if limits is not None and self.limit_reached is None:
                self.limit_reached = limits.tokens_over(self.usage)
        if self.on_event is not None:
            self.on_event(ModelCallEnded(self.model_calls, reply, call_usage,
                                         time.perf_counter() - started))
            if "recovered_tool_calls" in reply.metadata:
                self.on_event(ToolCallsRecovered(reply.tool_calls,
                                                 reply.metadata["recovered_tool_calls"]))
        if reply.metadata and reply.metadata.get("finish_reason") == "length":
            self.truncated(reply)
        return reply

    def truncated(self, reply: Message) -> None:
        """A reply cut off at the model's token limit: said, and an error if the bot says so."""
        self.emit(ReplyTruncated(self.model_calls, reply))
        if self.runner.truncated_is_error:
            raise ModelError(
                f"model call {self.model_calls} was cut off at the model's token limit "
                "(finish_reason 'length') after "
                f"{len(reply.content)} characters{' and tool calls' * bool(reply.tool_calls)}: "
                "raise max_tokens, or shorten what the model is asked for")

    def call_model(self, request: CallModel) -> Message:
        model, messages = self.model_for(request)
        started = time.perf_counter()
        reply = model.complete(messages, request.tools, on_delta=self.on_delta(request))
        return self.model_replied(reply, started)

    async def acall_model(self, request: CallModel) -> Message:
        model, messages = self.model_for(request)
        started = time.perf_counter()
        reply = await model.acomplete(messages, request.tools, on_delta=self.on_delta(request))
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
