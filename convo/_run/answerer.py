"""The live answerer: what answers the requests a template yields (``convo._requests``) live.

``LiveAnswerer`` is an ``Answerer`` (``convo._run.stack``: one method per kind of request,
blocking and async, and the one dispatch), written once for every front end: it calls the model
(within a ``ContextWindow``), runs tools (``convo.tools._calls``), lists a turn's toolsets
(``convo.tools._toolset``), runs hooks, asks the user and asks for approvals, counting into the
run's ``RunState`` and checking its limits before each live call. Other answerers stand in
front of it (``convo._run.stack.Forwarding``): the replay of a saved conversation
(``convo._run.replay``), a cancel (``convo._run.cancel``; Ctrl-C in a terminal,
``convo._terminal.cancel``), a served turn (``convo.serve._engine``).

An answerer that cannot answer now raises ``Pause``: the request is answered later (by a
person over HTTP, or by a retry), and the run waits at it.

(Over 300 lines: the one live answerer: each kind of request has its blocking and its async
answer side by side, so that the twins are read, and changed, together.)
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from typing import Any

from .._approval import Approval
from .._errors import DefinitionError, InterfaceError, ModelError
from .._messages import Message, ToolCall
from .._parts import Content
from .._reply import UNREPORTED, Finish
from .._requests import (
    Approve,
    AskUser,
    CallModel,
    CheckGuards,
    HandOff,
    ListTools,
    Request,
    RunHooks,
    RunTools,
    TakeSteered,
)
from ..events import (
    ApprovalRequested,
    Event,
    ModelCallEnded,
    ModelCallStarted,
    ReasoningDelta,
    ReplyTruncated,
    TextDelta,
    ToolCallsRecovered,
    UserInput,
)
from ..guards._base import Checked
from ..guards._marks import sendable
from ..models._deltas import Deltas
from ..tools._calls import Invocation, ToolRun, aexecute, execute
from ..tools._toolset import Listed, alist_toolsets, list_toolsets
from . import guarding
from .stack import Answerer, Forwarding
from .state import RunState


class Pause(Exception):
    """Not answered now: the run waits at ``request`` (``error``: why, for a retry)."""

    def __init__(self, request: Request[Any], error: str | None = None) -> None:
        super().__init__(error or "the run waits")
        self.request = request
        self.error = error


class LiveAnswerer(Answerer):
    """Answers every request live, blocking or async (see the module docstring)."""

    __slots__ = ("checking", "state")

    def __init__(self, state: RunState) -> None:
        self.state = state
        self.checking = False  # guards check the current call's reply: its events wait

    @property
    def partial(self) -> list[str]:
        """The text streamed so far by the current model call (a cut-off reply's text)."""
        return self.state.partial

    # -- hooks and toolsets ------------------------------------------------------------------

    def run_hooks(self, request: RunHooks) -> None:
        request.run()

    async def arun_hooks(self, request: RunHooks) -> None:
        request.run()

    def list_tools(self, request: ListTools) -> list[Listed]:
        return list_toolsets(request.toolsets)

    async def alist_tools(self, request: ListTools) -> list[Listed]:
        return await alist_toolsets(request.toolsets)

    # -- the model ---------------------------------------------------------------------------

    def call_model(self, request: CallModel) -> Message:
        if request.context is None and self.state.settings.context is None:  # the common case
            model, messages, started = self._before(request)
            return self.replied(model.complete(messages, request.tools,
                                               on_delta=self._on_delta(request)), started)
        flow = self._fitted(request)
        answer: Any = None
        try:
            while True:
                try:
                    call = flow.send(answer)
                except StopIteration as stop:
                    reply: Message = stop.value
                    return reply
                model, messages, started = self._before(call)
                answer = self.replied(model.complete(messages, call.tools,
                                                     on_delta=self._on_delta(call)), started)
        finally:
            flow.close()

    async def acall_model(self, request: CallModel) -> Message:
        if request.context is None and self.state.settings.context is None:  # the common case
            model, messages, started = self._before(request)
            return self.replied(await model.acomplete(
                messages, request.tools, on_delta=self._on_delta(request)), started)
        flow = self._fitted(request)
        answer: Any = None
        try:
            while True:
                try:
                    call = flow.send(answer)
                except StopIteration as stop:
                    reply: Message = stop.value
                    return reply
                model, messages, started = self._before(call)
                answer = self.replied(await model.acomplete(
                    messages, call.tools, on_delta=self._on_delta(call)), started)
        finally:
            flow.close()

    def _fitted(self, request: CallModel) -> Generator[CallModel, Any, Message]:
        """The calls to make for ``request``: itself, or what its ``ContextWindow`` makes of
        it (the chosen messages, and a summary call first when the window says so)."""
        window = request.context or self.state.settings.context
        if window is None:
            reply: Message = yield request
            return reply
        from .._context import estimate_message
        from .._summary import fit

        note = self.budget_note(request)
        return (yield from fit(window, self.state.session, request,
                               request.model or self.state.settings.model, self.state.emit,
                               reserve=0 if note is None else estimate_message(note)))

    def _before(self, request: CallModel) -> tuple[Any, Sequence[Message], float]:
        """Check the limits; the model to call and what it is sent; count the call."""
        state = self.state
        state.admit_model_call()
        model = request.model or state.settings.model
        if model is None:
            raise DefinitionError(
                "no model to call: give the Runner a model, or the template its own model="
            )
        state.model_calls += 1
        messages = self.sent(request)
        if state.on_event is not None:  # no event objects when nobody listens
            if state.unsaid is not None:  # the last reply the guards checked was not stored
                state.say_reply()
            state.on_event(ModelCallStarted(state.model_calls, len(messages),
                                            len(request.tools)))
            guards = request.guards
            self.checking = False if guards is None or not (guards or state.plan.on) else \
                self._checks(request)
            # What a listener is shown only once the guards pass (``_on_delta``: none is held
            # back, nor reasoning kept for the guards, when nobody listens).
            state.held_text, state.reasoning = None, []
        state.partial = []
        return model, messages, state.clock()

    def sent(self, request: CallModel) -> Sequence[Message]:
        """What the model is sent: the session's messages, a subroutine's own, or those a
        ContextWindow chose; then the budget note, if the limits tell the model (sent only,
        never stored)."""
        state = self.state
        messages = state.session.messages if request.messages is None else request.messages
        if state.guarded:  # a message a guard blocked is never sent
            messages = sendable(messages)
        if state.settings.limits is None:  # no note: the common case, without a call
            return messages
        note = self.budget_note(request)
        return messages if note is None else (*messages, note)

    def budget_note(self, request: CallModel) -> Message | None:
        """``Limits(tell_model=True)``: a system note of what is left of each limit, for a
        reply call (not a summary); the calls made so far, this one once it is counted."""
        state = self.state
        limits = state.settings.limits
        if limits is None or not limits.tell_model or request.purpose != "reply":
            return None
        text = limits.left(state.model_calls, state.tool_calls, state.usage)
        return None if text is None else Message("system", text)

    def _on_delta(self, request: CallModel) -> Callable[[str], None] | None:
        """What the model streams to: the reply's text (kept for a cancel, and said as
        ``TextDelta``), and a reasoning model's reasoning (said as ``ReasoningDelta``)."""
        if request.purpose != "reply":
            return None
        state = self.state
        partial, emit = state.partial, state.on_event
        if emit is None:  # nobody listens: the text is only kept
            return partial.append
        # (The callbacks are made by ``_holding`` and ``_saying``: a closure's variables here
        # would cost every call their cells, with nobody listening too.)
        if request.guards is not None and self._holds(request.guards):
            held = state.held_text = []
            return _holding(partial, held, state.reasoning)  # said once the guards pass
        return _saying(partial, state.reasoning, emit)

    def replied(self, reply: Any, started: float) -> Message:
        """Count a reply (its usage, the token limits) and say it."""
        if not isinstance(reply, Message) or reply.role != "assistant":
            raise ModelError(f"the model must return an assistant Message, got {reply!r}")
        state = self.state
        metadata = reply.metadata  # (a reply without facts: no property read)
        usage = reply.usage if metadata else None
        finish = reply.finish if metadata else None
        call_usage = UNREPORTED if usage is None else usage  # unknown, not zero
        state.used(call_usage, reported=usage is not None)
        if state.on_event is not None:
            said: list[Event] = [ModelCallEnded(state.model_calls, reply, call_usage,
                                                state.clock() - started)]
            if "recovered_tool_calls" in metadata:
                said.append(ToolCallsRecovered(reply.tool_calls,
                                               metadata["recovered_tool_calls"]))
            if finish is Finish.LENGTH:
                said.append(ReplyTruncated(state.model_calls, reply))
            if self.checking:  # said once stored, as its guards leave it (``RunState.add``)
                state.unsaid = said
            else:
                for event in said:
                    state.on_event(event)
        if finish is Finish.LENGTH:
            self._truncated(reply)
        return reply

    def _truncated(self, reply: Message) -> None:
        """A reply cut off at the model's token limit: an error if the bot says so."""
        state = self.state
        if state.settings.truncated_is_error:
            raise ModelError(
                f"model call {state.model_calls} was cut off at the model's token limit "
                "(finish_reason 'length') after "
                f"{len(reply.content)} characters{' and tool calls' * bool(reply.tool_calls)}: "
                "raise max_tokens, or shorten what the model is asked for")

    # -- guards (``convo._run.guarding``) ---------------------------------------------------

    def _holds(self, own: tuple[Any, ...]) -> bool:
        """Whether a reply's text is held until its guards pass (an output guard holds)."""
        return any(g.on == "output" and g.stream == "hold" for g in (*self.state.plan.guards, *own))

    def _checks(self, request: CallModel) -> bool:
        """Whether the template puts this call's reply to guards that may change it (its
        output guards, or its calls' ``tool_call`` guards)."""
        if request.purpose != "reply":
            return False
        on = self.state.plan.on
        return "output" in on or "tool_call" in on or any(
            g.on in ("output", "tool_call") for g in request.guards or ())

    def check_guards(self, request: CheckGuards) -> Checked | None:
        return guarding.answer(self.state, request)

    async def acheck_guards(self, request: CheckGuards) -> Checked | None:
        return await guarding.aanswer(self.state, request)

    # -- tools -------------------------------------------------------------------------------

    def run_tools(self, request: RunTools,
                  run: Callable[[Invocation], ToolRun] = execute) -> list[ToolRun]:
        """Run the calls the limits allow, one after another (``run``: how one is run)."""
        verdicts = self.state.admit_tools(request.invocations)
        return [run(inv) if why is None else ToolRun(skipped=why)
                for inv, why in zip(request.invocations, verdicts, strict=True)]

    async def arun_tools(self, request: RunTools) -> list[ToolRun]:
        """Run the calls the limits allow, at once; results keep call order."""
        verdicts = self.state.admit_tools(request.invocations)
        allowed = [inv for inv, why in zip(request.invocations, verdicts, strict=True)
                   if why is None]
        if len(allowed) == 1:
            ran = [await aexecute(allowed[0])]
        elif allowed:
            import asyncio

            ran = list(await asyncio.gather(*(aexecute(inv) for inv in allowed)))
        else:
            ran = []
        return merged(verdicts, ran)

    # -- the user ----------------------------------------------------------------------------

    def _interface(self) -> Any:
        self.state.admit()
        ui = self.state.settings.user_interface
        if ui is None:
            raise InterfaceError(
                "the template asks the user for input (a UserTemplate without content), "
                "but the Runner has no user_interface"
            )
        return ui

    # -- messages handed to the run while it ran (``Runner.steer``, API.md §26) ---------------

    def take_steered(self, request: TakeSteered) -> tuple[Message, ...]:
        return _taken(self.state.session.queued)

    async def atake_steered(self, request: TakeSteered) -> tuple[Message, ...]:
        return _taken(self.state.session.queued)

    def ask_user(self, request: AskUser) -> Content:
        queued = self.state.session.queued
        if queued:  # a steered message the turn ended before taking: it is the reply
            return queued.pop(0).content
        ui = self._interface()
        answer: Content = ui.ask(self.state.session, request.instruction, request.default)
        self.state.emit(UserInput(getattr(ui, "echoes_input", False)))
        return answer

    async def aask_user(self, request: AskUser) -> Content:
        session = self.state.session
        if session.queued:
            return session.queued.pop(0).content
        ui = self._interface()
        aask = getattr(ui, "aask", None)
        if aask is not None:
            answer: Content = await aask(session, request.instruction, request.default)
        else:
            answer = ui.ask(session, request.instruction, request.default)
        self.state.emit(UserInput(getattr(ui, "echoes_input", False)))
        return answer

    # -- a handoff to a person ---------------------------------------------------------------

    def _handler(self) -> Any:
        """The interface's ``hand_off``; ``None`` when it has none (nobody takes over: the
        handoff is handed back at once)."""
        self.state.admit()
        ui = self.state.settings.user_interface
        if ui is None:
            raise InterfaceError("the model handed the conversation to a person (the handoff "
                                 "tool), but the Runner has no user_interface to hand it to")
        return getattr(ui, "hand_off", None)

    def hand_off(self, request: HandOff) -> Message | None:
        hand_off = self._handler()
        if hand_off is None:
            return None
        said: Message | None = hand_off(self.state.session, request.reason, request.said)
        return self._said(said)

    async def ahand_off(self, request: HandOff) -> Message | None:
        hand_off = self._handler()
        if hand_off is None:
            return None
        ahand_off = getattr(self.state.settings.user_interface, "ahand_off", None)
        said: Message | None = (await ahand_off(self.state.session, request.reason,
                                                request.said)) if ahand_off is not None \
            else hand_off(self.state.session, request.reason, request.said)
        return self._said(said)

    def _said(self, said: Message | None) -> Message | None:
        if said is not None:  # typed: the printer need not show it again when it is shown
            self.state.emit(UserInput(getattr(self.state.settings.user_interface,
                                              "echoes_input", False)))
        return said

    # -- approval ----------------------------------------------------------------------------

    def approve(self, request: Approve) -> list[Approval]:
        self.state.admit()
        ui = self.state.settings.user_interface
        approve = getattr(ui, "approve", None)
        answers = []
        for call in request.calls:
            known = self._known(call)
            if known is None:  # nobody can approve: an unapproved tool never runs
                known = self.state.decided(call, Approval(False) if approve is None else
                                           Approval.of(approve(self.state.session, call)))
            answers.append(known)
        return answers

    async def aapprove(self, request: Approve) -> list[Approval]:
        ui = self.state.settings.user_interface
        aapprove = getattr(ui, "aapprove", None)
        if aapprove is None:
            return self.approve(request)
        self.state.admit()
        answers = []
        for call in request.calls:
            known = self._known(call)
            if known is None:
                known = self.state.decided(
                    call, Approval.of(await aapprove(self.state.session, call)))
            answers.append(known)
        return answers

    def _known(self, call: ToolCall) -> Approval | None:
        """A decision made before (a resumed run never asks for it again); else it is asked
        for (``ApprovalRequested``) and ``None`` returned."""
        known = self.state.session.approvals.get(call.id)
        if known is None:
            self.state.emit(ApprovalRequested(call))
        return known


def steered_from_session(answerer: Any) -> bool:
    """Whether ``answerer`` answers a ``TakeSteered`` as ``LiveAnswerer`` does, from
    ``Session.queued`` (no answerer in front of it answers it otherwise, nor answers every
    request its own way): the pump then answers it itself while nothing is queued
    (``convo._run.driver``), without a trip through the stack at every safe point."""
    if answerer.__class__ is LiveAnswerer:  # (a run with no layer in front: the common case)
        return True
    while isinstance(answerer, Answerer):
        cls = type(answerer)
        if cls.answer is not Answerer.answer or cls.aanswer is not Answerer.aanswer:
            return False
        if isinstance(answerer, Forwarding) and cls.take_steered is Forwarding.take_steered \
                and cls.atake_steered is Forwarding.atake_steered:
            answerer = answerer.inner
            continue
        return cls.take_steered is LiveAnswerer.take_steered \
            and cls.atake_steered is LiveAnswerer.atake_steered
    return False


def merged(verdicts: Sequence[str | None], ran: Sequence[ToolRun]) -> list[ToolRun]:
    """One result per call, in call order: what ran, and the calls a limit stopped."""
    results = iter(ran)
    return [next(results) if why is None else ToolRun(skipped=why) for why in verdicts]


def _taken(queued: list[Message]) -> tuple[Message, ...]:
    """Every message ``Runner.steer`` queued, taken in order (another thread may append
    meanwhile: each ``pop`` is atomic)."""
    taken: list[Message] = []
    while queued:
        taken.append(queued.pop(0))
    return tuple(taken)


def _holding(partial: list[str], held: list[str], reasoning: list[str]) -> Deltas:
    """What a reply whose output guards hold streams to: kept, said once they pass."""
    def holding(text: str) -> None:
        partial.append(text)
        held.append(text)

    return Deltas(holding, reasoning.append)


def _saying(partial: list[str], reasoning: list[str], emit: Callable[[Event], None]) -> Deltas:
    """What a reply streams to while it is listened to: kept, and said as it comes."""
    def delta(text: str) -> None:
        partial.append(text)
        emit(TextDelta(text))

    def thought(text: str) -> None:
        reasoning.append(text)
        emit(ReasoningDelta(text))

    return Deltas(delta, thought)
