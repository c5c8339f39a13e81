"""The turns this worker runs: their leases, renewed on a timer, and how a turn is stopped.

A turn holds its conversation's lease (``Store.turn``) from before its first step until it has
stopped. While it runs, a timer ticks every second (or every third of the lease, if shorter):
it renews the lease every third of it — one store write per third of a lease, never one per
model call — and in between only reads whether another worker asked the turn to stop
(``Store.request_cancel``, for a cancel or a delete that reached a worker that does not run the
turn). A store that does not answer a tick is asked again at the next one; if it stays away
for the whole lease, the lease lapses and another worker may take over (the turn cannot write
either). A turn whose lease was taken over stops as if cancelled.

Stopping a turn: its ``Cancel`` cuts off the model call under way, whose reply is the text
streamed so far (``metadata["cancelled"]``: the one cancel, ``convo._run.cancel``, whose
``Cancellable`` finds the calls under way in ``Cancel.scopes``); tools that run finish; later
model calls of the turn are not made (an empty cancelled reply) and later tools are not run
(each ends the turn, ``stopped``: the ``Served`` answerer's part), so the run goes on to the
next request for a person and waits there. A cancelled reply with nothing in it is neither
stored nor shown (``convo.serve._live``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from typing import Final

import attrs

from .._run.cancel import Scope, cut
from ._stores.base import HELD, Queues, Stored, StoreError, TurnStore

TOOL_STOPPED: Final = "Not run: the turn was cancelled"
logger = logging.getLogger("convo.serve")  # (the request log's logger, http/logs.py)
POLL_S: Final = 0.05  # how often a cancel or delete looks whether another worker's turn ended
#: How long a turn asked for waits, at most, for another worker's turn whose last write is made
#: to let its lease go (module docstring); its first look again is after ``FIRST_LOOK_S``.
FINISHING_S: Final = 2.0
FIRST_LOOK_S: Final = 0.005


class Cancel(asyncio.Event):
    """A turn's cancel: an ``asyncio.Event`` that also cuts off the calls under way in its
    ``scopes`` once set (the model call, from there, with no task waiting for the event)."""

    def __init__(self) -> None:
        super().__init__()
        self.scopes: list[Scope] = []

    def set(self) -> None:
        super().set()
        cut(self.scopes)


@attrs.define(eq=False)
class Turn:
    """A turn running in this worker: set ``cancel`` to stop it; ``stopped`` once its lease
    is released."""

    cancel: Cancel = attrs.field(factory=Cancel)
    stopped: asyncio.Event = attrs.field(factory=asyncio.Event)
    #: The conversation's row as the store read it when the lease was taken (``None``: the
    #: store gave only ``True``, or the lease came with a creation).
    row: Stored | None = None
    #: Its last write is made (it shows where the conversation waits, nothing queued): a turn
    #: asked for now waits for its lease to be released rather than being refused.
    finishing: bool = False


class Turns:
    """The leases of the turns running in this worker, on one store."""

    def __init__(self, store: TurnStore, lease: float) -> None:
        self.store = store
        self.lease = lease
        self.running: dict[str, Turn] = {}

    @contextlib.asynccontextmanager
    async def hold(self, conversation_id: str,
                   lease: contextlib.AbstractAsyncContextManager[bool] | None = None
                   ) -> AsyncIterator[Turn | None]:
        """The conversation's lease, renewed while the block runs; ``None`` when another
        turn holds it. ``lease``: how it is taken, when not by ``Store.turn`` (a creation
        that takes it, ``Creating.created``). The timer's task starts at its first tick: a
        turn that ends sooner (most do) costs no task. A turn whose last write is made is
        waited for, here (``finishing``) or in another worker (``_taken``): a client that saw
        the conversation wait is not refused as if a turn ran."""
        held = self.running.get(conversation_id)
        if held is not None and held.finishing:
            await held.stopped.wait()
        turn = Turn()
        try:
            async with lease or self._taken(conversation_id) as taken:
                if not taken:
                    yield None
                    return
                if isinstance(taken, Stored):
                    turn.row = taken
                self.running[conversation_id] = turn
                renewed = time.monotonic()
                timer: asyncio.Task[None] | None = None

                def start() -> None:
                    nonlocal timer
                    timer = asyncio.ensure_future(self._renew(conversation_id, turn, renewed))

                first = asyncio.get_running_loop().call_later(self._tick, start)
                try:
                    yield turn
                finally:
                    first.cancel()
                    if timer is not None:
                        timer.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await timer
        finally:  # (known running until its lease is released: a store's release may wait)
            if self.running.get(conversation_id) is turn:
                del self.running[conversation_id]
            turn.stopped.set()

    @contextlib.asynccontextmanager
    async def _taken(self, conversation_id: str) -> AsyncIterator[Stored | bool]:
        """``Store.turn``; when another worker's turn holds the lease after its last write
        (``_written``), asked for again until it is let go, for ``FINISHING_S`` at most."""
        look, deadline = FIRST_LOOK_S, None
        while True:
            async with self.store.turn(conversation_id) as taken:
                if taken:
                    yield taken
                    return
            if deadline is None:  # (a turn of this worker that runs: refused at once)
                if conversation_id in self.running or not await self._written(
                        conversation_id, queue=True):
                    break
                deadline = time.monotonic() + min(FINISHING_S, self.lease)
            elif time.monotonic() >= deadline or not await self._written(conversation_id):
                break
            await asyncio.sleep(look)
            look = min(2 * look, POLL_S)
        yield False

    async def _written(self, conversation_id: str, *, queue: bool = False) -> bool:
        """Whether the conversation's row shows no turn running (the holder of its lease made
        its last write: the conversation waits, or ended); with ``queue``, also that nothing
        is queued (a queue is taken first)."""
        row = await self.store.load(conversation_id, messages=False)
        if row is None or row.status == "running":
            return False
        store = self.store
        return not queue or not isinstance(store, Queues) or not await store.queued(
            conversation_id)

    @property
    def _tick(self) -> float:
        return min(self.lease / 3, 1.0)

    async def _renew(self, conversation_id: str, turn: Turn, renewed: float) -> None:
        me = asyncio.current_task()
        # A cancel can be swallowed below (Python 3.11's asyncio.wait_for returns a result that
        # came as it was cancelled, and drivers use it): the turn waits for this timer when it
        # ends, so a cancel asked for is honoured after the store's answer whatever it did.
        while True:
            went_on = await self._once(conversation_id, turn, renewed)
            if went_on is None or (me is not None and me.cancelling()):
                return
            renewed = went_on
            await asyncio.sleep(self._tick)

    async def _once(self, conversation_id: str, turn: Turn, renewed: float) -> float | None:
        """One tick: renew the lease when a third of it passed since ``renewed``, else look
        for a cancel; when it was last renewed now (``None``: the timer stops)."""
        every = self.lease / 3
        due = time.monotonic() - renewed >= every - self._tick / 2
        try:
            found = await self.store.renew(conversation_id, extend=due)
        except StoreError:
            return renewed  # asked again at the next tick; the lease lapses if it stays down
        except Exception:  # a bug in a store: said, and the turn stops (it may lose it)
            logger.exception("renewing the lease of conversation %s failed",
                             conversation_id, extra={"convo_fields": None})
            turn.cancel.set()
            return None
        if found != HELD:  # asked to stop, or taken over after it lapsed
            turn.cancel.set()
        return time.monotonic() if due else renewed

    async def stop(self, conversation_id: str) -> bool:
        """Stop the conversation's turn, here or in another worker, and wait until it has
        stopped; ``False`` when no turn runs."""
        turn = self.running.get(conversation_id)
        if turn is not None:
            turn.cancel.set()
            with contextlib.suppress(StoreError):  # said in the store too, for the record
                await self.store.request_cancel(conversation_id)
            await turn.stopped.wait()
            return True
        if not await self.store.request_cancel(conversation_id):
            return False
        deadline = time.monotonic() + 2 * self.lease  # by then the lease lapsed, at the latest
        while time.monotonic() < deadline and await self.store.running(conversation_id):
            await asyncio.sleep(POLL_S)
        return True
