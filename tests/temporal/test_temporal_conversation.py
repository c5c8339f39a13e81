"""A conversation as a Temporal workflow, against a real dev server: Updates answer with what
the turn added, the Query is the store's conversation, a refused Update is rejected with
§9's words, a model error waits for the retry Update, the history grows linearly in turns, and
the workflow continues as new without repeating a model call."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

import pytest
from temporal_kit import start, texts, worker

from convo.serve._live import stored_view


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_a_conversation_runs_as_a_workflow(temporal: str, tmp_path: Path) -> None:
    async def go() -> None:
        async with worker(temporal, tmp_path) as (client, queue, store, model):
            handle = await start(client, queue, "c1")
            said = await handle.execute_update("message", {"content": "hi"})
            assert said["code"] == 200
            assert texts(said["added"]) == [("user", "hi"), ("assistant", "You said 'hi'")]
            said = await handle.execute_update("message", {"content": "refund A1"})
            waiting = said["conversation"]["waiting_for"]
            assert waiting["type"] == "approval"
            [call] = waiting["calls"]
            said = await handle.execute_update(
                "approve", {"decisions": [{"call_id": call["id"], "approve": True}]})
            assert texts(said["added"]) == [("tool", "refunded A1"),
                                            ("assistant", "Done: refunded A1"),
                                            ("tool", "Finished")]
            stored = await store.load("c1")
            assert stored is not None
            assert await handle.query("conversation") == stored_view(stored)
            assert [m.content for m in stored.messages] == [
                "Be brief.", "hi", "You said 'hi'", "refund A1", "", "refunded A1",
                "Done: refunded A1", "Finished"]
            assert model.calls == ["hi", "refund A1", "refunded A1"]

    run(go())


def test_a_refused_update_is_rejected_with_the_served_words(temporal: str,
                                                            tmp_path: Path) -> None:
    from temporalio.client import WorkflowUpdateFailedError
    from temporalio.exceptions import ApplicationError

    async def go() -> None:
        async with worker(temporal, tmp_path) as (client, queue, store, _):
            handle = await start(client, queue, "c2")
            await handle.execute_update("message", {"content": "refund B2"})
            with pytest.raises(WorkflowUpdateFailedError) as refused:
                await handle.execute_update("message", {"content": "hello?"})
            cause = refused.value.cause
            assert isinstance(cause, ApplicationError) and cause.type == "Conflict"
            assert cause.message == (
                "an approval is pending: answer it with POST /api/conversations/c2/approvals "
                "before a message")
            stored = await store.load("c2")
            assert stored is not None and [m.content for m in stored.messages][-1] == ""

    run(go())


def test_a_model_error_waits_for_the_retry_update(temporal: str, tmp_path: Path) -> None:
    async def go() -> None:
        async with worker(temporal, tmp_path) as (client, queue, store, model):
            handle = await start(client, queue, "c3")
            said = await handle.execute_update("message", {"content": "fail once"})
            assert said["code"] == 502
            assert said["error"] == "the model server answered 500"
            assert said["conversation"]["waiting_for"] == {
                "type": "retry", "error": "the model server answered 500"}
            assert model.calls == ["fail once"]  # not retried by Temporal
            stored = await store.load("c3", messages=False)
            assert stored is not None and stored.waiting_for == said["conversation"][
                "waiting_for"]

    run(go())


def _history_bytes(description: Any) -> int:
    return int(description.raw_description.workflow_execution_info.history_size_bytes)


def test_history_grows_linearly_in_turns(temporal: str, tmp_path: Path) -> None:
    """Each turn of 1 KB messages adds about the same to the history: never the transcript."""
    async def go() -> list[int]:
        async with worker(temporal, tmp_path) as (client, queue, _, _):
            handle = await start(client, queue, "c4")
            sizes = []
            for turn in range(1, 41):
                await handle.execute_update("message", {"content": f"{turn:04d}" + "x" * 1000})
                if turn in (10, 20, 30, 40):
                    sizes.append(_history_bytes(await handle.describe()))
            return sizes

    sizes = run(go())
    steps = [b - a for a, b in itertools.pairwise(sizes)]
    # by value, the last ten turns would add ~3x what turns 11-20 added (the transcript grows)
    assert max(steps) < 1.15 * min(steps), (sizes, steps)
    # the 1 KB message three times (the Update's input, its result's "added", the write that
    # goes with the model call), the reply, and a bounded overhead of events
    assert steps[-1] / 10 < 7500, steps


def test_the_workflow_continues_as_new_from_the_store(temporal: str, tmp_path: Path) -> None:
    async def go() -> None:
        async with worker(temporal, tmp_path, continue_every=3) as (client, queue, store,
                                                                     model):
            await start(client, queue, "c5")
            handle = client.get_workflow_handle("convo-c5")  # the latest run, each time
            for turn in range(7):
                said = await handle.execute_update("message", {"content": f"t{turn}"})
                assert texts(said["added"]) == [("user", f"t{turn}"),
                                                ("assistant", f"You said 't{turn}'")]
            runs = [w async for w in client.list_workflows("WorkflowId = 'convo-c5'")]
            assert sorted(w.status.name for w in runs) == [
                "CONTINUED_AS_NEW", "CONTINUED_AS_NEW", "RUNNING"]
            assert model.calls == [f"t{turn}" for turn in range(7)]  # nothing made again
            stored = await store.load("c5")
            assert stored is not None and len(stored.messages) == 15
            assert await handle.query("conversation") == stored_view(stored)

    run(go())


async def _runs(client: Any, workflow_id: str) -> list[tuple[str, str]]:
    """The runs of a workflow, first to latest (walked back from the latest through each
    run's start event): ``(run id, status)``."""
    latest = await client.get_workflow_handle(workflow_id).describe()
    runs, run_id = [], latest.run_id
    while run_id:
        handle = client.get_workflow_handle(workflow_id, run_id=run_id)
        runs.append((run_id, (await handle.describe()).status.name))
        history = await handle.fetch_history()
        started = history.events[0].workflow_execution_started_event_attributes
        run_id = started.continued_execution_run_id
    return runs[::-1]


def test_turns_of_queued_messages_count_toward_continue_every(temporal: str,
                                                              tmp_path: Path) -> None:
    """`continue_every=2`: a message's Update and the first queued message the workflow takes
    after it end the first run; the next two queued messages the second; nothing is made
    again."""
    from convo import Message
    from convo._temporal.wire import queued_json
    from convo.serve._stores.base import Queued

    cid = f"cq-{tmp_path.name}"

    async def go() -> tuple[list[tuple[str, str]], list[str], list[tuple[str, str]]]:
        async with worker(temporal, tmp_path, continue_every=2) as (client, queue, store,
                                                                     model):
            await start(client, queue, cid)
            handle = client.get_workflow_handle(f"convo-{cid}")
            await handle.execute_update("message", {"content": "t0"})
            for text in ("q1", "q2", "q3"):
                assert await store.enqueue(cid, Queued(Message("user", text, id=f"m-{text}")),
                                           limit=16)
            await handle.signal("queued", queued_json(Queued(Message("user", "q1",
                                                                     id="m-q1"))))
            runs: list[tuple[str, str]] = []
            for _ in range(600):  # (30 s at most)
                stored = await store.load(cid)
                assert stored is not None
                runs = await _runs(client, f"convo-{cid}")
                if len(stored.messages) == 9 and not stored.queued and len(runs) >= 3:
                    break
                await asyncio.sleep(0.05)
            return runs, model.calls, texts([m.to_dict() for m in stored.messages])

    runs, calls, said = run(go())
    assert [status for _, status in runs] == ["CONTINUED_AS_NEW", "CONTINUED_AS_NEW",
                                              "RUNNING"], runs
    assert calls == ["t0", "q1", "q2", "q3"]
    assert said[1:] == [("user", "t0"), ("assistant", "You said 't0'"),
                        ("user", "q1"), ("assistant", "You said 'q1'"),
                        ("user", "q2"), ("assistant", "You said 'q2'"),
                        ("user", "q3"), ("assistant", "You said 'q3'")]
