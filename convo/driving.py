"""One run of a conversation: its counters, its limits and how it ended.

``Run`` holds what one run knows (the session, counts, usage, the last turn) and, being an
``Answers`` (answers.py), answers each request type (``convo.requests``) with a pair of
handlers, blocking and async, named by the request's ``handler``. ``Runner`` (runner.py)
drives the template generator and dispatches to them; a served conversation (convo.serve)
uses the same handlers, answering the requests that pause (the user, an approval) itself.
"""

from __future__ import annotations

import sys
import time

import attrs

from .answers import Answers, Settings
from .errors import ReachedEndTemplateException
from .events import Event, MessageAdded, Replayed, RunEnded, TurnEnded
from .messages import Message
from .requests import CallModel, Invocation, Request, RunTools, ToolRun
from .session import NO_USAGE, Outcome, RunStatus, Session, TurnResult, Usage


class MaxMessages(Exception):
    """The runner's ``max_messages`` bound was reached (ends the run ``max_messages``)."""


class UsageLimitReached(Exception):
    """A ``Limits`` field was reached (ends the run ``usage_limit``)."""

    def __init__(self, limit: str) -> None:
        super().__init__(f"the {limit} limit was reached")
        self.limit = limit


class Run(Answers):
    """The state of one run: counters, the clock, and the answers to requests."""

    __slots__ = ("added", "limit_reached", "model_calls", "on_event", "runner", "session",
                 "started", "tool_calls", "turn", "usage")

    def __init__(self, runner: Settings, session: Session) -> None:
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

    def apply(self, step: Message | Event) -> None:
        """Append a message or pass an event on (TurnEnded also lands on session.turns)."""
        # Runs for every message and event (thousands when a long conversation is rebuilt).
        on_event = self.on_event
        if isinstance(step, Message):
            if self.added >= self.runner.max_messages:
                raise MaxMessages
            messages = self.session.messages
            messages.append(step)
            self.added += 1
            if on_event is not None:
                on_event(MessageAdded(step, len(messages) - 1))
            return
        if isinstance(step, Replayed):
            self.model_calls += step.model_calls
            self.tool_calls += step.tool_calls
            self.usage = self.usage + step.usage
        elif isinstance(step, TurnEnded):
            self.session.turns.append(step.result)
            self.turn = step.result
        if on_event is not None:
            on_event(step)

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
            try:
                self.on_event(RunEnded(outcome))
            except Exception as failure:  # a handler failing at the end (a full disk)
                outcome = self.session.outcome = handler_failed(outcome, failure)
                if self.runner.raise_errors:
                    raise
        return outcome

    def reraise(self, exc: BaseException | None) -> bool:
        """Whether the exception that ended the run should propagate to the caller."""
        if exc is None or isinstance(exc, ReachedEndTemplateException | EOFError | MaxMessages
                                     | UsageLimitReached | KeyboardInterrupt):
            return False
        if not isinstance(exc, Exception):  # cancellation, SystemExit: always propagate
            return True
        return self.runner.raise_errors


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

