"""Everything in one process's memory (tests, one worker); lost when it stops."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import attrs

from .base import (
    CANCEL,
    DEFAULT_OWNER,
    HELD,
    LEASE_S,
    LOST,
    Change,
    Queued,
    Stored,
    StoreError,
    dumps,
)
from .feedback import Feedback, Rating
from .listing import Query, Summary, newest, now_us, title_of


class MemoryStore:
    """Everything in one process's memory (tests, one worker); lost when it stops."""

    def __init__(self, *, lease: float = LEASE_S) -> None:
        self.lease = lease
        self._rows: dict[str, Stored] = {}
        self._running: dict[str, bool] = {}  # a turn's conversation: whether asked to stop
        self._keys: dict[tuple[str, str], tuple[str, dict[str, Any] | None]] = {}
        self._ratings: dict[tuple[str, int], tuple[int, str | None, str, int]] = {}
        self._queues: dict[str, list[Queued]] = {}
        self.clock = now_us

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def ping(self) -> bool:
        return True

    async def create(self, conversation_id: str, state: Mapping[str, Any], *,
                     owner: str = DEFAULT_OWNER, parent: dict[str, Any] | None = None
                     ) -> None:
        self._rows[conversation_id] = Stored(conversation_id, json.loads(dumps(dict(state))),
                                             owner=owner, updated=self.clock(),
                                             parent=None if parent is None else dict(parent))

    async def load(self, conversation_id: str, *, messages: bool = True) -> Stored | None:
        row = self._rows.get(conversation_id)
        if row is None:
            return None
        copy = attrs.evolve(row, messages=list(row.messages) if messages else [],
                            subroutines=list(row.subroutines) if messages else [],
                            state=json.loads(dumps(row.state)),
                            internal=json.loads(dumps(row.internal)),
                            queued=list(self._queues.get(conversation_id, ()))
                            if messages else [])
        copy.length = len(row.messages)
        copy.child_length = sum(r.size for r in row.subroutines)
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
        if change.dequeued or change.status == "ended":
            gone = set(change.dequeued)
            kept = [] if change.status == "ended" else [
                q for q in self._queues.get(conversation_id, ()) if q.message.id not in gone]
            self._queues[conversation_id] = kept
        _apply(row, change)

    async def delete(self, conversation_id: str) -> bool:
        for slot in [slot for slot in self._keys if slot[0] == conversation_id]:
            del self._keys[slot]
        for rated in [rated for rated in self._ratings if rated[0] == conversation_id]:
            del self._ratings[rated]
        self._queues.pop(conversation_id, None)
        return self._rows.pop(conversation_id, None) is not None

    async def swap(self, conversation_id: str, branch_id: str, kept_as: str) -> bool:
        if conversation_id not in self._rows or branch_id not in self._rows:
            return False
        self._rows[kept_as] = attrs.evolve(self._rows.pop(conversation_id), id=kept_as)
        self._rows[conversation_id] = attrs.evolve(self._rows.pop(branch_id),
                                                   id=conversation_id)
        for (rated, index) in [slot for slot in self._ratings if slot[0] == conversation_id]:
            self._ratings[(kept_as, index)] = self._ratings.pop((rated, index))
        return True  # (one process: the lease stays with the id, in ``_running``)

    @contextlib.asynccontextmanager
    async def created(self, conversation_id: str, state: Mapping[str, Any], *,
                      owner: str = DEFAULT_OWNER) -> AsyncIterator[bool]:
        if conversation_id in self._rows:
            yield False
            return
        await self.create(conversation_id, state, owner=owner)
        self._running[conversation_id] = False
        try:
            yield True
        finally:
            self._running.pop(conversation_id, None)

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


    async def enqueue(self, conversation_id: str, queued: Queued, *, limit: int) -> bool:
        queue = self._queues.setdefault(conversation_id, [])
        if conversation_id not in self._rows or len(queue) >= limit:
            return False
        queue.append(queued)
        return True

    async def queued(self, conversation_id: str) -> list[Queued]:
        return list(self._queues.get(conversation_id, ()))

    async def withdraw(self, conversation_id: str, message_id: str) -> bool:
        queue = self._queues.get(conversation_id, [])
        for index, queued in enumerate(queue):
            if queued.message.id == message_id:
                del queue[index]
                return True
        return False

    async def conversations(self, query: Query) -> list[Summary]:
        return newest((_summary(row) for row in self._rows.values()), query)

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


def _summary(row: Stored) -> Summary:
    return Summary(row.id, row.title, row.status, row.waiting_for, row.updated, row.owner,
                   row.parent)
