"""A turn ends though its lease timer's cancel was swallowed by the store's renew (on
Postgres, Python 3.11's asyncio.wait_for can return a result that came as the task was
cancelled; the turn then waited for its timer for ever while the timer renewed the lease)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from convo.serve._stores import HELD
from convo.serve._turns import Turns


class SwallowingStore:
    """Renews answer HELD; the first, cancelled mid-way answers HELD too, as a driver that lost
    the race between its reply and the cancel does."""

    def __init__(self) -> None:
        self.renewing = asyncio.Event()
        self.renews = 0
        self.broken = False  # then renew raises, which ends the timer (so a failing test ends)

    @contextlib.asynccontextmanager
    async def turn(self, conversation_id: str) -> AsyncIterator[bool]:
        yield True

    async def renew(self, conversation_id: str, *, extend: bool = True) -> str:
        if self.broken:
            raise RuntimeError("the test gave up on the turn")
        self.renews += 1
        if self.renews == 1:  # the first is cancelled as the turn ends, and says HELD
            self.renewing.set()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.Event().wait()
        return HELD


async def _run() -> tuple[str, int]:
    store = SwallowingStore()
    turns = Turns(store, lease=0.03)  # type: ignore[arg-type]  # a tick every 10 ms

    async def one_turn() -> None:
        async with turns.hold("c1") as turn:
            assert turn is not None
            await store.renewing.wait()  # the timer is inside renew when the turn ends

    task = asyncio.create_task(one_turn())
    done, _ = await asyncio.wait({task}, timeout=5)
    renews = store.renews
    if not done:
        store.broken = True  # the timer would renew for ever: end it, then the turn
        await task
        return "the turn never ended", renews
    return "ended", renews


def test_a_turn_ends_though_the_store_swallowed_its_timers_cancel() -> None:
    outcome, renews = asyncio.run(_run())
    assert (outcome, renews) == ("ended", 1)
