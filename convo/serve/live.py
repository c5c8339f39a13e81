"""A served conversation paused in a worker, and how a conversation is shown as JSON."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from ..events import (
    CaughtUp,
    Event,
    MessageAdded,
    SubroutineEnded,
    SubroutineStarted,
    TextDelta,
)
from ..messages import Message
from ..requests import Approve, AskUser, CallModel, Request, RunTools
from ..run.answerer import Pause
from ..runner import Run
from ..session import Session, SubroutineRun
from .store import Stored

Emit = Callable[[str, Any], None]


class HTTPProblem(Exception):
    """An error answered as JSON ``{"error": ...}`` with an HTTP status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@attrs.define(slots=True, eq=False)
class Live:
    """A conversation paused in this worker."""

    id: str
    run: Run
    served: Any  # convo.serve.engine.Served: what pauses the run
    pending: Request[Any] | None = None
    error: str | None = None
    committed: int = 0
    state: str = "{}"
    approvals: int = 0
    replaying: bool = False
    fresh: list[tuple[int, Message]] = attrs.field(factory=list)
    emit: Emit | None = None
    # The subroutines running now, outermost first (replayed ones too): the outermost is the
    # one whose record the store keeps while the conversation is inside it.
    inside: list[SubroutineStarted] = attrs.field(factory=list)
    ended: int = 0  # how many of session.subroutines are stored
    open_stored: tuple[int, int] | None = None  # the child inside: its index, messages stored
    children: int = 0  # how many messages the stored subroutine records hold

    def on_event(self, event: Event) -> None:
        if isinstance(event, SubroutineStarted):
            self.inside.append(event)
        elif isinstance(event, SubroutineEnded) and self.inside:
            self.inside.pop()
        if self.replaying:  # what a rebuild replays is stored already
            if isinstance(event, CaughtUp):
                self.replaying = False
        elif isinstance(event, MessageAdded):
            if not event.scope:  # a subroutine's messages are stored with its record
                self.fresh.append((event.index, event.message))
        elif isinstance(event, TextDelta) and self.emit is not None:
            self.emit("delta", {"text": event.text})

    @property
    def session(self) -> Session:
        return self.run.session

    def paused(self, pause: Pause | None) -> None:
        """Where the run now waits (``None``: it ended), and why, for a retry."""
        self.pending = None if pause is None else pause.request
        if pause is not None and pause.error is not None:
            self.error = pause.error

    def _open(self) -> SubroutineRun | None:
        if not self.inside or self.session.outcome is not None:
            return None  # a run that ended inside a child put its record on session.subroutines
        return self.inside[0].record()

    def unstored(self) -> list[tuple[int, SubroutineRun]]:
        """The subroutine records to store: the children that ended since the last write, and
        the child the conversation is inside, when it grew."""
        done = self.session.subroutines
        records = [(i, done[i]) for i in range(self.ended, len(done))]
        run = self._open()
        if run is not None and (len(done), len(run.messages)) != self.open_stored:
            records.append((len(done), run))
        return records

    def stored(self) -> None:
        """The subroutine records as they stand now are in the store."""
        done = self.session.subroutines
        run = self._open()
        self.ended = len(done)
        self.open_stored = None if run is None else (len(done), len(run.messages))
        self.children = sum(len(r.messages) for r in done) + (
            0 if run is None else len(run.messages))

    def waiting_for(self) -> dict[str, Any] | None:
        request = self.pending
        if isinstance(request, AskUser):
            return {"type": "user", "prompt": request.instruction}
        if isinstance(request, Approve):
            return {"type": "approval", "calls": [
                {"id": c.id, "name": c.name, "arguments": c.arguments} for c in request.calls]}
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
