"""A served conversation paused in a worker, and how a conversation is shown as JSON."""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import attrs

from ..driving import Run
from ..events import CaughtUp, Event, MessageAdded, TextDelta
from ..messages import Message
from ..requests import Approve, AskUser, CallModel, Request
from ..session import Session
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
    driver: Generator[Request, Any, None]
    pending: Request | None = None
    error: str | None = None
    committed: int = 0
    state: str = "{}"
    approvals: int = 0
    replaying: bool = False
    fresh: list[tuple[int, Message]] = attrs.field(factory=list)
    emit: Emit | None = None

    def on_event(self, event: Event) -> None:
        if self.replaying:  # what a rebuild replays is stored already
            if isinstance(event, CaughtUp):
                self.replaying = False
        elif isinstance(event, MessageAdded):
            self.fresh.append((event.index, event.message))
        elif isinstance(event, TextDelta) and self.emit is not None:
            self.emit("delta", {"text": event.text})

    @property
    def session(self) -> Session:
        return self.run.session

    def waiting_for(self) -> dict[str, Any] | None:
        request = self.pending
        if isinstance(request, AskUser):
            return {"type": "user", "prompt": request.instruction}
        if isinstance(request, Approve):
            return {"type": "approval", "calls": [
                {"id": c.id, "name": c.name, "arguments": c.arguments} for c in request.calls]}
        if isinstance(request, CallModel):
            return {"type": "retry", "error": self.error or "the model call did not finish"}
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
