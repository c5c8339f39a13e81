"""RunState: what one run knows (the session, counts, usage, the last turn, its clock) and how it
ended.

Every way of answering a request counts into the same ``RunState``: the live answerer when it
calls a model or runs tools, the replay when it answers from a saved conversation. Limits are
checked here, before a live call is made; the outcome is decided here, once, from how the
template's generator ended.

(Just over 300 lines: the counters, the limits and the outcome of a run are one object's.)
"""

from __future__ import annotations

import copy
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from .._approval import Approval
from .._errors import ReachedEndTemplateException
from .._internal import STATE_UNDO, state_undo
from .._messages import Message, ToolCall
from .._session import NO_USAGE, Outcome, RunStatus, Session, TurnResult, Usage
from ..events import (
    ApprovalDecided,
    Event,
    MessageAdded,
    ModelCallEnded,
    ReplyTruncated,
    RunEnded,
    ToolCallsRecovered,
    TurnEnded,
)
from ..guards._base import GuardEnded
from ..guards._plan import NO_PLAN, planned
from ..tools._toolset import Unlisted

if TYPE_CHECKING:
    from .._context import ContextWindow
    from .._interfaces.base import UserInterface
    from .._limits import Limits
    from ..models._base import Model
    from ..tools._calls import Invocation


class Settings(Protocol):
    """What a run needs to know of its runner (``convo._runner.Runner`` is one)."""

    model: Model | None
    user_interface: UserInterface | None
    on_event: Callable[[Event], None] | None
    max_messages: int
    raise_errors: bool
    truncated_is_error: bool
    limits: Limits | None
    context: ContextWindow | None
    guards: tuple[Any, ...]  # the run's guards (``convo.guards``), checked


Handler = Callable[[Event], None]
# Sets ``Session._guards_on`` (not a field users set): the slot's own setter, without attrs'
# ``__setattr__`` hooks or ``object.__setattr__``'s look-up (once per run).
_set_guards_on: Callable[[Session, frozenset[str]], None] = \
    Session.__dict__["_guards_on"].__set__
_WATCHERS: list[Callable[[RunState], Handler | None]] = []


def watch_runs(watcher: Callable[[RunState], Handler | None]) -> Callable[[], None]:
    """Every run started from now on gets ``watcher(state)``'s handler (if not ``None``) as a
    listener of its events, besides the runner's ``on_event`` (``convo.otel`` makes its spans
    so, for every front end). A handler whose ``hears_messages`` is ``False`` is not sent
    ``MessageAdded`` (nor is the event made for it alone: one per message of every run).
    Returns the function that stops it."""
    _WATCHERS.append(watcher)
    return lambda: _WATCHERS.remove(watcher) if watcher in _WATCHERS else None


def _joined(handlers: tuple[Handler, ...]) -> Handler | None:
    if len(handlers) <= 1:
        return handlers[0] if handlers else None

    def every(event: Event) -> None:
        for handler in handlers:
            handler(event)

    return every


class MaxMessages(Exception):
    """The runner's ``max_messages`` bound was reached (ends the run ``max_messages``)."""


class UsageLimitReached(Exception):
    """A ``Limits`` field was reached (ends the run ``usage_limit``)."""

    def __init__(self, limit: str) -> None:
        super().__init__(f"the {limit} limit was reached")
        self.limit = limit


class RunState:
    """The state of one run: counters, the clock, the limits reached, the outcome."""

    __slots__ = ("added", "clock", "guarded", "held", "held_messages", "held_text",
                 "limit_reached", "listeners", "model_calls", "on_event", "on_message", "partial",
                 "plan", "quiet", "reasoning", "session", "settings", "started", "tool_calls",
                 "turn", "unsaid", "usage", "was")

    def __init__(self, settings: Settings, session: Session, *,
                 clock: Callable[[], float] | None = None) -> None:
        self.settings = settings
        self.session = session
        # The run's one clock (seconds): what the pump and its answerers time with. Another is
        # given where the process's may not be read (a durable-execution engine's sandbox).
        self.clock: Callable[[], float] = time.perf_counter if clock is None else clock
        self.listeners: tuple[Handler, ...] = ()
        if _WATCHERS:
            self.listeners = tuple(h for w in tuple(_WATCHERS) if (h := w(self)) is not None)
        self.quiet = False  # a quiet replay holds the events back (``hold``)
        self.held: Handler | None = None
        self.held_messages: Handler | None = None
        self.on_event: Handler | None = settings.on_event  # no watchers: the common case
        self.on_message: Handler | None = settings.on_event  # those that hear MessageAdded
        if self.listeners:
            self.listen(settings.on_event)
        self.added = 0
        self.model_calls = 0
        self.tool_calls = 0
        self.usage: Usage = NO_USAGE
        self.turn: TurnResult | None = None
        self.limit_reached: str | None = None
        self.started = self.clock()
        # How the run applies its guards (``convo.guards._plan``: worked out once per list;
        # none: ``NO_PLAN``, the common case, nothing to work out).
        guards = settings.guards
        self.plan = plan = NO_PLAN if not guards else planned(guards)
        # What the session's templates need to ask (no attrs hook: not a field users set).
        _set_guards_on(session, plan.kinds)
        # The text streamed so far by the current model call, and what of it is held back
        # until the reply's output guards pass (``convo._run.guarding``).
        self.partial: list[str] = []
        self.held_text: list[str] | None = None
        # Its reasoning streamed so far: held with the text while ``held_text`` is, else
        # shown as it came (a guard that trips on it withholds or retracts it).
        self.reasoning: list[str] = []
        # The events of a reply the guards check, said once it is stored as they left it
        # (``add``): no event carries what a guard took out.
        self.unsaid: list[Event] | None = None
        # Whether a message a guard blocked may be in the session (kept from the model then).
        self.guarded = False
        # The state as it was when the last message was added (``follow``); ``None`` until the
        # run follows its changes (a replay rebuilds what its saved records already say).
        self.was: dict[str, Any] | None = None

    def listen(self, handler: Handler | None) -> None:
        """Hand the run's events to ``handler`` (instead of the runner's ``on_event``; a
        served conversation records them), and to the watchers' listeners still."""
        handlers = ((handler,) if handler is not None else ()) + self.listeners
        joined = _joined(handlers)
        messages = joined if not self.listeners else _joined(
            tuple(h for h in handlers if getattr(h, "hears_messages", True)))
        if self.quiet:
            self.held, self.held_messages = joined, messages
        else:
            self.on_event, self.on_message = joined, messages

    def emit(self, event: Event) -> None:
        if self.on_event is not None:
            self.on_event(event)

    def hold(self) -> None:
        """Until ``release``, the listeners hear only what is ``told`` them: no events are made
        or passed on (a quiet replay, whose listeners record nothing of what it rebuilds)."""
        if not self.quiet:
            self.quiet = True
            self.held, self.on_event = self.on_event, None
            self.held_messages, self.on_message = self.on_message, None

    def release(self) -> None:
        """The listeners hear every event again (the replay went live, or the run ends)."""
        if self.quiet:
            self.quiet = False
            self.on_event, self.held = self.held, None
            self.on_message, self.held_messages = self.held_messages, None

    def told(self, event: Event) -> None:
        """Pass ``event`` on even while the events are held (the frame of a quiet replay)."""
        handler = self.held if self.quiet else self.on_event
        if handler is not None:
            handler(event)

    # -- what the template yields ------------------------------------------------------------

    def add(self, message: Message, session: Session | None = None,
            scope: tuple[str, ...] = ()) -> None:
        """Append a message to the session (or a subroutine's ``session``, under ``scope``)."""
        # Runs for every message (thousands when a long conversation is rebuilt).
        if session is None:
            if self.added >= self.settings.max_messages:
                raise MaxMessages
            self.added += 1
            session = self.session
            was = self.was
            # (no call while nothing changed: the state, its record; most messages change none)
            if was is not None and (STATE_UNDO in session.internal
                                    or not session.state == was):
                message = self.noted(message)
        messages = session.messages
        if self.on_event is None:  # nobody listens: nothing to say, nor held back to be said
            messages.append(message)  # (the guards' ``unsaid`` is kept only for a listener)
            return
        if self.unsaid is not None:
            self.say_reply(message)
        messages.append(message)
        if self.on_message is not None:
            self.on_message(MessageAdded(message, len(messages) - 1, scope))

    def say_reply(self, message: Message | None = None) -> None:
        """Say the events of the reply the guards checked (``unsaid``), now that ``message``
        is what is stored of it (``None``: nothing was, they are said as they were)."""
        unsaid, self.unsaid = self.unsaid, None
        if unsaid is None or self.on_event is None:
            return
        for event in unsaid:
            self.on_event(as_stored(event, message) if message is not None
                          and message.role == "assistant" else event)

    # -- what changed the state (``convo._internal.STATE_UNDO``) --------------------------------

    def follow(self, was: dict[str, Any]) -> None:
        """From now on, record each change of the session's state: ``was`` is the state as it
        was when its last message was added (the changes since are recorded as still to
        come on the next message)."""
        self.was = was
        if STATE_UNDO in self.session.internal or not self.session.state == was:
            self.mark()

    def noted(self, message: Message) -> Message:
        """``message`` with what undoes the state's changes since the last message, if any."""
        state, was = self.session.state, self.was
        self.session.internal.pop(STATE_UNDO, None)
        if was is None or state == was:
            return message
        undo = state_undo(was, state)
        self.was = copy.deepcopy(state)
        if undo is None:
            return message
        return attrs.evolve(message, metadata={**message.metadata, STATE_UNDO: undo})

    def mark(self) -> None:
        """Keep what undoes the changes since the last message in ``session.internal`` (where
        they are stored before a message carries them), or none when there are none. (It has
        nothing to do unless the state changed or a record is kept: the pump, which runs for
        every step, asks that inline before it calls.)"""
        was, session = self.was, self.session
        if was is None:
            return
        undo = None if session.state == was else state_undo(was, session.state)
        if undo is not None:
            session.internal[STATE_UNDO] = undo
        elif STATE_UNDO in session.internal:
            del session.internal[STATE_UNDO]

    def event(self, event: Event) -> None:
        """Pass an event on (``TurnEnded`` also lands on ``session.turns``)."""
        if isinstance(event, TurnEnded):
            self.session.turns.append(event.result)
            self.turn = event.result
        if self.on_event is not None:
            self.on_event(event)

    # -- counting and limits -----------------------------------------------------------------

    def counted(self, model_calls: int = 0, tool_calls: int = 0, usage: Usage = NO_USAGE
                ) -> None:
        """Count calls made before (a replayed answer, a saved summary): a resumed
        conversation's counts and limits cover the whole conversation (a budget spent
        before a rebuild stays spent, as it would in the run that spent it)."""
        self.model_calls += model_calls
        self.tool_calls += tool_calls
        if usage is not NO_USAGE:
            self.usage = self.usage + usage
            limits = self.settings.limits
            if limits is not None and self.limit_reached is None:
                self.limit_reached = limits.tokens_over(self.usage)

    def used(self, usage: Usage, *, reported: bool) -> None:
        """A live reply's usage: counted, and (when the model reported it) the token limits
        checked."""
        self.usage = self.usage + usage
        limits = self.settings.limits
        if reported and limits is not None and self.limit_reached is None:
            self.limit_reached = limits.tokens_over(self.usage)

    def admit(self) -> None:
        """Before a live request other than tools: raises ``UsageLimitReached`` when a limit
        was reached (the run ends there, cleanly)."""
        if self.limit_reached is not None:
            raise UsageLimitReached(self.limit_reached)

    def admit_model_call(self) -> None:
        """Before a live model call: raises ``UsageLimitReached`` when the run must end."""
        if self.limit_reached is not None:  # ``admit``, without a call per model call
            raise UsageLimitReached(self.limit_reached)
        limits = self.settings.limits
        if limits is not None and limits.model_calls is not None \
                and self.model_calls >= limits.model_calls:
            raise UsageLimitReached("model_calls")

    def admit_tools(self, invocations: Sequence[Invocation]) -> list[str | None]:
        """Before a live batch: for each call, ``None`` (it may run, and is counted) or why it
        may not (a limit was reached)."""
        # convo's own termination tools never count and are never blocked: a budget must not
        # keep a conversation from ending cleanly.
        limits = self.settings.limits
        room = None if limits is None or limits.tool_calls is None else \
            limits.tool_calls - self.tool_calls
        verdicts: list[str | None] = []
        for invocation in invocations:
            if isinstance(invocation.tool, Unlisted):  # nothing to run: the unknown-tool error
                verdicts.append(invocation.tool.why)
            elif invocation.tool.free_of_limits:
                verdicts.append(None)
            elif self.limit_reached is not None:
                verdicts.append(f"the {self.limit_reached} limit was reached")
            elif room is not None and room <= 0:
                self.limit_reached = "tool_calls"
                verdicts.append("the tool_calls limit was reached")
            else:
                room = None if room is None else room - 1
                self.tool_calls += 1
                verdicts.append(None)
        return verdicts

    def decided(self, call: ToolCall, approval: Approval) -> Approval:
        """Record a decision on a call that needed approval (a resumed or rebuilt run never
        asks for it again)."""
        self.session.approvals[call.id] = approval
        self.emit(ApprovalDecided(call, approval))
        return approval

    # -- the end -----------------------------------------------------------------------------

    def finish(self, exc: BaseException | None) -> Outcome:
        """Decide the outcome from how the generator ended, and record it."""
        self.release()  # a run that ended while a quiet replay held its events
        if self.unsaid is not None:  # a reply the guards checked was never stored
            self.say_reply()
        farewell = error = limit = None
        if exc is None:
            status = self.turn.status if self.turn is not None else RunStatus.COMPLETED
            if self.limit_reached is not None:
                status, limit = RunStatus.USAGE_LIMIT, self.limit_reached
        elif isinstance(exc, ReachedEndTemplateException):
            status, farewell = RunStatus.ENDED, exc.farewell_message
        elif isinstance(exc, GuardEnded):
            status = RunStatus.GUARDED
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
            usage=self.usage, elapsed_s=self.clock() - self.started, limit=limit,
        )
        self.session.outcome = outcome
        was = self.was
        if was is not None and (STATE_UNDO in self.session.internal
                                or not self.session.state == was):
            self.mark()
        if self.on_event is not None:
            try:
                self.on_event(RunEnded(outcome))
            except Exception as failure:  # a handler failing at the end (a full disk)
                outcome = self.session.outcome = handler_failed(outcome, failure)
                if self.settings.raise_errors:
                    raise
        return outcome

    def reraise(self, exc: BaseException | None) -> bool:
        """Whether the exception that ended the run should propagate to the caller."""
        if exc is None or isinstance(exc, ReachedEndTemplateException | EOFError | MaxMessages
                                     | UsageLimitReached | KeyboardInterrupt | GuardEnded):
            return False
        if not isinstance(exc, Exception):  # cancellation, SystemExit: always propagate
            return True
        return self.settings.raise_errors


def as_stored(event: Event, message: Message) -> Event:
    """A reply's event, carrying ``message``: the reply as stored (what its guards left)."""
    if isinstance(event, ModelCallEnded | ReplyTruncated):
        return attrs.evolve(event, message=message)
    if isinstance(event, ToolCallsRecovered):
        return attrs.evolve(event, calls=message.tool_calls)
    return event


def handler_failed(outcome: Outcome, failure: Exception) -> Outcome:
    """The outcome of a run whose event handler failed on its ``RunEnded``: an error, said."""
    said = f"the event handler failed at the end of the run: {type(failure).__name__}: {failure}"
    if outcome.status == RunStatus.ERROR:
        return attrs.evolve(outcome, error=f"{outcome.error}; then {said}")
    return attrs.evolve(outcome, status=RunStatus.ERROR, error=said)


def cancelled(exc: BaseException) -> bool:
    # Only a loaded asyncio can have raised its CancelledError.
    asyncio = sys.modules.get("asyncio")
    return asyncio is not None and isinstance(exc, asyncio.CancelledError)
