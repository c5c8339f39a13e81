"""Messages while a turn runs (API.md §26) on two workers of one store (SQLite, Postgres): a
message sent to one worker while the other's turn lets its lease go (its last write made) waits
for the lease, not a 409; a turn that runs on the other worker is refused at once (or the
message queued); and a message queued on a worker whose watcher of the queue has just read it
empty is still answered once the other worker's turn ends.

Both workers are apps in one event loop, each with a store of its own on one database; the
moments between two steps are held open by the stores (``gated``), the bot's model and tool by
``Bot``'s gates: nothing waits for time."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from while_busy_kit import (
    Bot,
    Client,
    HoldsRelease,
    bot,
    post,
    said,
    served,
    settled,
)

from convo import FunctionModel, Message
from convo.serve import create_app
from convo.serve._stores.base import Queued, Stored
from convo.serve._stores.postgres import PostgresStore
from convo.serve._stores.sqlite import SQLiteStore

__all__ = ["bot"]  # the fixture
BUSY = {"error": "a turn is running in this conversation: wait for it to end, then send again"}


def gated(url: str) -> Any:
    """The store of ``url`` (SQLite or Postgres), whose moments a test can hold open."""
    base: Any = SQLiteStore if url.startswith("sqlite:///") else PostgresStore

    class Gated(HoldsRelease, base):  # type: ignore[misc,valid-type]
        """``hold_next`` keeps the next turn's lease after the turn's last write until
        ``let_go`` (``releasing``: it got there; ``HoldsRelease``); ``hold_read`` keeps the
        next read of a queue (read, not yet answered) until ``read_on`` (``reading``);
        ``asked`` counts the leases asked for (``asked_again``: a second one)."""

        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            self.hold_read = False
            self.reading, self.read_on = asyncio.Event(), asyncio.Event()
            self.asked = 0
            self.asked_again = asyncio.Event()

        def turn(self, conversation_id: str
                 ) -> contextlib.AbstractAsyncContextManager[Stored | bool]:
            self.asked += 1
            if self.asked == 2:
                self.asked_again.set()
            return super().turn(conversation_id)

        async def queued(self, conversation_id: str) -> list[Queued]:
            found: list[Queued] = await super().queued(conversation_id)
            if self.hold_read:
                self.hold_read = False
                self.reading.set()
                await self.read_on.wait()
            return found

    return Gated(url[len("sqlite:///"):] if base is SQLiteStore else url)


Gates = Any  # a worker's store as ``gated`` makes it: its holds on the moments between steps


@pytest.fixture(params=["sqlite", "postgres"])
def shared_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store two workers share."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'convo.db'}"
    return str(request.getfixturevalue("postgres").fresh())


Test = Callable[[Client, Client, str, Gates, Gates], Awaitable[None]]


async def _two(bot: Bot, url: str, test: Test) -> None:
    one_gates, two_gates = gated(url), gated(url)
    apps = [create_app(bot.template, FunctionModel(bot.reply), store=store)
            for store in (one_gates, two_gates)]
    async with contextlib.AsyncExitStack() as stack:
        one, two = [await stack.enter_async_context(served(app)) for app in apps]
        cid = (await one.post("/api/conversations", json={})).json()["id"]
        try:
            await test(one, two, cid, one_gates, two_gates)
        finally:  # (a test that failed lets go of what it held, before the apps close)
            for gate in (bot.model_gate, bot.tool_gate, *[e for g in (one_gates, two_gates)
                                                          for e in (g.let_go, g.read_on)]):
                gate.set()


def two_workers(bot: Bot, url: str, test: Test) -> None:
    asyncio.run(_two(bot, url, test))


def test_a_message_to_another_worker_as_a_turn_lets_its_lease_go_waits_for_it_not_409(
        bot: Bot, shared_url: str) -> None:
    """Worker one's turn wrote that the conversation waits (nothing queued) and holds its
    lease a moment longer; a client that read that and sends its next message to worker two
    is answered once the lease is let go."""
    async def test(one: Client, two: Client, cid: str, held: Gates, asking: Gates) -> None:
        held.hold_next = True
        first = asyncio.create_task(post(one, cid, "one"))
        await held.releasing.wait()
        shown = (await two.get(f"/api/conversations/{cid}")).json()
        assert (shown["status"], shown["queued"]) == ("waiting", [])
        asking.asked = 0
        second = asyncio.create_task(post(two, cid, "two"))
        again = asyncio.create_task(asking.asked_again.wait())
        await asyncio.wait({second, again}, return_when=asyncio.FIRST_COMPLETED)
        assert not second.done(), second.result().json()  # (before the fix: 409 at once)
        held.let_go.set()
        assert (await first).status_code == 200
        answered = await second
        assert answered.status_code == 200, answered.json()
        assert [m["content"] for m in answered.json()["added"]] == ["two", "re: two"]
        assert said((await one.get(f"/api/conversations/{cid}")).json()) == [
            ("user", "one"), ("assistant", "re: one"), ("user", "two"), ("assistant", "re: two")]

    two_workers(bot, shared_url, test)


def test_a_turn_running_on_another_worker_is_refused_at_once_and_queue_still_queues(
        bot: Bot, shared_url: str) -> None:
    async def test(one: Client, two: Client, cid: str, _: Gates, asking: Gates) -> None:
        first = asyncio.create_task(post(one, cid, "slow one"))
        await bot.in_model.wait()
        asking.asked = 0
        refused = await post(two, cid, "two")
        assert (refused.status_code, refused.json()) == (409, BUSY)
        assert asking.asked == 1  # the lease asked for once: no wait for a turn that runs
        queued = await post(two, cid, "three", "queue")
        assert queued.status_code == 202
        assert (queued.json()["queued"]["role"], queued.json()["queued"]["content"]) == (
            "user", "three")
        bot.model_gate.set()
        assert (await first).status_code == 200
        assert said(await settled(two, cid)) == [
            ("user", "slow one"), ("assistant", "re: slow one"),
            ("user", "three"), ("assistant", "re: three")]

    two_workers(bot, shared_url, test)


def test_a_message_to_another_worker_behind_a_finishing_turns_queue_is_refused_at_once(
        bot: Bot, shared_url: str) -> None:
    """The finishing turn leaves a queue, which its worker takes next: a message sent to the
    other worker meanwhile does not wait to go before it."""
    async def test(one: Client, two: Client, cid: str, held: Gates, asking: Gates) -> None:
        held.hold_next = True
        first = asyncio.create_task(post(one, cid, "slow one"))
        await bot.in_model.wait()
        assert (await post(one, cid, "queued", "queue")).status_code == 202
        bot.model_gate.set()
        await held.releasing.wait()
        asking.asked = 0
        refused = await post(two, cid, "two")
        assert (refused.status_code, refused.json()) == (409, BUSY)
        assert asking.asked == 1
        held.let_go.set()
        assert (await first).status_code == 200
        assert said(await settled(one, cid)) == [
            ("user", "slow one"), ("assistant", "re: slow one"),
            ("user", "queued"), ("assistant", "re: queued")]

    two_workers(bot, shared_url, test)


def test_a_message_queued_as_the_watcher_finds_the_queue_empty_is_answered_after_the_turn(
        bot: Bot, shared_url: str) -> None:
    """Worker one's watcher of the queue reads it empty (a steered message was taken) and is
    held before it stops; a turn starts on worker two, and a message queued on worker one
    meanwhile is answered once that turn ends (before the fix: stored, shown, never taken)."""
    reply = bot.reply
    gates: list[Gates] = []

    async def arming(messages: Sequence[Message], tools: Any) -> str:
        if messages[-1].text == "the order number is A7":  # taken: the turn read the queue
            gates[0].hold_read = True
        return await reply(messages, tools)

    bot.reply = arming  # type: ignore[method-assign]

    async def test(one: Client, two: Client, cid: str, watching: Gates, _: Gates) -> None:
        gates.append(watching)
        first = asyncio.create_task(post(one, cid, "look A"))
        await bot.in_tool.wait()
        assert (await post(one, cid, "the order number is A7", "steer")).status_code == 202
        bot.tool_gate.set()
        assert (await first).json()["queued"] == []
        await watching.reading.wait()  # the watcher read the queue: empty
        second = asyncio.create_task(post(two, cid, "slow two"))
        await bot.in_model.wait()  # a turn runs on worker two
        queued = await post(one, cid, "three", "queue")
        assert queued.status_code == 202, queued.json()
        watching.read_on.set()  # the watcher goes on with what it read
        bot.model_gate.set()
        assert (await second).status_code == 200
        assert said(await settled(one, cid)) == [
            ("user", "look A"), ("assistant", ""), ("tool", "found A"),
            ("user", "the order number is A7"), ("assistant", "re: the order number is A7"),
            ("user", "slow two"), ("assistant", "re: slow two"),
            ("user", "three"), ("assistant", "re: three")]

    two_workers(bot, shared_url, test)
