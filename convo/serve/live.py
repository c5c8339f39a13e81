"""A served conversation paused in a worker, and how a conversation is shown as JSON."""

from __future__ import annotations

from typing import Any

import attrs

from ..events import Event, ReasoningDelta, TextDelta
from ..messages import Message
from ..record.recorder import Record, Recorder
from ..requests import Approve, AskUser, CallModel, HandOff, Request, RunTools
from ..run.answerer import Pause
from ..runner import Run
from ..session import Session, SubroutineRun
from .events import ReasoningDelta as Reasoning
from .events import Sink
from .events import TextDelta as Text
from .store import Change, Stored


@attrs.define(slots=True, eq=False)
class Live:
    """A conversation paused in this worker, and its records not yet in the store.

    What the run does is recorded by the one recorder (``convo.record``): ``change()`` turns
    the records made since the last write into the store's ``Change``; the subroutine the run
    is inside, as it stands, goes with it (a rebuild replays it and goes on inside it)."""

    id: str
    run: Run
    served: Any  # convo.serve.engine.Served: what pauses the run
    replaying: bool = attrs.field(default=False, kw_only=True)  # a rebuild, until it catches up
    pending: Request[Any] | None = None
    error: str | None = None
    committed: int = 0
    sink: Sink | None = None  # where the running turn's served events go, if it streams
    records: list[Record] = attrs.field(factory=list)
    recorder: Recorder = attrs.field(init=False)
    ended: int = 0  # how many of session.subroutines are stored
    open_stored: tuple[int, int] | None = None  # the child inside: its index, messages stored
    children: int = 0  # how many messages the stored subroutine records hold
    running: bool = False  # a turn started that the store does not say runs yet

    def __attrs_post_init__(self) -> None:
        self.recorder = Recorder(self.session, self.records.append, replaying=self.replaying)

    def on_event(self, event: Event) -> None:
        self.recorder(event)
        sink = self.sink
        if sink is not None:
            if isinstance(event, TextDelta):
                sink(Text(event.text))
            elif isinstance(event, ReasoningDelta):
                sink(Reasoning(event.text))

    @property
    def session(self) -> Session:
        return self.run.session

    def paused(self, pause: Pause | None) -> None:
        """Where the run now waits (``None``: it ended), and why, for a retry."""
        self.pending = None if pause is None else pause.request
        if pause is not None and pause.error is not None:
            self.error = pause.error

    def change(self, *, final: bool = False) -> tuple[Change, list[tuple[int, Message]]]:
        """What to write now (the records made since the last write; with ``final``, where
        the conversation now waits), and the new messages in it."""
        records = list(self.records)
        self.records.clear()
        fresh: list[tuple[int, Message]] = []
        state = approvals = internal = None
        for record in records:
            kind = record["type"]
            if kind == "message":
                index = record["index"]  # the message itself: no JSON round trip per message
                fresh.append((index, self.session.messages[index]))
            elif kind == "state":
                state = self.session.state
            elif kind == "internal":
                internal = self.session.internal
            elif kind == "approval":
                approvals = {k: a.to_dict() for k, a in self.session.approvals.items()}
        outcome = self.session.outcome
        return Change(
            messages=tuple(fresh), subroutines=tuple(self.unstored()), state=state,
            internal=internal, approvals=approvals, status=self.status if final else None,
            waiting_for=self.waiting_for() if final else None,
            outcome=outcome.to_dict() if final and outcome is not None else None), fresh

    def unstored(self) -> list[tuple[int, SubroutineRun]]:
        """The subroutine records to store: the children that ended since the last write, and
        the child the conversation is inside, when it grew."""
        done = self.session.subroutines
        records = [(i, done[i]) for i in range(self.ended, len(done))]
        run = self.recorder.open_subroutine()
        if run is not None and (len(done), len(run.messages)) != self.open_stored:
            records.append((len(done), run))
        return records

    def stored(self) -> None:
        """The subroutine records as they stand now are in the store."""
        done = self.session.subroutines
        run = self.recorder.open_subroutine()
        self.ended = len(done)
        self.open_stored = None if run is None else (len(done), len(run.messages))
        self.children = sum(len(r.messages) for r in done) + (
            0 if run is None else len(run.messages))

    def waiting_for(self) -> dict[str, Any] | None:
        request = self.pending
        if isinstance(request, AskUser):
            return {"type": "user", "prompt": request.instruction}
        if isinstance(request, Approve):  # "operator" when staff must decide some call
            return {"type": "approval",
                    "approver": "operator" if request.needs_operator else "user",
                    "calls": [{"id": c.id, "name": c.name, "arguments": c.arguments,
                               "approver": request.approver(i)}
                              for i, c in enumerate(request.calls)]}
        if isinstance(request, HandOff):
            return {"type": "operator", "reason": request.reason}
        if isinstance(request, CallModel | RunTools):
            return {"type": "retry", "error": self.error or "the turn did not finish"}
        return None

    @property
    def status(self) -> str:
        return "ended" if self.pending is None else "waiting"

    def view(self, added_from: int | None = None) -> dict[str, Any]:
        outcome = self.session.outcome
        messages = [m.to_dict() for m in self.session.messages]
        body: dict[str, Any] = {
            "id": self.id, "status": self.status, "messages": messages,
            "state": self.session.state,
            "outcome": outcome.to_dict() if outcome is not None else None,
            "waiting_for": self.waiting_for()}
        if added_from is not None:
            body["added"] = messages[added_from:]
        return body


def stored_view(stored: Stored) -> dict[str, Any]:
    return {"id": stored.id, "status": stored.status,
            "messages": [m.to_dict() for m in stored.messages], "state": stored.state,
            "outcome": stored.outcome, "waiting_for": stored.waiting_for}
