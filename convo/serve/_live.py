"""A served conversation paused in a worker, and how a conversation is shown as JSON.

A reply cancelled before it said anything (no text, no tool call: ``said_nothing``) is not
stored, shown or sent to the model later: what was committed stays, nothing empty is added
(a model would see an empty turn in every later call; Anthropic's API refuses an empty text
block). It is a message of the run all the same — the template took it as its reply and went
on — so the turn keeps it in the session until it ends and then drops it, and the store keeps
where it was (``Session.internal["unsaid"]``: the count of stored messages before each such
reply), so that a rebuild puts it back for the replay (``with_unsaid``) and drops it again.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, Final

import attrs

from .._messages import Message, ToolCall, with_id
from .._record.recorder import Record, Recorder
from .._record.recorder import now as recorded_now
from .._reply import Finish
from .._requests import Approve, AskUser, CallModel, HandOff, Request, RunTools, StoreToolRun
from .._run.answerer import Pause
from .._run.cancel import CANCELLED
from .._run.stack import kind
from .._runner import Run
from .._session import Session, SubroutineRun
from ..events import Event, ReasoningDelta, ReplyRetracted, TextDelta
from ..guards._marks import KEY as GUARD
from ..guards._marks import public
from ..tools._frontend import FrontendTool
from ._events import ReasoningDelta as Reasoning
from ._events import Sink
from ._events import TextDelta as Text
from ._stores.base import Change, Queued, Stored

UNSAID: Final = "unsaid"  # Session.internal: where replies that said nothing were dropped

WAITS: Final[dict[type[Request[Any]], str]] = {
    AskUser: "user", Approve: "approval", HandOff: "operator",
    CallModel: "retry", RunTools: "retry", StoreToolRun: "retry"}
"""What a conversation paused at each kind of request (``convo._run.stack.kind``) waits for:
``waiting_for["type"]`` (a failed model call or tool run waits for a retry)."""


def new_message_id() -> str:
    """A stored message's id, when its client gave it none: unique across workers (128
    random bits, as hex: a uuid4's randomness, without building a ``UUID`` for each)."""
    return f"msg_{os.urandom(16).hex()}"


def said_nothing(message: Message) -> bool:
    """Whether ``message`` is a reply cancelled before it said anything."""
    return message.role == "assistant" and not message.content and not message.tool_calls \
        and message.finish is Finish.CANCELLED


def with_unsaid(messages: list[Message], internal: dict[str, Any]
                ) -> tuple[list[Message], list[Message]]:
    """The stored ``messages`` with the replies that said nothing put back where they were
    (for a replay), and those replies (a malformed record puts none back)."""
    where = internal.get(UNSAID)
    if not isinstance(where, list) or not where or not all(
            type(at) is int and 0 <= at <= len(messages) for at in where):
        return messages, []
    unsaid = [Message("assistant", "", metadata={CANCELLED: True}) for _ in where]
    merged: list[Message] = []
    put = 0
    for at, reply in zip(sorted(where), unsaid, strict=True):
        merged += messages[put:at]
        merged.append(reply)
        put = at
    return merged + messages[put:], unsaid

def client_calls(request: Request[Any] | None) -> list[ToolCall]:
    """The calls of frontend tools (``convo.tools._frontend``) a conversation waits on at
    ``request``: their results come from the client that offered them."""
    if not isinstance(request, RunTools):
        return []
    return [i.call for i in request.invocations if isinstance(i.tool, FrontendTool)]


@attrs.define(slots=True, eq=False)
class Live:
    """A conversation paused in this worker, and its records not yet in the store.

    What the run does is recorded by the one recorder (``convo._record``): ``change()`` turns
    the records made since the last write into the store's ``Change``; the subroutine the run
    is inside, as it stands, goes with it (a rebuild replays it and goes on inside it)."""

    id: str
    run: Run
    replaying: bool = attrs.field(default=False, kw_only=True)  # a rebuild, until it catches up
    pending: Request[Any] | None = None
    waits: str | None = None  # what ``pending`` waits for (``WAITS``); ``None``: it ended
    error: str | None = None
    committed: int = 0
    sink: Sink | None = None  # where the running turn's served events go, if it streams
    records: list[Record] = attrs.field(factory=list)
    recorder: Recorder = attrs.field(init=False)
    ended: int = 0  # how many of session.subroutines are stored
    open_stored: tuple[int, int] | None = None  # the child inside: its index, messages stored
    children: int = 0  # how many messages the stored subroutine records hold
    running: bool = False  # a turn started that the store does not say runs yet
    unsaid: list[int] = attrs.field(factory=list)  # replies that said nothing, this turn
    user_id: str | None = None  # the id the client gave the user message the turn adds
    reply_id: str | None = None  # the id of the reply being streamed, chosen at its first delta
    tool_ids: dict[str, str] = attrs.field(factory=dict)  # call id → its result's client id
    offers_changed: bool = False  # the front end's tools changed (Session.internal): to store
    retracted: bool = False  # the streamed reply was taken back: said before its replacement
    #: The conversation's queue as this worker knows it (API.md §26): read when it was
    #: rebuilt or drained, added to when a message is queued here; ``[]``: nothing queued.
    queued: list[Queued] = attrs.field(factory=list)
    dequeuing: set[str] = attrs.field(factory=set)  # queued ids the turn takes: leave the queue
    # Where new message ids come from (a Temporal workflow gives its own deterministic ones).
    new_id: Callable[[], str] = attrs.field(default=new_message_id, kw_only=True)
    #: What time its records say (ISO 8601; a Temporal workflow gives the workflow's).
    clock: Callable[[], str] = attrs.field(default=recorded_now, kw_only=True)

    def __attrs_post_init__(self) -> None:
        self.recorder = Recorder(self.session, self.records.append, replaying=self.replaying,
                                 clock=self.clock)

    def on_event(self, event: Event) -> None:
        self.recorder(event)
        sink = self.sink
        if sink is not None and isinstance(event, TextDelta | ReasoningDelta):
            if self.reply_id is None:  # streamed before it is stored: its id is chosen now
                self.reply_id = self.new_id()
            if isinstance(event, TextDelta):
                sink(Text(event.text, self.reply_id))
            else:
                sink(Reasoning(event.text, self.reply_id))
        elif sink is not None and isinstance(event, ReplyRetracted):  # said at its replacement
            self.retracted = True

    @property
    def session(self) -> Session:
        return self.run.session

    def paused(self, pause: Pause | None) -> None:
        """Where the run now waits (``None``: it ended), and why, for a retry."""
        self.pending = None if pause is None else pause.request
        self.waits = None if pause is None else WAITS.get(kind(pause.request.__class__))
        if self.waits == "retry" and client_calls(self.pending):  # the client runs them
            self.waits = "client_tool"
        if pause is not None and pause.error is not None:
            self.error = pause.error

    def change(self, *, final: bool = False) -> tuple[Change, list[tuple[int, Message]]]:
        """What to write now (the records made since the last write; with ``final``, where
        the conversation now waits), and the new messages in it."""
        session = self.run.session
        records = list(self.records)
        self.records.clear()
        fresh: list[tuple[int, Message]] = []
        state = approvals = internal = None
        if self.offers_changed:
            internal, self.offers_changed = session.internal, False
        for record in records:
            kind = record["type"]
            if kind == "message":
                index = record["index"]  # the message itself: no JSON round trip per message
                message = session.messages[index]
                at = index - sum(1 for u in self.unsaid if u < index) if self.unsaid else index
                if said_nothing(message):  # kept out of the store; where it was, kept in
                    self.unsaid.append(index)
                    internal = session.internal
                    known = internal.get(UNSAID)
                    internal[UNSAID] = [*(known if isinstance(known, list) else ()), at]
                else:
                    if message.id is None:  # stored under a stable id (§24), kept in the
                        message = with_id(message, self._id_for(message))  # (in the session)
                        session.messages[index] = message
                    fresh.append((at, message))
            elif kind == "state":
                state = session.state
            elif kind == "internal":
                internal = session.internal
            elif kind == "approval":
                approvals = {k: a.to_dict() for k, a in session.approvals.items()}
        if final and self.unsaid:  # the turn is over: the session is what the store holds
            for index in sorted(self.unsaid, reverse=True):
                del session.messages[index]
            self.unsaid.clear()
        outcome = session.outcome
        dequeued: tuple[str, ...] = ()
        if self.dequeuing:  # taken from the queue: it leaves it in this write
            dequeued = tuple(m.id for _, m in fresh if m.id in self.dequeuing)
            self.dequeuing.difference_update(dequeued)
        return Change(
            messages=tuple(fresh), subroutines=tuple(self.unstored()), state=state,
            internal=internal, approvals=approvals, status=self.status if final else None,
            waiting_for=self.waiting_for() if final else None,
            outcome=outcome.to_dict() if final and outcome is not None else None,
            dequeued=dequeued), fresh

    def _id_for(self, message: Message) -> str:
        """A new message's stored id: the client's for its user message, the one its stream
        showed for a streamed reply, else a new one."""
        chosen = None
        if message.role == "user":
            chosen, self.user_id = self.user_id, None
        elif message.role == "assistant":
            chosen, self.reply_id = self.reply_id, None
        elif message.role == "tool" and message.tool_call_id is not None:
            chosen = self.tool_ids.pop(message.tool_call_id, None)
        return chosen or self.new_id()

    def unstored(self) -> list[tuple[int, SubroutineRun]]:
        """The subroutine records to store: the children that ended since the last write, and
        the child the conversation is inside, when it grew."""
        done = self.run.session.subroutines
        records = [(i, done[i]) for i in range(self.ended, len(done))]
        run = self.recorder.open_subroutine()
        if run is not None and (len(done), run.size) != self.open_stored:
            records.append((len(done), run))
        return records

    def stored(self) -> None:
        """The subroutine records as they stand now are in the store."""
        done = self.run.session.subroutines
        run = self.recorder.open_subroutine()
        self.ended = len(done)
        self.open_stored = None if run is None else (len(done), run.size)
        self.children = sum(r.size for r in done) + (0 if run is None else run.size)

    def waiting_for(self) -> dict[str, Any] | None:
        request: Any = self.pending  # (of the kind ``waits`` was read from)
        match self.waits:
            case "user":
                return {"type": "user", "prompt": request.instruction}
            case "approval":  # "operator" when staff must decide some call
                return {"type": "approval",
                        "approver": "operator" if request.needs_operator else "user",
                        "calls": [{"id": c.id, "name": c.name, "arguments": c.arguments,
                                   "approver": request.approver(i)}
                                  for i, c in enumerate(request.calls)]}
            case "operator":
                return {"type": "operator", "reason": request.reason}
            case "client_tool":
                return {"type": "client_tool", "calls": [
                    {"id": c.id, "name": c.name, "arguments": c.arguments}
                    for c in client_calls(request)]}
            case "retry":
                return {"type": "retry", "error": self.error or "the turn did not finish"}
        return None

    @property
    def status(self) -> str:
        return "ended" if self.pending is None else "waiting"

    def view(self, added_from: int | None = None, *, originals: bool = False
             ) -> dict[str, Any]:
        """The conversation as a client sees it; with ``originals`` (for operators) as
        stored, the original of each blocked reply or tool result included (API.md §27)."""
        session = self.run.session
        outcome = session.outcome
        # As users see them (``public``; one no guard marked is shown as stored, no call made
        # for it: every answer shows the whole conversation), or as stored, for operators.
        messages = [m.to_dict() for m in session.messages] if originals else [
            public(m) if GUARD in m.metadata else m.to_dict() for m in session.messages]
        body: dict[str, Any] = {
            "id": self.id, "status": self.status, "messages": messages,
            "state": session.state,
            "outcome": outcome.to_dict() if outcome is not None else None,
            "waiting_for": self.waiting_for(), "parent": session.parent,
            "queued": [] if self.pending is None else [q.message.to_dict() for q in self.queued]}
        if added_from is not None:
            body["added"] = messages[added_from:]
        return body


def stored_view(stored: Stored, queued: Sequence[Queued] = (), *, originals: bool = False
                ) -> dict[str, Any]:
    messages = [m.to_dict() for m in stored.messages] if originals else [
        public(m) if GUARD in m.metadata else m.to_dict() for m in stored.messages]
    return {"id": stored.id, "status": stored.status, "messages": messages, "state": stored.state,
            "outcome": stored.outcome, "waiting_for": stored.waiting_for,
            "parent": stored.parent, "queued": [q.message.to_dict() for q in queued]}
