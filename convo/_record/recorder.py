"""Recorder: a run's events, as records for a sink (see the package docstring).

The records are dicts, the lines of a transcript (``convo._record.transcript`` lists them)::

    {"type": "message", "index": 3, "message": {...}}   a message of the conversation
    {"type": "state", "state": {...}}                  session.state, whenever it changed
    {"type": "state", "state": {...}, "state_undo": {...}}  ... and what undoes its changes
                                                       since the last message (below)
    {"type": "internal", "internal": {...}}            session.internal, whenever it changed
    {"type": "turn", "turn": {...}}                    a TurnResult
    {"type": "subroutine", "subroutine": {...}}        a SubroutineTemplate's child session
                                                       (the subroutines inside it: in it)
    {"type": "approval", "call_id": ..., "approved": ..., "reason": ...}
    {"type": "dropped", "messages": 6}                 messages from 6 on were removed (/undo)
    {"type": "resumed", "messages": 4, "turns": 0, "subroutines": 0, "internal": {...}, ...}
                                                       a replay caught up
    {"type": "outcome", "outcome": {...}}              the run's Outcome

A record-lines sink (``undo_on_state=True``: a transcript, the chat history) keeps what undoes
the state's changes since the last message (``Session.internal["state_undo"]``) on the ``state``
record they belong to, not in ``internal`` records: one line per change, as before; a
``message`` record takes them over (the message carries them). A reader reads them so
(``convo._record.transcript``).

A recorder of a resumed run (``replaying=True``) records nothing of what the replay rebuilds:
from ``CaughtUp`` on (or the run's end) it records what is new, after a ``resumed`` record.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable
from typing import Any

from .._internal import STATE_UNDO
from .._jsonvalues import state_problem
from .._session import Session, SubroutineRun
from ..events import (
    ApprovalDecided,
    CaughtUp,
    Event,
    MessageAdded,
    RunEnded,
    SubroutineEnded,
    SubroutineStarted,
    TurnEnded,
)

Record = dict[str, Any]
Sink = Callable[[Record], None]


def now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def state_text(state: dict[str, Any]) -> str | None:
    """The state as comparable JSON text (``None``: not JSON, so never equal)."""
    if not state:  # most runs' internal, many a run's state: asked at every event
        return "{}"
    try:
        return json.dumps(state, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return None


class Recorder:
    """Turns the events of a run on ``session`` into records for ``sink``.

    ``session.state`` must hold values JSON returns exactly; a change to one that does not is
    refused (a ``TypeError`` naming the value, raised once where it changed), the event's own
    record still made. ``state`` and ``internal``: what the sink already has of
    ``session.state`` and ``session.internal`` (convo's own records; default: the session's).
    """

    def __init__(self, session: Session, sink: Sink, *, replaying: bool = False,
                 state: dict[str, Any] | None = None,
                 internal: dict[str, Any] | None = None, undo_on_state: bool = False,
                 clock: Callable[[], str] = now) -> None:
        self.session = session
        self.sink = sink
        self.clock = clock  # the time a record says (a Temporal workflow's: not the process's)
        self.replaying = replaying
        self.undo_on_state = undo_on_state
        self._state = state_text(session.state if state is None else state)
        self._internal = state_text(self._internals(
            session.internal if internal is None else internal))
        self._refused: str | None = None
        self._next: int | None = None  # the index the next message record should have
        # session.subroutines[:ended] are recorded (or replayed); one after them at the end of
        # the run is a child the run ended inside
        self.ended = len(session.subroutines)
        self.inside: list[SubroutineStarted] = []  # the subroutines running now, outermost first

    def __call__(self, event: Event) -> None:
        nested = False
        if isinstance(event, SubroutineStarted):
            self.inside.append(event)
        elif isinstance(event, SubroutineEnded):
            if self.inside:
                self.inside.pop()
            # A subroutine inside another has no record of its own: the outer one's holds it.
            nested = bool(self.inside)
            self.ended += not nested
        if isinstance(event, CaughtUp):
            if self.replaying:
                self._go_live(event)
            return
        if self.replaying:
            if not isinstance(event, RunEnded):
                return
            self._go_live(None)
        # Any event is a moment to notice that a tool or a condition changed the state.
        try:
            self.record_state()
        finally:  # a refused state never costs the event's own record
            if not nested:
                self._record(event)

    def open_subroutine(self) -> SubroutineRun | None:
        """The record of the child the run is inside now (outermost), as it stands: what a
        paused conversation keeps, so that it is replayed and goes on inside it."""
        if not self.inside or self.session.outcome is not None:
            return None  # a run that ended inside a child put its record on session.subroutines
        run = None  # the innermost's, in the record of the one it runs inside, and so on out
        for started in reversed(self.inside):
            run = started.record(inside=run)
        return run

    def record_state(self) -> None:
        """An ``internal`` record, if convo's own records changed since the last one, and a
        ``state`` record, if the state did."""
        internals = self._internals(self.session.internal)
        internal = state_text(internals)
        if internal is not None and internal != self._internal:  # convo's records: JSON
            self._internal = internal
            self.sink({"type": "internal", "internal": dict(internals)})
        state = state_text(self.session.state)
        if state is not None and state == self._state:
            return
        problem = state_problem(self.session.state)
        if problem is not None:
            if problem != self._refused:  # said once, where it changed
                self._refused = problem
                raise TypeError(problem)
            return
        self._state = state
        undo = self.session.internal.get(STATE_UNDO) if self.undo_on_state else None
        self.sink({"type": "state", "state": self.session.state}
                  | ({STATE_UNDO: undo} if undo is not None else {}))

    def _internals(self, internal: dict[str, Any]) -> dict[str, Any]:
        """The records of ``internal`` that ``internal`` records carry."""
        if self.undo_on_state and STATE_UNDO in internal:
            return {k: v for k, v in internal.items() if k != STATE_UNDO}
        return internal

    def dropped(self, length: int) -> None:
        """Messages from ``length`` on were removed (the chat's /undo, /retry, /clear)."""
        self.sink({"type": "dropped", "messages": length})
        self._next = length

    def _go_live(self, event: CaughtUp | None) -> None:
        self.replaying = False
        # convo's own records as the replay left them: a file an earlier convo wrote (its
        # records in the state) is read from here on as this version writes it
        internal = dict(self._internals(self.session.internal))
        record: Record = {"type": "resumed", "messages": len(self.session.messages),
                          "turns": len(self.session.turns), "subroutines": self.ended,
                          "at": self.clock(), "internal": internal}
        if event is not None:
            record["saved"] = event.saved
        self._internal = state_text(internal)
        self.sink(record)

    def _record(self, event: Event) -> None:
        sink = self.sink
        if isinstance(event, MessageAdded):
            if event.scope:  # a subroutine's: recorded with its child session
                return
            if self._next is not None and event.index < self._next:
                # messages were dropped since (the chat's /undo, /retry, /clear): say so, so
                # that a reader tells this from the records of two runs mixed in one file
                self.dropped(event.index)
            self._next = event.index + 1
            sink({"type": "message", "index": event.index, "message": event.message.to_dict()})
        elif isinstance(event, TurnEnded):
            sink({"type": "turn", "turn": event.result.to_dict()})
        elif isinstance(event, SubroutineEnded):
            sink({"type": "subroutine", "subroutine": event.run.to_dict()})
        elif isinstance(event, ApprovalDecided):
            sink({"type": "approval", "call_id": event.call.id, **event.approval.to_dict()})
        elif isinstance(event, RunEnded):
            # A child the run ended inside (the user quit at its prompt, an error) had no
            # SubroutineEnded: its record is made now, so a resumed run replays it and goes
            # on inside it instead of running it again.
            for run in self.session.subroutines[self.ended:]:
                sink({"type": "subroutine", "subroutine": run.to_dict()})
            self.ended = len(self.session.subroutines)
            sink({"type": "outcome", "outcome": event.outcome.to_dict()})
