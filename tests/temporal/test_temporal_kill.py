"""kill -9 of a `convo worker` in the middle of a tool: another worker finishes the turn, and
the Update that was waiting answers as if nothing had happened (no client retry). The tool
runs again under the same call id (its result was not stored); the model call whose reply was
stored is not made again."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BOT = ROOT / "tests" / "serve_fixtures" / "gated_bot.py"


class Worker:
    """A `convo worker` process of the gated bot, ready once it said so on stderr."""

    def __init__(self, address: str, tmp_path: Path, queue: str) -> None:
        env = {**os.environ, "CONVO_TEST_DIR": str(tmp_path)}
        env.pop("OPENAI_API_KEY", None)
        env.pop("OPENAI_BASE_URL", None)
        self.log = (tmp_path / f"worker-{time.monotonic_ns()}.log").open("w+")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "convo", "worker", str(BOT), "--temporal", address,
             "--task-queue", queue, "--store", f"sqlite:///{tmp_path / 'convo.db'}"],
            env=env, stdout=subprocess.DEVNULL, stderr=self.log, stdin=subprocess.DEVNULL)
        _until(lambda: "workflow sandbox: default" in Path(self.log.name).read_text(),
               f"the worker did not start: {Path(self.log.name).read_text()}")

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()


def _until(ready: object, why: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not ready():  # type: ignore[operator]
        if time.monotonic() > deadline:
            pytest.fail(why)
        time.sleep(0.05)


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
            await asyncio.to_thread(_until, (tmp_path / "entered").exists,
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
