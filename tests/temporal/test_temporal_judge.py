"""A ModelGuard's judge on the Temporal engine: its model call is an activity (``convo.judge``),
recorded in the workflow's history, so a replay of the workflow (a worker that lost its cache,
a history replayed) does not ask the judge again: one judge call per judged message."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from temporal_kit import start, worker

from convo import (
    AssistantTemplate,
    FunctionModel,
    LinearTemplate,
    Message,
    ModelError,
    ModelGuard,
    SystemTemplate,
    UserTemplate,
)

TEMPLATE = LinearTemplate([SystemTemplate("Be brief."), UserTemplate(), AssistantTemplate(),
                           UserTemplate(), AssistantTemplate(), UserTemplate(),
                           AssistantTemplate()])
FAILED = "the guard's model failed: ModelError: the judge's server answered 503"


class Judge:
    """A judge that records what it was asked: replies that say "secret" fail; asked about
    "broken", its model fails."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, messages: Sequence[Message], tools: Any) -> str:
        text = str(messages[-1].content)
        reply = text.rsplit("The assistant reply:\n", 1)[1].split("\n\n")[0]
        self.asked.append(reply)
        if "broken" in reply:
            raise ModelError("the judge's server answered 503")
        return '{"pass": false, "reason": "a secret"}' if "secret" in reply else \
            '{"pass": true, "reason": "fine"}'


def _replies(messages: Sequence[Message], tools: Any) -> str:
    return f"the {messages[-1].content}"


def test_a_model_guards_judge_is_an_activity_that_a_replay_does_not_repeat(
        temporal: str, tmp_path: Path) -> None:
    from temporalio.worker import Replayer
    from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

    from convo._temporal.bots import bot, register
    from convo._temporal.workflow import ConvoConversation

    judge = Judge()
    guard = ModelGuard(FunctionModel(judge), "no secrets", on="output", name="judge")

    async def go() -> tuple[list[dict[str, Any]], list[str], list[str]]:
        async with worker(temporal, tmp_path, template=TEMPLATE, model=_replies,
                          runner={"guards": [guard]}) as (client, queue, _, _):
            handle = await start(client, queue, "j1")
            said = [await handle.execute_update("message", {"content": said})
                    for said in ("weather", "broken", "secret")]
            history = await handle.fetch_history()
            before = list(judge.asked)
            undo = register("replay-None", bot(queue))  # (the queue a Replayer runs on)
            try:
                await Replayer(workflows=[ConvoConversation], workflow_runner=(
                    SandboxedWorkflowRunner(restrictions=SandboxRestrictions.default
                                            .with_passthrough_modules("convo")))
                               ).replay_workflow(history)
            finally:
                undo()
            types = [e.activity_task_scheduled_event_attributes.activity_type.name
                     for e in history.events
                     if e.HasField("activity_task_scheduled_event_attributes")]
            assert judge.asked == before  # the replay asked the judge nothing
            return said, before, types

    said, asked, types = asyncio.run(go())
    assert asked == ["the weather", "the broken", "the secret"]  # once per judged reply
    assert [t for t in types if t in ("convo.model", "convo.judge")] == [
        "convo.model", "convo.judge"] * 3
    assert [s["code"] for s in said] == [200, 200, 200]
    replies = [s["added"][-1] for s in said]
    assert [(r["role"], r["content"]) for r in replies] == [
        ("assistant", "the weather"), ("assistant", "Sorry, I can't help with that."),
        ("assistant", "Sorry, I can't help with that.")]
    # The verdicts, stored with the replies they judged (a failed judge's: as in one process).
    assert replies[0]["metadata"]["guard"] == {
        "verdicts": {"judge": {"pass": True, "reason": "fine"}}}
    assert replies[1]["metadata"]["guard"] == {
        "name": "judge", "action": "block", "reason": FAILED,
        "verdicts": {"judge": {"pass": False, "reason": FAILED}}}
    assert replies[2]["metadata"]["guard"] == {
        "name": "judge", "action": "block", "reason": "a secret",
        "verdicts": {"judge": {"pass": False, "reason": "a secret"}}}
    assert said[-1]["conversation"]["status"] == "ended"
