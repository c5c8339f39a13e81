"""Messages while a turn runs (API.md §26): ``while_busy`` reject, queue, interrupt and steer,
the queue in GET, withdrawing, ``max_queued``, and the edges its Details settle, on each store.

The bot's model and tool are held at gates (asyncio events), so a test knows a turn runs; the
model keeps every request it was sent, so a test sees what the model saw (``Bot`` of
while_busy_kit.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from while_busy_kit import (
    Bot,
    Client,
    HoldsRelease,
    bot,
    post,
    run,
    said,
    settled,
)

from convo import FunctionModel, Message
from convo.serve import create_app
from convo.serve._stores.memory import MemoryStore

__all__ = ["bot"]  # the fixture


def test_queued_messages_are_stored_shown_and_answered_in_order(bot: Bot,
                                                                 store_url: str) -> None:
    async def test(c: Client, cid: str) -> None:
        first = asyncio.create_task(post(c, cid, "slow one"))
        await bot.in_model.wait()
        two = await post(c, cid, "two", "queue")
        three = await post(c, cid, "three", "queue")
        assert two.status_code == 202 and three.status_code == 202
        queued = two.json()["queued"]
        assert (queued["role"], queued["content"]) == ("user", "two")
        shown = (await c.get(f"/api/conversations/{cid}")).json()
        assert shown["status"] == "running"
        assert [q["content"] for q in shown["queued"]] == ["two", "three"]
        assert shown["queued"][0]["id"] == queued["id"]
        bot.model_gate.set()
        answered = await first
        assert answered.status_code == 200
        assert [m["content"] for m in answered.json()["added"]] == ["slow one", "re: slow one"]
        done = await settled(c, cid)
        assert said(done) == [("user", "slow one"), ("assistant", "re: slow one"),
                              ("user", "two"), ("assistant", "re: two"),
                              ("user", "three"), ("assistant", "re: three")]
        ids = [m["id"] for m in done["messages"] if m["content"] == "two"]
        assert ids == [queued["id"]]  # its queue id is its stored id

    run(bot, store_url, test)


def test_reject_is_the_default_and_an_unknown_mode_is_400(bot: Bot) -> None:
    async def test(c: Client, cid: str) -> None:
        bad = await post(c, cid, "hi", "later")
        assert (bad.status_code, bad.json()) == (400, {
            "error": '"while_busy" must be one of "reject", "queue", "interrupt", "steer", '
                     'got "later"'})
        first = asyncio.create_task(post(c, cid, "slow one"))
        await bot.in_model.wait()
        refused = await post(c, cid, "two")
        assert (refused.status_code, refused.json()) == (409, {
            "error": "a turn is running in this conversation: wait for it to end, then send "
                     "again"})
        also = await post(c, cid, "two", "reject")
        assert also.status_code == 409
        bot.model_gate.set()
        await first
        shown = (await c.get(f"/api/conversations/{cid}")).json()
        assert shown["queued"] == []
        assert said(shown) == [("user", "slow one"), ("assistant", "re: slow one")]

    run(bot, "memory", test)


def test_the_server_default_queues(bot: Bot) -> None:
    async def test(c: Client, cid: str) -> None:
        first = asyncio.create_task(post(c, cid, "slow one"))
        await bot.in_model.wait()
        queued = await post(c, cid, "two")
        refused = await post(c, cid, "three", "reject")
        assert (queued.status_code, refused.status_code) == (202, 409)
        bot.model_gate.set()
        await first
        assert said(await settled(c, cid))[-2:] == [("user", "two"), ("assistant", "re: two")]

    run(bot, "memory", test, while_busy="queue")


def test_a_steered_message_is_seen_by_the_next_model_call_of_the_turn(
        bot: Bot, store_url: str) -> None:
    async def test(c: Client, cid: str) -> None:
        first = asyncio.create_task(post(c, cid, "look A"))
        await bot.in_tool.wait()
        steered = await post(c, cid, "the order number is A7", "steer")
        assert steered.status_code == 202
        assert [q["content"] for q in (await c.get(f"/api/conversations/{cid}")).json()[
            "queued"]] == ["the order number is A7"]
        bot.tool_gate.set()
        answered = (await first).json()
        assert bot.seen[-1][-3:] == [("assistant", ""), ("tool", "found A"),
                                     ("user", "the order number is A7")]
        assert [(m["role"], m["content"]) for m in answered["added"]][1:] == [
            ("assistant", ""), ("tool", "found A"), ("user", "the order number is A7"),
            ("assistant", "re: the order number is A7")]
        assert answered["queued"] == []
        shown = await settled(c, cid)
        assert said(shown)[-2:] == [("user", "the order number is A7"),
                                    ("assistant", "re: the order number is A7")]
        assert len(bot.seen) == 2  # taken in the turn: no turn of its own

    run(bot, store_url, test)


def test_a_steered_message_shows_in_the_running_turns_stream(bot: Bot) -> None:
    async def test(c: Client, cid: str) -> None:
        async def streamed() -> str:
            async with c.stream("POST", f"/api/conversations/{cid}/messages",
                                json={"content": "look B"},
                                headers={"Accept": "text/event-stream"}) as r:
                return "".join([t async for t in r.aiter_text()])

        first = asyncio.create_task(streamed())
        await bot.in_tool.wait()
        await post(c, cid, "and C", "steer")
        bot.tool_gate.set()
        text = await first
        assert 'event: message\ndata: {"role": "user", "content": "and C"' in text

    run(bot, "memory", test)


def test_interrupt_stops_the_turn_then_answers_the_message(bot: Bot, store_url: str) -> None:
    async def test(c: Client, cid: str) -> None:
        first = asyncio.create_task(post(c, cid, "slow one"))
        await bot.in_model.wait()
        interrupted = await post(c, cid, "instead this", "interrupt")
        assert interrupted.status_code == 200
        body = interrupted.json()
        assert [m["content"] for m in body["added"]] == ["instead this", "re: instead this"]
        old = await first
        assert old.status_code == 200  # with what it committed
        assert [m["content"] for m in old.json()["added"]] == ["slow one"]
        assert said(await settled(c, cid)) == [
            ("user", "slow one"), ("user", "instead this"), ("assistant", "re: instead this")]

    run(bot, store_url, test)


def test_interrupt_answers_first_and_the_queue_after_it(bot: Bot) -> None:
    async def test(c: Client, cid: str) -> None:
        first = asyncio.create_task(post(c, cid, "slow one"))
        await bot.in_model.wait()
        assert (await post(c, cid, "queued", "queue")).status_code == 202
        interrupted = await post(c, cid, "now", "interrupt")
        assert interrupted.status_code == 200
        await first
        assert said(await settled(c, cid)) == [
            ("user", "slow one"), ("user", "now"), ("assistant", "re: now"),
            ("user", "queued"), ("assistant", "re: queued")]

    run(bot, "memory", test)


def test_withdrawing_by_id_then_404(bot: Bot, store_url: str) -> None:
    async def test(c: Client, cid: str) -> None:
        first = asyncio.create_task(post(c, cid, "slow one"))
        await bot.in_model.wait()
        two = (await post(c, cid, "two", "queue")).json()["queued"]["id"]
        await post(c, cid, "three", "queue")
        url = f"/api/conversations/{cid}/queued/{two}"
        assert (await c.delete(url)).status_code == 204
        again = await c.delete(url)
        assert again.status_code == 404
        assert again.json() == {"error": f"no message {two!r} is queued in conversation "
                                         f"{cid!r} (it was taken, withdrawn, or never queued)"}
        assert [q["content"] for q in (await c.get(f"/api/conversations/{cid}")).json()[
            "queued"]] == ["three"]
        bot.model_gate.set()
        await first
        assert said(await settled(c, cid)) == [
            ("user", "slow one"), ("assistant", "re: slow one"),
            ("user", "three"), ("assistant", "re: three")]

    run(bot, store_url, test)


def test_max_queued_bounds_the_queue_with_429(bot: Bot) -> None:
    async def test(c: Client, cid: str) -> None:
        first = asyncio.create_task(post(c, cid, "slow one"))
        await bot.in_model.wait()
        assert (await post(c, cid, "two", "queue")).status_code == 202
        over = await post(c, cid, "three", "steer")
        assert (over.status_code, over.json()) == (429, {
            "error": "1 messages are queued in this conversation already (max_queued): wait "
                     "until some are answered, or withdraw one"})
        bot.model_gate.set()
        await first
        await settled(c, cid)

    run(bot, "memory", test, max_queued=1)


def test_an_idempotency_key_holds_for_a_queued_message(bot: Bot, store_url: str) -> None:
    async def test(c: Client, cid: str) -> None:
        first = asyncio.create_task(post(c, cid, "slow one"))
        await bot.in_model.wait()
        once = await post(c, cid, "two", "queue", **{"Idempotency-Key": "k1"})
        twice = await post(c, cid, "two", "steer", **{"Idempotency-Key": "k1"})
        assert (once.status_code, twice.status_code) == (202, 202)
        assert once.json() == twice.json()
        other = await post(c, cid, "other", "queue", **{"Idempotency-Key": "k1"})
        assert other.status_code == 409
        bot.model_gate.set()
        await first
        assert [t for _, t in said(await settled(c, cid))].count("two") == 1

    run(bot, store_url, test)


def test_a_queue_behind_a_failed_turn_waits_for_its_retry(bot: Bot, store_url: str) -> None:
    async def test(c: Client, cid: str) -> None:
        bot.fail = True
        first = asyncio.create_task(post(c, cid, "slow one"))
        await bot.in_model.wait()
        assert (await post(c, cid, "two", "queue")).status_code == 202
        bot.model_gate.set()
        assert (await first).status_code == 502
        shown = (await c.get(f"/api/conversations/{cid}")).json()
        assert shown["waiting_for"]["type"] == "retry"
        assert [q["content"] for q in shown["queued"]] == ["two"]  # left in place
        bot.fail = False
        assert (await c.post(f"/api/conversations/{cid}/retry", json={})).status_code == 200
        assert said(await settled(c, cid)) == [
            ("user", "slow one"), ("assistant", "re: slow one"),
            ("user", "two"), ("assistant", "re: two")]

    run(bot, store_url, test)


def test_after_a_cancel_the_queue_is_taken(bot: Bot, store_url: str) -> None:
    async def test(c: Client, cid: str) -> None:
        first = asyncio.create_task(post(c, cid, "slow one"))
        await bot.in_model.wait()
        assert (await post(c, cid, "two", "queue")).status_code == 202
        cancelled = await c.post(f"/api/conversations/{cid}/cancel", json={})
        assert cancelled.status_code == 200
        await first
        assert said(await settled(c, cid)) == [
            ("user", "slow one"), ("user", "two"), ("assistant", "re: two")]

    run(bot, store_url, test)


def test_a_steer_that_meets_an_approval_goes_after_the_batchs_tool_messages(
        bot: Bot, store_url: str) -> None:
    async def test(c: Client, cid: str) -> None:
        first = asyncio.create_task(post(c, cid, "slowrefund 42"))
        await bot.in_model.wait()
        assert (await post(c, cid, "and 43 too", "steer")).status_code == 202
        bot.model_gate.set()
        paused = (await first).json()
        assert paused["waiting_for"]["type"] == "approval"
        assert [q["content"] for q in paused["queued"]] == ["and 43 too"]  # the queue stays
        call = paused["waiting_for"]["calls"][0]["id"]
        decided = await c.post(f"/api/conversations/{cid}/approvals",
                               json={"decisions": [{"call_id": call, "approve": True}]})
        assert decided.status_code == 200
        assert said(await settled(c, cid)) == [
            ("user", "slowrefund 42"), ("assistant", ""), ("tool", "refunded 42"),
            ("user", "and 43 too"), ("assistant", "re: and 43 too")]

    run(bot, store_url, test)


def test_a_steer_that_meets_a_turn_ending_batch_is_queued(bot: Bot, store_url: str) -> None:
    async def test(c: Client, cid: str) -> None:
        first = asyncio.create_task(post(c, cid, "slowfinish"))
        await bot.in_model.wait()
        assert (await post(c, cid, "one more", "steer")).status_code == 202
        bot.model_gate.set()
        await first
        shown = await settled(c, cid)
        assert said(shown)[-2:] == [("user", "one more"), ("assistant", "re: one more")]
        assert said(shown)[0] == ("user", "slowfinish")

    run(bot, store_url, test)


def test_deleting_the_conversation_drops_its_queue(bot: Bot) -> None:
    async def test(c: Client, cid: str) -> None:
        first = asyncio.create_task(post(c, cid, "slow one"))
        await bot.in_model.wait()
        two = (await post(c, cid, "two", "queue")).json()["queued"]["id"]
        assert (await c.delete(f"/api/conversations/{cid}")).status_code == 204
        await first
        assert (await c.delete(f"/api/conversations/{cid}/queued/{two}")).status_code == 404

    run(bot, "memory", test)


def test_create_app_checks_its_options(bot: Bot) -> None:
    with pytest.raises(ValueError, match="while_busy must be one of 'reject', 'queue', "
                                         "'interrupt', 'steer', got 'wait'"):
        create_app(bot.template, FunctionModel(bot.reply), while_busy="wait")
    with pytest.raises(ValueError, match="max_queued must be a whole number of messages from "
                                         "1, got 0"):
        create_app(bot.template, FunctionModel(bot.reply), max_queued=0)


def test_a_message_while_the_queues_watcher_finds_it_empty_is_answered(
        bot: Bot, store_url: str) -> None:
    """A steered message the running turn took leaves the queue's watcher nothing to take:
    held where it reads the queue, a ``reject`` message sent then is answered (200), not
    refused as if a turn ran (409): the watcher takes the lease only for a message."""
    looking, go_on, armed = asyncio.Event(), asyncio.Event(), [False]
    reply = bot.reply

    async def arming(messages: Sequence[Message], tools: Any) -> str:
        if messages[-1].text == "the order number is A7":  # taken: the turn read the queue
            armed[0] = True
        return await reply(messages, tools)

    bot.reply = arming  # type: ignore[method-assign]

    async def test(c: Client, cid: str) -> None:
        first = asyncio.create_task(post(c, cid, "look A"))
        await bot.in_tool.wait()
        assert (await post(c, cid, "the order number is A7", "steer")).status_code == 202
        bot.tool_gate.set()
        assert (await first).json()["queued"] == []
        await looking.wait()  # the watcher, at its read of the (empty) queue
        try:
            answered = await post(c, cid, "thanks", "reject")
        finally:
            go_on.set()
        assert answered.status_code == 200, answered.text
        assert said(await settled(c, cid))[-4:] == [
            ("user", "the order number is A7"), ("assistant", "re: the order number is A7"),
            ("user", "thanks"), ("assistant", "re: thanks")]

    def holding(app: Any) -> None:
        store = next(r.endpoint.__self__.engine.store for r in app.routes
                     if getattr(r, "path", "") == "/api/conversations/{id}/messages")
        queued = store.queued

        async def held(conversation_id: str) -> Any:
            if armed[0]:
                looking.set()
                await go_on.wait()
            return await queued(conversation_id)

        store.queued = held

    run(bot, store_url, test, on_app=holding)


class SlowRelease(HoldsRelease, MemoryStore):
    """A memory store that holds a turn's lease a moment after its last write."""


def test_a_message_sent_as_a_turn_releases_its_lease_waits_for_it_not_409(bot: Bot) -> None:
    """The turn's last write shows the conversation waiting, nothing queued; a client that
    sends then is answered once the lease is free, not refused as if the turn ran (the CI
    race of stop 49: a Postgres lease's release is a round trip)."""
    store = SlowRelease()

    async def test(c: Client, cid: str) -> None:
        store.hold_next = True
        first = asyncio.create_task(post(c, cid, "one"))
        await store.releasing.wait()
        shown = (await c.get(f"/api/conversations/{cid}")).json()
        assert (shown["status"], shown["queued"]) == ("waiting", [])
        second = asyncio.create_task(post(c, cid, "two"))
        done, _ = await asyncio.wait({second}, timeout=0.5)  # (before the fix: 409 at once)
        assert not done, [t.result().json() for t in done]
        store.let_go.set()
        assert (await first).status_code == 200
        answered = await second
        assert answered.status_code == 200, answered.json()
        assert said((await c.get(f"/api/conversations/{cid}")).json()) == [
            ("user", "one"), ("assistant", "re: one"), ("user", "two"), ("assistant", "re: two")]

    run(bot, store, test)
