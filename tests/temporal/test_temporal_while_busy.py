"""Messages while a turn runs (§26) on the Temporal engine: a `convo serve --engine
temporal://…` process queues them in the store, and the conversation's workflow in a `convo
worker` process takes them — queued ones after the running turn, each as a turn of its own;
a steered one at the running turn's next safe point (after its tool results, before its next
model call); an interrupt cancels the running turn's model call and is answered before the
messages queued earlier."""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any

from temporal_kit import GatedTest, sse, until

from convo import Message
from convo.serve._stores import open_store
from convo.serve._stores.base import Queued, Queues


async def _queue_behind(store_url: str, conversation_id: str, text: str) -> None:
    store = open_store(store_url)
    await store.open()
    try:
        assert isinstance(store, Queues)
        assert await store.enqueue(conversation_id, Queued(Message("user", text, id="m-lost")),
                                   limit=16)
    finally:
        await store.close()


def _said(body: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(m["role"], m["content"]) for m in body["messages"][1:]]  # (after the system's)


def test_queue_steer_and_interrupt_while_a_turn_runs_on_temporal(gated: GatedTest) -> None:
    pool = concurrent.futures.ThreadPoolExecutor(2)
    gate, entered = gated.gate, gated.entered
    try:
        client = gated.client

        def started(text: str) -> tuple[str, concurrent.futures.Future[list[tuple[str, Any]]]]:
            """A new conversation and its first message's stream, once the turn of ``text``
            is held at the bot's gate."""
            cid = client.post("/api/conversations", json={}).json()["id"]
            gate.unlink(missing_ok=True)
            entered.unlink(missing_ok=True)

            def run() -> list[tuple[str, Any]]:
                with client.stream("POST", f"/api/conversations/{cid}/messages",
                                   json={"content": text},
                                   headers={"Accept": "text/event-stream"}) as response:
                    return list(sse(response.iter_lines()))

            running = pool.submit(run)
            until(entered.exists, f"the turn of {text!r} never reached its gate")
            return cid, running

        def send(cid: str, text: str, mode: str) -> Any:
            return client.post(f"/api/conversations/{cid}/messages",
                               json={"content": text, "while_busy": mode})

        def settled(cid: str) -> dict[str, Any]:
            holder: dict[str, Any] = {}

            def done() -> bool:
                body = holder["body"] = client.get(f"/api/conversations/{cid}").json()
                return body["status"] == "waiting" and not body["queued"]
            until(done, f"conversation {cid} never took its queue")
            return holder["body"]

        # queue: stored (and shown) while the turn runs, withdrawn, taken after the turn.
        first, running = started("wait")
        rejected = client.post(f"/api/conversations/{first}/messages", json={"content": "x"})
        q1, q2 = send(first, "q1", "queue"), send(first, "q2", "queue")
        while_running = client.get(f"/api/conversations/{first}").json()
        withdrawn = client.delete(f"/api/conversations/{first}/queued/{q2.json()['queued']['id']}")
        again = client.delete(f"/api/conversations/{first}/queued/{q2.json()['queued']['id']}")
        gate.touch()
        first_events = running.result(60)
        queued_body = settled(first)

        # steer: taken after the tool's result, before the turn's next model call.
        second, running = started("tool")
        s1 = send(second, "s1", "steer")
        gate.touch()
        second_events = running.result(60)
        steered_body = settled(second)

        # interrupt: the model call cut off, the interrupting message answered first, then
        # the one queued before it.
        third, running = started("wait")
        q3 = send(third, "q3", "queue")
        interrupted = send(third, "i1", "interrupt")
        third_events = running.result(60)
        interrupted_body = settled(third)
        bad = client.post(f"/api/conversations/{third}/messages",
                          json={"content": "x", "while_busy": "later"})

        # queued in the store by a front that died before it told the workflow: the next
        # GET tells it again, and it is taken.
        asyncio.run(_queue_behind(gated.store_url, third, "lost"))
        lost_body = settled(third)
    finally:
        gate.touch()
        pool.shutdown(wait=False, cancel_futures=True)
    assert rejected.status_code == 409
    assert rejected.json() == {"error": "a turn is running in this conversation: wait for it "
                                        "to end, then send again"}
    assert (q1.status_code, q1.json()["queued"]["content"]) == (202, "q1")
    assert q1.json()["queued"]["id"]
    assert while_running["status"] == "running"
    assert [q["content"] for q in while_running["queued"]] == ["q1", "q2"]
    assert [q["id"] for q in while_running["queued"]] == [q1.json()["queued"]["id"],
                                                          q2.json()["queued"]["id"]]
    assert (withdrawn.status_code, again.status_code) == (204, 404)
    assert [e for e, _ in first_events][-1] == "done"
    assert _said(queued_body) == [("user", "wait"), ("assistant", "partial after wait"),
                                  ("user", "q1"), ("assistant", "You said 'q1'")]
    assert queued_body["messages"][3]["id"] == q1.json()["queued"]["id"]

    assert s1.status_code == 202
    assert _said(steered_body)[:2] == [("user", "tool"), ("assistant", "")]
    assert [(r, c) for r, c in _said(steered_body)[2:]] == [
        ("tool", "noted hi"), ("user", "s1"), ("assistant", "You said 's1'")]
    shown = [d["content"] for e, d in second_events if e == "message"]
    assert shown == ["tool", "", "noted hi", "s1", "You said 's1'"]
    assert steered_body["messages"][4]["id"] == s1.json()["queued"]["id"]

    assert (q3.status_code, interrupted.status_code) == (202, 200)
    assert [(m["role"], m["content"]) for m in interrupted.json()["added"]] == [
        ("user", "i1"), ("assistant", "You said 'i1'")]
    assert [e for e, _ in third_events][-1] == "done"
    assert _said(interrupted_body) == [
        ("user", "wait"), ("assistant", "partial "), ("user", "i1"),
        ("assistant", "You said 'i1'"), ("user", "q3"), ("assistant", "You said 'q3'")]
    assert interrupted_body["messages"][2]["metadata"] == {"cancelled": True}
    assert (bad.status_code, bad.json()) == (400, {
        "error": '"while_busy" must be one of "reject", "queue", "interrupt", "steer", got '
                 '"later"'})
    assert _said(lost_body)[-2:] == [("user", "lost"), ("assistant", "You said 'lost'")]
    assert [c for c in gated.calls() if not c.startswith("tool ")] == [
        "model wait", "model q1", "model tool", "model s1", "model wait", "cancelled wait",
        "model i1", "model q3", "model lost"]
