"""kill -9 of a `convo worker` in the middle of a tool: another worker finishes the turn, and
the Update that was waiting answers as if nothing had happened (no client retry). The tool
runs again under the same call id (its result was not stored); the model call whose reply was
stored is not made again."""

from __future__ import annotations

import asyncio
from pathlib import Path

from temporal_kit import Worker, until


def test_a_worker_killed_mid_tool_is_survived_without_a_retry(temporal: str,
                                                              tmp_path: Path) -> None:
    from temporalio.client import Client, WorkflowUpdateStage

    queue = f"kill-{tmp_path.name}"
    first = Worker(temporal, tmp_path, queue)
    second: Worker | None = None
    try:
        async def go() -> dict[str, object]:
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
            second = await asyncio.to_thread(Worker, temporal, tmp_path, queue)
            (tmp_path / "gate").touch()
            said: dict[str, object] = await update.result()
            return said

        said = asyncio.run(go())
    finally:
        first.stop()
        if second is not None:
            second.stop()
    assert said["code"] == 200
    assert [(m["role"], m["content"]) for m in said["added"]] == [  # type: ignore[attr-defined]
        ("user", "tool"), ("assistant", ""), ("tool", "noted hi"), ("assistant", "ok, noted hi"),
        ("tool", "Finished")]
    calls = (tmp_path / "calls.txt").read_text().splitlines()
    assert calls == ["model tool", "tool t2", "tool t2"]  # the tool again, the model not
