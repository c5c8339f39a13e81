"""Where served conversations live: the ``Store`` protocol, by capability, and its values.

``Conversations`` and ``Leases`` are what the engine needs; ``Idempotency``, ``Ratings`` and
``Listing`` are optional (a route that needs one answers 501 without it). The three
implementations are ``memory.py``, ``sqlite.py`` and ``postgres.py`` beside this module.

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
records by reference (``http/keys.py``: the range of messages an answer added, not a copy of the
conversation); the records of earlier versions are still read as they are. Version 4 keeps
convo's own records (``Session.internal``: context summaries, the state machine's position) in
a column of their own, apart from the client-writable ``state``: a row of an earlier version
(the column ``NULL``) has them moved out of its state on start, and when read (``split``;
the row is then written back as moved).
each distinct attachment once, by its SHA-256 (``rows.py``: two tables, created on
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
Version 6 (branches, API.md §28) gives each row its ``parent`` (``{"id", "before"}`` of the
conversation it was branched from; ``NULL`` for every other row, rows of earlier versions
included), a column added on start when missing; ``create(..., parent=)`` sets it.
Version 7 (messages while a turn runs, API.md §26) keeps a conversation's queued messages in
a table of their own (``queued``: its order, the message's id, whether it steers, the
message), created on start if missing (``Queues``). A queued message leaves the queue in the
write that adds it to the messages (``Change.dequeued``), and a write that ends the
conversation drops its queue.
``swap(conversation_id, branch_id, kept_as)`` (``Renaming``, optional: the AI SDK's
regenerate, API.md §24) gives a conversation's id to a branch of it in one transaction: the
conversation and all of it (messages, subroutine records, attachments, ratings) move to
``kept_as``, the branch moves to ``conversation_id``. What belongs to the id stays with it: the
turn's lease (the branch goes on under the lease its caller holds; the moved conversation is
free), the idempotency records (the keys a client sent to that id) and the queue (API.md
§26: a queued message belongs to the id the user is on, so the branch answers it).
``created(id, state, owner=)`` (``Creating``, optional) inserts a conversation already leased
to the caller (a client's chosen id, AG-UI's or the AI SDK's: two first runs of one new id
race; exactly one creates and runs, the other finds the lease held).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

import attrs

from ..._internal import checked, from_legacy_state
from ..._messages import Message
from ..._session import SubroutineRun

if TYPE_CHECKING:  # (the values the optional capabilities give; no import at run time)
    from .feedback import Feedback, Rating
    from .listing import Query, Summary

SCHEMA_VERSION: Final = 7
DEFAULT_OWNER: Final = "default"  # the owner of rows of schema 4 and before
LEASE_S: Final = 30.0  # a turn lock's lease, in seconds (``--lease``)
#: The tables of the SQL stores whose rows move with a conversation in ``swap`` (idempotency
#: stays with the id).
MOVED: Final = ("messages", "subroutines", "message_attachments", "feedback")
HELD, CANCEL, LOST = "held", "cancel", "lost"  # what ``renew`` finds


class StoreError(Exception):
    """The store cannot be reached or refused a write (the server answers 503)."""


@attrs.frozen(slots=True)
class Queued:
    """A message sent while a turn ran (API.md §26), waiting in the conversation's queue:
    ``steer``: handed to the running turn at its next safe point, else answered as a turn of
    its own. ``message.id`` is its id in the queue and, once taken, in ``messages``."""

    message: Message
    steer: bool = False


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
    #: ``{"id", "before"}`` of the conversation it was branched from (``Session.parent``).
    parent: dict[str, Any] | None = attrs.field(default=None, kw_only=True)
    #: Its queue (API.md §26), read with its messages and its row in one snapshot
    #: (``load(id)``: a message taken meanwhile is in one of them, and the row says the turn
    #: that took it runs); ``[]`` with the row alone.
    queued: list[Queued] = attrs.field(factory=list, kw_only=True)


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
    #: The ids of queued messages this write adds to ``messages`` (they leave the queue).
    dequeued: tuple[str, ...] = ()


@runtime_checkable
class Conversations(Protocol):
    """Where conversations are kept: every store is one. ``load(id, messages=False)`` reads
    the row alone (``length``, ``child_length`` say how much is stored); ``write`` appends a
    ``Change``; a write to a deleted conversation is dropped."""

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def ping(self) -> bool: ...

    async def create(self, conversation_id: str, state: Mapping[str, Any], *,
                     owner: str = DEFAULT_OWNER, parent: dict[str, Any] | None = None
                     ) -> None: ...

    async def load(self, conversation_id: str, *, messages: bool = True) -> Stored | None: ...

    async def write(self, conversation_id: str, change: Change) -> None: ...

    async def delete(self, conversation_id: str) -> bool: ...


@runtime_checkable
class Leases(Protocol):
    """One turn at a time per conversation, across workers: the turn's lease (module
    docstring). Every store the engine runs turns on has them."""

    lease: float

    def turn(self, conversation_id: str) -> contextlib.AbstractAsyncContextManager[bool]: ...

    async def renew(self, conversation_id: str, *, extend: bool = True) -> str: ...

    async def request_cancel(self, conversation_id: str) -> bool: ...

    async def running(self, conversation_id: str) -> bool: ...


@runtime_checkable
class Idempotency(Protocol):
    """Optional: the records of requests sent with an ``Idempotency-Key`` (``http/keys.py``)."""

    async def idempotent(self, conversation_id: str, key: str
                         ) -> tuple[str, dict[str, Any] | None] | None: ...

    async def remember(self, conversation_id: str, key: str, digest: str,
                       response: dict[str, Any] | None) -> bool: ...

    async def forget(self, conversation_id: str, key: str) -> None: ...


@runtime_checkable
class Queues(Protocol):
    """Optional: messages sent while a turn runs (API.md §26). ``enqueue`` adds one at the end
    unless the queue holds ``limit`` already (``False``); ``queued`` reads them in order;
    ``withdraw`` drops one not yet taken (``False``: no such message queued)."""

    async def enqueue(self, conversation_id: str, queued: Queued, *, limit: int) -> bool: ...

    async def queued(self, conversation_id: str) -> list[Queued]: ...

    async def withdraw(self, conversation_id: str, message_id: str) -> bool: ...


@runtime_checkable
class Ratings(Protocol):
    """Optional: feedback on replies (``feedback.py``)."""

    async def rate(self, conversation_id: str, index: int, rating: int, comment: str | None,
                   user: str) -> None: ...

    async def feedback(self, since: int | None = None) -> list[Feedback]: ...

    async def ratings(self, conversation_id: str, user: str) -> dict[int, Rating]: ...


@runtime_checkable
class Listing(Protocol):
    """Optional: the conversation list, read from the rows alone (``listing.py``)."""

    async def conversations(self, query: Query) -> list[Summary]: ...


@runtime_checkable
class Creating(Protocol):
    """Optional: a conversation created with its turn's lease held (module docstring), so
    that no other request takes its first turn between the two; gives ``False`` (nothing
    created) when the id is taken. Without it the engine creates, then takes the lease."""

    def created(self, conversation_id: str, state: Mapping[str, Any], *,
                owner: str = DEFAULT_OWNER) -> contextlib.AbstractAsyncContextManager[bool]: ...


@runtime_checkable
class Renaming(Protocol):
    """Optional: a conversation's id given to a branch of it (module docstring); ``False``
    when either is not there (nothing moved)."""

    async def swap(self, conversation_id: str, branch_id: str, kept_as: str) -> bool: ...


class TurnStore(Conversations, Leases, Protocol):
    """What the engine needs of a store: its conversations and their turns' leases."""


class Store(TurnStore, Idempotency, Ratings, Listing, Queues, Renaming, Creating, Protocol):
    """Every capability: what convo's own stores (memory, SQLite, Postgres) are. A store of
    your own needs ``Conversations`` and ``Leases``; without one of the others, the routes
    that need it say so (501), and a conversation shows no ratings."""


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
