"""Where served conversations live: one small async interface, three implementations.

A conversation is a row (its state, status, what it waits for, its outcome, the approvals),
its messages, stored append-only (a turn writes only what it added, so its cost does not
grow with the conversation), and its subroutine records (``Session.subroutines``), one per
``SubroutineTemplate`` run, each written when the child ends; a child the conversation waits
inside is written as it stands at each step of the turn, and replaced when it grows.
``turn(id)`` takes the conversation's turn lock — one turn at a time per conversation across
every worker — and gives ``False`` when another turn holds it. The lock is a lease of ``lease``
seconds: the engine renews it (``renew``) every third of that while the turn runs, so a worker
never takes over a turn that still runs elsewhere, and any worker takes over a lease that
lapsed (its worker died); a lease whose release failed (the store was down) is let go by its
worker as soon as the store answers again (``releases.py``). ``renew`` also says whether
another worker asked the turn to stop (``request_cancel``); ``running`` says whether a live
lease holds the conversation.
A write to a conversation that is no longer there (deleted) is dropped.
Schema versions: ``SCHEMA_VERSION`` is written on first start and raised on a later start, so
a later convo can migrate. Version 2 added the subroutine records (a table of their own,
created on start if missing: a version-1 database just gains it). Version 3 keeps idempotency
records by reference (``keys.py``: the range of messages an answer added, not a copy of the
conversation); the records of earlier versions are still read as they are. Version 4 keeps
convo's own records (``Session.internal``: context summaries, the state machine's position) in
a column of their own, apart from the client-writable ``state``: a row of an earlier version
(the column ``NULL``) has them moved out of its state on start, and when read (``split``;
the row is then written back as moved).
each distinct attachment once, by its SHA-256 (``attachments.py``: two tables, created on
start if missing; messages of earlier versions, with their data inline, read as they are).
Version 4 also adds the lease's columns (``lock_until``; ``cancel_requested``), added on start
when missing.
``forget(id, key)`` drops a key's record while its request has no answer (it was refused).
Version 5 (people, API.md §19) gives each row its ``owner`` (the user who created it; rows of
earlier versions belong to ``"default"``), its ``title`` (the first user message's first 80
characters, ``NULL`` until there is one) and ``updated_at`` (the time of the last message
added; rows of earlier versions take their creation time), columns added on start when
missing, with the indexes ``(owner, updated_at, id)`` and ``(updated_at, id)``, so a list
(``conversations``, ``listing.py``) never loads messages; and a ``feedback`` table
(``feedback.py``), created on start if missing. ``clock`` gives the stores' time (tests set it).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any, Final, Protocol

import attrs

from ..internal import checked, from_legacy_state
from ..messages import Message
from ..session import SubroutineRun
from .feedback import Feedback, Rating
from .listing import Query, Summary, newest, now_us, title_of

SCHEMA_VERSION: Final = 5
DEFAULT_OWNER: Final = "default"  # the owner of rows of schema 4 and before
LEASE_S: Final = 30.0  # a turn lock's lease, in seconds (``--lease``)
HELD, CANCEL, LOST = "held", "cancel", "lost"  # what ``renew`` finds


class StoreError(Exception):
    """The store cannot be reached or refused a write (the server answers 503)."""


@attrs.define(slots=True)
class Stored:
    """A conversation as stored."""

    id: str
    state: dict[str, Any]
    status: str = "waiting"
    internal: dict[str, Any] = attrs.field(factory=dict, kw_only=True)  # Session.internal
    waiting_for: dict[str, Any] | None = None
    outcome: dict[str, Any] | None = None
    approvals: dict[str, Any] = attrs.field(factory=dict)
    messages: list[Message] = attrs.field(factory=list)
    length: int = 0  # how many messages are stored (without loading them)
    subroutines: list[SubroutineRun] = attrs.field(factory=list)
    child_length: int = 0  # how many messages its subroutine records hold, all together
    owner: str = attrs.field(default=DEFAULT_OWNER, kw_only=True)
    title: str | None = attrs.field(default=None, kw_only=True)
    updated: int = attrs.field(default=0, kw_only=True)  # microseconds since the epoch

    def summary(self) -> Summary:
        return Summary(self.id, self.title, self.status, self.waiting_for, self.updated,
                       self.owner)


@attrs.frozen(slots=True)
class Change:
    """What one step of a turn wrote: new messages (with their indexes), subroutine records
    (with theirs: a record at an index already stored replaces it) and the row's fields."""

    messages: tuple[tuple[int, Message], ...] = ()
    subroutines: tuple[tuple[int, SubroutineRun], ...] = ()
    state: dict[str, Any] | None = None
    internal: dict[str, Any] | None = None
    approvals: dict[str, Any] | None = None
    status: str | None = None
    waiting_for: dict[str, Any] | None = None
    outcome: dict[str, Any] | None = None


class Store(Protocol):
    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def ping(self) -> bool: ...

    async def create(self, conversation_id: str, state: Mapping[str, Any], *,
                     owner: str = DEFAULT_OWNER) -> None: ...

    async def load(self, conversation_id: str, *, messages: bool = True) -> Stored | None: ...

    async def write(self, conversation_id: str, change: Change) -> None: ...

    async def delete(self, conversation_id: str) -> bool: ...

    lease: float

    def turn(self, conversation_id: str) -> contextlib.AbstractAsyncContextManager[bool]: ...

    async def renew(self, conversation_id: str, *, extend: bool = True) -> str: ...

    async def request_cancel(self, conversation_id: str) -> bool: ...

    async def running(self, conversation_id: str) -> bool: ...

    async def idempotent(self, conversation_id: str, key: str
                         ) -> tuple[str, dict[str, Any] | None] | None: ...

    async def remember(self, conversation_id: str, key: str, digest: str,
                       response: dict[str, Any] | None) -> bool: ...

    async def forget(self, conversation_id: str, key: str) -> None: ...

    async def conversations(self, query: Query) -> list[Summary]: ...

    async def rate(self, conversation_id: str, index: int, rating: int, comment: str | None,
                   user: str) -> None: ...

    async def feedback(self, since: int | None = None) -> list[Feedback]: ...

    async def ratings(self, conversation_id: str, user: str) -> dict[int, Rating]: ...


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def split(conversation_id: str, state: Any, internal: Any
          ) -> tuple[dict[str, Any], dict[str, Any]]:
    """A row's state and convo's own records, checked (a malformed record is dropped with a
    warning); ``internal`` is ``None`` in a row of schema 3 or before, whose state held them."""
    where = f"stored conversation {conversation_id!r}"
    if internal is None:
        return from_legacy_state(state, where)
    return state, checked(internal, where)


class MemoryStore:
    """Everything in one process's memory (tests, one worker); lost when it stops."""

    def __init__(self, *, lease: float = LEASE_S) -> None:
        self.lease = lease
        self._rows: dict[str, Stored] = {}
        self._running: dict[str, bool] = {}  # a turn's conversation: whether asked to stop
        self._keys: dict[tuple[str, str], tuple[str, dict[str, Any] | None]] = {}
        self._ratings: dict[tuple[str, int], tuple[int, str | None, str, int]] = {}
        self.clock = now_us

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def ping(self) -> bool:
        return True

    async def create(self, conversation_id: str, state: Mapping[str, Any], *,
                     owner: str = DEFAULT_OWNER) -> None:
        self._rows[conversation_id] = Stored(conversation_id, json.loads(dumps(dict(state))),
                                             owner=owner, updated=self.clock())

    async def load(self, conversation_id: str, *, messages: bool = True) -> Stored | None:
        row = self._rows.get(conversation_id)
        if row is None:
            return None
        copy = attrs.evolve(row, messages=list(row.messages) if messages else [],
                            subroutines=list(row.subroutines) if messages else [],
                            state=json.loads(dumps(row.state)),
                            internal=json.loads(dumps(row.internal)))
        copy.length = len(row.messages)
        copy.child_length = sum(len(r.messages) for r in row.subroutines)
        return copy

    async def write(self, conversation_id: str, change: Change) -> None:
        row = self._rows.get(conversation_id)
        if row is None:  # deleted while the turn ran: nothing of it stays
            return
        for index, message in change.messages:
            if index != len(row.messages):
                raise StoreError(f"conversation {conversation_id}: message {index} written "
                                 f"out of order (have {len(row.messages)})")
            row.messages.append(message)
        for index, run in change.subroutines:
            if index > len(row.subroutines):
                raise StoreError(f"conversation {conversation_id}: subroutine record {index} "
                                 f"written out of order (have {len(row.subroutines)})")
            row.subroutines[index:index + 1] = [run]
        if change.messages:
            row.updated = self.clock()
            row.title = row.title if row.title is not None else title_of(change.messages)
        _apply(row, change)

    async def delete(self, conversation_id: str) -> bool:
        for slot in [slot for slot in self._keys if slot[0] == conversation_id]:
            del self._keys[slot]
        for rated in [rated for rated in self._ratings if rated[0] == conversation_id]:
            del self._ratings[rated]
        return self._rows.pop(conversation_id, None) is not None

    @contextlib.asynccontextmanager
    async def turn(self, conversation_id: str) -> AsyncIterator[bool]:
        # One process: a turn's lease lasts while it runs (no worker can die apart from it).
        if conversation_id in self._running:
            yield False
            return
        self._running[conversation_id] = False
        try:
            yield True
        finally:
            self._running.pop(conversation_id, None)

    async def renew(self, conversation_id: str, *, extend: bool = True) -> str:
        asked = self._running.get(conversation_id)
        return LOST if asked is None else CANCEL if asked else HELD

    async def request_cancel(self, conversation_id: str) -> bool:
        if conversation_id not in self._running:
            return False
        self._running[conversation_id] = True
        return True

    async def running(self, conversation_id: str) -> bool:
        return conversation_id in self._running

    async def idempotent(self, conversation_id: str, key: str
                         ) -> tuple[str, dict[str, Any] | None] | None:
        return self._keys.get((conversation_id, key))

    async def remember(self, conversation_id: str, key: str, digest: str,
                       response: dict[str, Any] | None) -> bool:
        slot = (conversation_id, key)
        if response is None and slot in self._keys:
            return False
        self._keys[slot] = (digest, response)
        return True

    async def forget(self, conversation_id: str, key: str) -> None:
        known = self._keys.get((conversation_id, key))
        if known is not None and known[1] is None:
            del self._keys[(conversation_id, key)]


    async def conversations(self, query: Query) -> list[Summary]:
        return newest((row.summary() for row in self._rows.values()), query)

    async def rate(self, conversation_id: str, index: int, rating: int, comment: str | None,
                   user: str) -> None:
        if conversation_id in self._rows:
            self._ratings[(conversation_id, index)] = (rating, comment, user, self.clock())

    async def feedback(self, since: int | None = None) -> list[Feedback]:
        found = [Feedback(c, i, self._rows[c].messages[i].text, rating, comment, user, time)
                 for (c, i), (rating, comment, user, time) in self._ratings.items()
                 if since is None or time >= since]
        return sorted(found, key=lambda f: (f.time, f.conversation, f.message_index))

    async def ratings(self, conversation_id: str, user: str) -> dict[int, Rating]:
        return {i: Rating(rating, comment)
                for (c, i), (rating, comment, by, _) in sorted(self._ratings.items())
                if c == conversation_id and by == user}


def _apply(row: Stored, change: Change) -> None:
    if change.state is not None:
        row.state = json.loads(dumps(change.state))
    if change.internal is not None:
        row.internal = json.loads(dumps(change.internal))
    if change.approvals is not None:
        row.approvals = dict(change.approvals)
    if change.status is not None:
        row.status = change.status
        row.waiting_for = change.waiting_for
        row.outcome = change.outcome
