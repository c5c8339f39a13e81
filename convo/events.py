"""Typed events a runner hands to ``on_event`` as a conversation happens.

Templates yield the events only they can know of (a restriction injected, a turn ended); the
runner emits the rest (messages added, model and tool calls, the run's end).
"""

from __future__ import annotations

from typing import Any

import attrs

from ._approval import Approval
from ._messages import Message, ToolCall
from ._session import NO_USAGE, Outcome, Session, SubroutineRun, TurnResult, Usage


@attrs.frozen(slots=True)
class Event:
    """Base class of every event."""


@attrs.frozen(slots=True)
class MessageAdded(Event):
    """A message was appended: to the conversation (``scope == ()``), or to the session of
    the subroutines named by ``scope`` (outermost first), at ``index`` of that session."""

    message: Message
    index: int
    scope: tuple[str, ...] = ()


@attrs.frozen(slots=True)
class TextDelta(Event):
    """A piece of streamed assistant text, as it arrives."""

    text: str


@attrs.frozen(slots=True)
class ReasoningDelta(Event):
    """A piece of a reasoning model's streamed reasoning summary, as it arrives (not part of
    the reply: the terminal shows it dimmed, ``--hide-reasoning`` hides it)."""

    text: str


@attrs.frozen(slots=True)
class ModelCallStarted(Event):
    call_number: int
    messages: int
    tools: int


@attrs.frozen(slots=True)
class ModelCallEnded(Event):
    call_number: int
    message: Message
    usage: Usage
    elapsed_s: float


@attrs.frozen(slots=True)
class ReplyTruncated(Event):
    """The model stopped at its token limit (``finish_reason: "length"``): ``message`` is cut
    off. Sent before the reply is added; ``Runner(truncated_is_error=True)`` makes it an
    error instead."""

    call_number: int
    message: Message


@attrs.frozen(slots=True)
class ToolCallsRecovered(Event):
    """A reply's text was a tool call the server left as text; it was read as ``calls``.
    ``form``: ``"tool_call_tags"``, ``"json"`` or ``"fenced_json"`` (API.md §12)."""

    calls: tuple[ToolCall, ...]
    form: str


@attrs.frozen(slots=True)
class ToolCallStarted(Event):
    call: ToolCall


@attrs.frozen(slots=True)
class ToolCallEnded(Event):
    """A call of a batch has its tool message. ``started_ns`` / ``ended_ns``: when its tool
    ran (``time.time_ns()``; each call its own, even when a batch runs at once); ``0`` when
    no tool ran for it (bad arguments, rejected, a limit, replayed, stopped)."""

    call: ToolCall
    content: str
    is_error: bool
    started_ns: int = attrs.field(default=0, eq=False)
    ended_ns: int = attrs.field(default=0, eq=False)


@attrs.frozen(slots=True)
class RestrictionInjected(Event):
    message: str
    injections: int


@attrs.frozen(slots=True)
class ContextTrimmed(Event):
    """A model call was sent only part of the history (a ``ContextWindow``): ``dropped``
    messages were left out, ``kept`` were sent, and ``summarized`` says whether a summary of
    the left-out part was sent in their place."""

    dropped: int
    kept: int
    summarized: bool


@attrs.frozen(slots=True)
class TurnEnded(Event):
    result: TurnResult


@attrs.frozen(slots=True)
class TaskCompleted(Event):
    finish_status: str
    summary: str | None
    requires_review: bool = True


@attrs.frozen(slots=True)
class RunEnded(Event):
    outcome: Outcome


@attrs.frozen(slots=True)
class UserInput(Event):
    """The user interface answered; ``echoed``: what was typed is already on the screen."""

    echoed: bool = False


@attrs.frozen(slots=True)
class ApprovalRequested(Event):
    """A tool call waits for a person's approval before it may run."""

    call: ToolCall


@attrs.frozen(slots=True)
class ApprovalDecided(Event):
    call: ToolCall
    approval: Approval


@attrs.frozen(slots=True)
class ReplayStarted(Event):
    """A resumed (or rebuilt) run starts replaying ``saved`` saved messages: what follows is
    rebuilt, not done again, until ``CaughtUp``."""

    saved: int


@attrs.frozen(slots=True)
class CaughtUp(Event):
    """A resumed run has replayed the saved messages it could; from here on it is live.

    ``replayed`` saved messages were reused out of ``saved``; when ``replayed < saved`` the
    template took another path and the rest were dropped.
    """

    replayed: int
    saved: int


@attrs.frozen(slots=True)
class Replayed(Event):
    """A resumed run answered a request from the saved conversation: what it counts as, so
    that a resumed conversation's counts (and limits) cover the whole conversation."""

    model_calls: int = 0
    tool_calls: int = 0
    usage: Usage = NO_USAGE


@attrs.frozen(slots=True)
class StateEntered(Event):
    """A ``StateMachineTemplate`` entered state ``name`` (``previous=None`` for the start)."""

    name: str
    previous: str | None


@attrs.frozen(slots=True)
class HooksRan(Event):
    """A template's ``before`` or ``after`` hooks ran (``where`` names them): what they
    changed in the state is recorded from here, as a tool's is after its call."""

    where: str


@attrs.frozen(slots=True)
class SubroutineStarted(Event):
    """A ``SubroutineTemplate`` starts its child (a resumed run replays the child's saved
    run from here).

    ``index``: how many messages the parent has; ``child``: the child's session, which grows
    as the child runs (``record()`` is the child's run as it stands: what a served
    conversation stores while it waits inside the child). ``child`` is left out of
    ``describe``.
    """

    label: str
    index: int = 0
    inherited: int = 0
    child: Session | None = attrs.field(default=None, eq=False, repr=False,
                                        metadata={"describe": False})

    def record(self, *, inside: SubroutineRun | None = None) -> SubroutineRun:
        """The child's run so far, as ``SubroutineEnded`` would give it if it ended now (with
        the records of the subroutines that ended inside it; ``inside``: the record of one
        still running inside it, as it stands)."""
        child = self.child
        if child is None:
            return SubroutineRun(label=self.label, index=self.index, inherited=self.inherited,
                                 messages=())
        return SubroutineRun(label=self.label, index=self.index, inherited=self.inherited,
                             messages=child.messages, subroutines=(
                                 *child.subroutines, *(() if inside is None else (inside,))))


@attrs.frozen(slots=True)
class SubroutineEnded(Event):
    """A ``SubroutineTemplate``'s child session ended; transcripts write it as one line."""

    run: SubroutineRun


@attrs.frozen(slots=True)
class GuardTripped(Event):
    """A guard tripped: its name, where it looks (``on``), what it did (``action``: block, end
    or redact) and why (``reason``; ``"redacted"`` for a redaction). Never the value."""

    guard: str
    on: str
    action: str
    reason: str


@attrs.frozen(slots=True)
class ReplyRetracted(Event):
    """The text streamed of a reply was taken back (an output guard with ``stream="live"``
    tripped): a front end removes what it showed; the replacement is the next message added,
    at ``index`` of the conversation."""

    index: int


def describe(event: Event) -> dict[str, Any]:
    """A JSON-able dict of an event (for logs and transcripts)."""
    d: dict[str, Any] = {"event": type(event).__name__}
    for f in attrs.fields(type(event)):
        if not f.metadata.get("describe", True):
            continue
        value = getattr(event, f.name)
        to_dict = getattr(value, "to_dict", None)
        d[f.name] = to_dict() if to_dict else value
    return d


# The face: every event, and ``describe`` (nothing it imports to write them).
__all__ = sorted(["describe", *(name for name, value in globals().items()
                               if isinstance(value, type) and issubclass(value, Event))])
