"""`convo worker` runs a bot file's workflows in Temporal's default workflow sandbox: convo's
code and the bot's are imported again inside it, so a template that reads the clock, random
numbers or a file in the pump meets the sandbox's ``RestrictedWorkflowAccessError`` (its turn
answers 500 with it and the conversation ends, as a template's error does), while a template
that reads none runs as always."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from temporal_kit import Worker

SANDBOX_BOT = Path(__file__).with_name("sandbox_bot.py")
REFUSED = ("RestrictedWorkflowAccessError: Cannot access {} from inside a workflow. If this is "
           "code from a module not used in a workflow or known to only be used "
           "deterministically from a workflow, mark the import as pass through.")


def test_the_pump_runs_in_temporals_default_sandbox(temporal: str, tmp_path: Path) -> None:
    from temporalio.client import Client

    queue = f"sandbox-{tmp_path.name}"
    worker = Worker(temporal, tmp_path, queue, bot=SANDBOX_BOT)
    try:
        async def go() -> dict[str, Any]:
            client = await Client.connect(temporal)
            said = {}
            for content in ("hello", "clock", "random", "file"):
                handle = await client.start_workflow(
                    "ConvoConversation", {"conversation_id": f"s-{content}"},
                    id=f"convo-s-{content}", task_queue=queue)
                said[content] = await handle.execute_update("message", {"content": content})
            return said

        said = asyncio.run(go())
    finally:
        worker.stop()
    log = Path(worker.log.name).read_text()
    started = [line for line in log.splitlines() if line.startswith("convo worker: ")]
    assert len(started) == 1 and started[0].endswith("; workflow sandbox: default"), log
    echoed = said.pop("hello")
    assert echoed["code"] == 200
    assert [(m["role"], m["content"]) for m in echoed["added"]] == [
        ("user", "hello"), ("assistant", "You said 'hello'")]
    read = {"clock": "time.time.__call__", "random": "random.random.__call__",
            "file": "__builtins__.open"}
    assert {content: (s["code"], s["error"], s["conversation"]["status"],
                      s["conversation"]["outcome"]["error"], [m["content"] for m in s["added"]])
            for content, s in said.items()} == {
        content: (500, REFUSED.format(name), "ended", REFUSED.format(name), [content])
        for content, name in read.items()}
