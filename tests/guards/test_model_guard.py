"""ModelGuard: a model judges; its verdict is stored with the judged message, and a resume or
a served rebuild never asks the judge again (API.md §27)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from convo import Message, Runner, ScriptedInterface
from convo._runner import Runner as _Runner
from convo.guards import ModelGuard
from convo.models import FunctionModel, MockModel
from convo.serve._engine import Engine
from convo.serve._stores import MemoryStore
from convo.templates import LoopTemplate, ToolingTemplate, UserTemplate

TEMPLATE = LoopTemplate([UserTemplate(), ToolingTemplate([])])


class Judge:
    """A judge that fails anything with "refund" in it, and counts what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.model = FunctionModel(self.judge)

    def judge(self, messages: Sequence[Message], tools: Any) -> str:
        assert len(messages) == 1 and messages[0].role == "user" and not tools
        self.asked.append(messages[0].content)
        if "refund" in messages[0].content.split("The ")[-1]:
            return '{"pass": false, "reason": "talks of refunds"}'
        return "PASS looks fine"


def guards(judge: Judge) -> list[ModelGuard]:
    return [ModelGuard(judge.model, "No talk of refunds.", on="input", name="judge_in"),
            ModelGuard(judge.model, "No talk of refunds.", on="output", name="judge_out")]


def bot(messages: Sequence[Message], tools: Any) -> str:
    return f"echo {messages[-1].content}"


def test_verdicts_are_stored_with_the_judged_message() -> None:
    judge = Judge()
    session = Runner(FunctionModel(bot), TEMPLATE, ScriptedInterface(["hi", "a refund"]),
                     guards=guards(judge)).run()
    hi, echo, refund, sorry = session.messages
    assert hi.metadata["guard"] == {"verdicts": {"judge_in": {"pass": True,
                                                              "reason": "looks fine"}}}
    assert echo.metadata["guard"] == {"verdicts": {"judge_out": {"pass": True,
                                                                 "reason": "looks fine"}}}
    assert refund.metadata["guard"] == {
        "name": "judge_in", "action": "block", "reason": "talks of refunds",
        "verdicts": {"judge_in": {"pass": False, "reason": "talks of refunds"}}}
    assert sorry.content == "Sorry, I can't help with that."
    assert len(judge.asked) == 3
    assert session.outcome.model_calls == 1  # the judge's calls are its own


def test_an_unreadable_verdict_or_a_failed_judge_trips_quoting_it() -> None:
    def failing(messages: Sequence[Message], tools: Any) -> str:
        raise RuntimeError("judge down")

    session = Runner(MockModel(["hello"]), TEMPLATE, ScriptedInterface(["x"]), guards=[
        ModelGuard(MockModel(["maybe?"]), "be nice", on="output", name="a"),
    ]).run()
    assert session.messages[1].metadata["guard"]["reason"] == (
        'the judge\'s reply is not a verdict (expected {"pass": true|false, "reason": ...}): '
        "'maybe?'")
    session = Runner(MockModel(["hello"]), TEMPLATE, ScriptedInterface(["x"]), guards=[
        ModelGuard(FunctionModel(failing), "be nice", on="output"),
    ]).run()
    assert session.messages[1].metadata["guard"]["reason"] == (
        "the guard's model failed: RuntimeError: judge down")
    assert session.messages[1].metadata["guard"]["name"] == "model_guard"


def test_a_resume_never_asks_the_judge_again() -> None:
    judge = Judge()
    first = Runner(FunctionModel(bot), TEMPLATE, ScriptedInterface(["hi", "a refund"]),
                   guards=guards(judge)).run()
    assert len(judge.asked) == 3  # hi, its echo, the refund (blocked: no reply to judge)
    resumed = Runner(FunctionModel(bot), TEMPLATE, ScriptedInterface(["bye"]),
                     guards=guards(judge)).resume(first)
    assert len(judge.asked) == 5  # only "bye" and its echo are new
    assert resumed.messages[:4] == first.messages[:4]
    assert [m.metadata.get("guard") for m in resumed.messages[:4]] == \
        [m.metadata.get("guard") for m in first.messages[:4]]
    assert [m.content for m in resumed.messages[4:]] == ["bye", "echo bye"]


def test_a_served_rebuild_never_asks_the_judge_again() -> None:
    judge = Judge()

    async def main() -> None:
        engine = Engine(_Runner(FunctionModel(bot), TEMPLATE, raise_errors=False,
                                guards=guards(judge)), MemoryStore())
        _, body = await engine.create({}, None)
        cid = body["id"]
        for said in ("hi", "a refund"):
            async with engine.turn(cid) as live:
                await engine.message(live, said, None)
        assert len(judge.asked) == 3
        engine._cache.clear()  # the next turn rebuilds the conversation from the store
        async with engine.turn(cid) as live:
            status, body = await engine.message(live, "bye", None)
        assert status == 200
        assert len(judge.asked) == 5
        assert [m["content"] for m in body["messages"]] == [
            "hi", "echo hi", "a refund", "Sorry, I can't help with that.", "bye", "echo bye"]

    asyncio.run(main())
