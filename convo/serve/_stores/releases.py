"""The turn leases a worker failed to let go, let go as soon as its store answers again.

A turn's lease is released with a write to the store; when the store fails during the turn
(SQLite's disk full, Postgres restarted) that write fails too, and the lease would hold the
conversation — every request a 409 "a turn is running" — until it lapsed (``--lease``). But the
worker that holds it knows that the turn is over: a SQL store keeps such leases here
(``Unreleased.add``) and releases them all with one write before it takes any turn (so a retry
that reaches this worker is served at once) and at each ``ping``, and a timer tries every
second (or every third of the lease, if shorter) meanwhile, so a retry that reaches another
worker is served within a second of the store coming back. The release names this worker as
the owner: a lease another worker took over after it lapsed is left alone.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from .base import StoreError


class Unreleased:
    """The conversations whose lease this worker holds though their turns are over.
    ``release(ids)`` clears this worker's leases of ``ids`` in the store (one write);
    ``every()``: seconds between two tries of the timer."""

    def __init__(self, release: Callable[[list[str]], Awaitable[None]],
                 every: Callable[[], float]) -> None:
        self._release = release
        self._every = every
        self._ids: set[str] = set()
        self._lock = asyncio.Lock()  # one release at a time: none lands after a new take
        self._timer: asyncio.Task[None] | None = None

    def add(self, conversation_id: str) -> None:
        """The lease of ``conversation_id`` could not be released: tried again from now on."""
        self._ids.add(conversation_id)
        if self._timer is None or self._timer.done():
            self._timer = asyncio.ensure_future(self._retry())

    async def let_go(self) -> None:
        """Release every lease kept here (nothing to do, mostly: no write); a ``StoreError``
        when the store still does not answer (they stay kept)."""
        if not self._ids:
            return
        async with self._lock:
            ids = sorted(self._ids)
            if ids:
                await self._release(ids)
                self._ids.difference_update(ids)

    async def _retry(self) -> None:
        while self._ids:
            await asyncio.sleep(self._every())
            with contextlib.suppress(StoreError):  # still down: the next tick tries again
                await self.let_go()

    async def close(self) -> None:
        """Stop the timer (the store closes: what is left lapses by itself)."""
        if self._timer is not None:
            self._timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._timer
            self._timer = None
