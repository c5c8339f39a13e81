"""A deploy with a changed template: a conversation waiting for the user, whose workflow
continued as new after its last turn, goes on on the new template (its run is rebuilt from the
store on the new worker); nothing stored is made again."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from temporal_kit import refund, start, texts, worker
from weather_tools import chat_loop

from convo import FinishTool, FunctionModel, tool
from convo._runner import Runner


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: shipped"


NEW = chat_loop(refund, lookup, FinishTool())


def test_a_waiting_conversation_goes_on_on_the_new_template(temporal: str,
                                                            tmp_path: Path) -> None:
    queue = f"deploy-{tmp_path.name}"

    async def go() -> None:
        async with worker(temporal, tmp_path, queue=queue, continue_every=1) as (
                client, _, _, old_model):
            await start(client, queue, "d1")
            handle = client.get_workflow_handle("convo-d1")
            said = await handle.execute_update("message", {"content": "tools?"})
            assert texts(said["added"])[-1] == ("assistant", "finish, refund")
        # the old worker is gone; the new one has another template
        async with worker(temporal, tmp_path, queue=queue, continue_every=1,
                          template=NEW) as (client, _, store, new_model):
            handle = client.get_workflow_handle("convo-d1")
            said = await handle.execute_update("message", {"content": "tools?"})
            assert texts(said["added"]) == [("user", "tools?"),
                                            ("assistant", "finish, lookup, refund")]
            assert old_model.calls == ["tools?"]
            assert new_model.calls == ["tools?"]  # the first turn's call was not made again
            stored = await store.load("d1")
            assert stored is not None
            assert [m.content for m in stored.messages] == [
                "Be brief.", "tools?", "finish, refund", "tools?", "finish, lookup, refund"]

    asyncio.run(go())


def _noted(session: Any) -> None:
    session.state["hooked"] = session.state.get("hooked", 0) + 1


# A structural change: each agent turn now runs a hook first (an activity the conversation's
# old run never scheduled: Temporal cannot replay that run on this template).
HOOKED = chat_loop(refund, lookup, FinishTool(), before=_noted)


def test_a_structural_change_goes_on_from_the_store(temporal: str, tmp_path: Path) -> None:
    """The conversation's run started on the old template (no continue-as-new since): its
    next message on a worker of a template that cannot replay it (NondeterminismError) is
    answered all the same, by a new run rebuilt from the store on the new template."""
    from convo._temporal.engine import TemporalEngine

    queue = f"structural-{tmp_path.name}"

    async def go() -> None:
        async with worker(temporal, tmp_path, queue=queue) as (client, _, _, old_model):
            await start(client, queue, "d3")
            handle = client.get_workflow_handle("convo-d3")
            said = await handle.execute_update("message", {"content": "tools?"})
            assert texts(said["added"])[-1] == ("assistant", "finish, refund")
        async with worker(temporal, tmp_path, queue=queue, template=HOOKED) as (
                client, _, store, new_model):
            engine = TemporalEngine(Runner(FunctionModel(new_model), HOOKED), store,
                                    address=temporal, task_queue=queue)
            async with engine.turn("d3") as live:
                code, body = await engine.message(live, "tools?", None)
            assert code == 200, body
            assert texts(body["added"]) == [("user", "tools?"),
                                            ("assistant", "finish, lookup, refund")]
            assert body["state"] == {"hooked": 1}
            assert (old_model.calls, new_model.calls) == (["tools?"], ["tools?"])
            runs = [w async for w in client.list_workflows("WorkflowId = 'convo-d3'")]
            assert sorted(w.status.name for w in runs) == ["FAILED", "RUNNING"]

    asyncio.run(go())
