"""kill -9 of a `convo worker` in the middle of a tool: another worker finishes the turn, and
the Update that was waiting answers as if nothing had happened (no client retry). The tool
runs again under the same call id (its result was not stored); the model call whose reply was
stored is not made again. The workers' heartbeat timeout is short (``--heartbeat-timeout 3``):
the turn goes on after it, not after the default 10 s."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

from temporal_kit import SHORT_HEARTBEAT, TEMPLATE, Worker, heartbeat_timeouts, until

from convo import FunctionModel
from convo._runner import Runner
from convo.serve._stores import open_store


def test_a_worker_killed_mid_tool_is_survived_without_a_retry(temporal: str,
                                                              tmp_path: Path) -> None:
    from temporalio.client import Client, WorkflowUpdateStage

    queue = f"kill-{tmp_path.name}"
    first = Worker(temporal, tmp_path, queue, options=SHORT_HEARTBEAT)
    second: Worker | None = None
    try:
        async def go() -> tuple[dict[str, object], dict[str, set[float]]]:
            nonlocal second
            client = await Client.connect(temporal)
            handle = await client.start_workflow("ConvoConversation",
                                                 {"conversation_id": "k1"},
                                                 id="convo-k1", task_queue=queue)
            update = await handle.start_update("message", {"content": "tool"},
                                               wait_for_stage=WorkflowUpdateStage.ACCEPTED)
            await asyncio.to_thread(until, (tmp_path / "entered").exists,
                                    "the tool never started")
            first.kill()  # mid-tool: the tool waits at the gate
            (tmp_path / "entered").unlink()
            second = await asyncio.to_thread(Worker, temporal, tmp_path, queue,
                                             options=SHORT_HEARTBEAT)
            (tmp_path / "gate").touch()
            said: dict[str, object] = await update.result()
            return said, await heartbeat_timeouts(handle)

        said, timeouts = asyncio.run(go())
    finally:
        first.stop()
        if second is not None:
            second.stop()
    assert timeouts == {"convo.model": {3.0}, "convo.tools": {3.0}}
    assert said["code"] == 200
    assert [(m["role"], m["content"]) for m in said["added"]] == [  # type: ignore[attr-defined]
        ("user", "tool"), ("assistant", ""), ("tool", "noted hi"), ("assistant", "ok, noted hi"),
        ("tool", "Finished")]
    calls = (tmp_path / "calls.txt").read_text().splitlines()
    assert calls == ["model tool", "tool t2", "tool t2"]  # the tool again, the model not


def test_a_dead_workers_sticky_workflow_tasks_move_after_the_heartbeat_timeout(
        temporal: str, tmp_path: Path) -> None:
    # A workflow task left on a killed worker's sticky queue waits there this long before any
    # worker takes it: the same bound as its calls' heartbeats (the SDK's own default is 10 s).
    from temporalio.client import Client

    from convo._temporal.bots import Bot
    from convo._temporal.worker import make_worker

    async def sticky(**bot: float) -> timedelta:
        client = await Client.connect(temporal)
        store = open_store(f"sqlite:///{tmp_path / 'convo.db'}")
        made = make_worker(client, Bot(Runner(FunctionModel(lambda m, t: "hi"), TEMPLATE),
                                       store, **bot))
        timeout: timedelta = made.config()["sticky_queue_schedule_to_start_timeout"]
        return timeout

    assert asyncio.run(sticky(heartbeat_s=3.0)) == timedelta(seconds=3)
    assert asyncio.run(sticky()) == timedelta(seconds=10)
