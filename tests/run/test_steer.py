"""``Runner.steer`` / ``asteer`` (API.md §26): a message handed to a run in progress is taken
at the turn's next safe point (before the model call that follows tool results), or as the
reply to the next ``AskUser`` when the turn ends first; ``Session.queued`` holds it until then,
is kept in a session's JSON, and a resumed run takes it; a replay takes a steered message from
the saved messages without calling the model again."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from convo import Message, Runner, ScriptedInterface, Session
from convo.models import FunctionModel
from convo.templates import LinearTemplate, LoopTemplate, ToolingTemplate, UserTemplate
from convo.tools import FinishTool, tool


class Steering:
    """A bot whose ``lookup`` tool steers ``text`` into the run (as another thread would,
    while the tool runs); ``seen``: each model request's messages."""

    def __init__(self, text: str = "the order is A7", *, ends: bool = False) -> None:
        self.seen: list[list[tuple[str, str]]] = []
        self.session = Session()
        self.ends = ends

        @tool
        def lookup(q: str) -> str:
            """Look something up."""
            self.runner.steer(self.session, text)
            return f"found {q}"

        self.template = LinearTemplate([LoopTemplate([UserTemplate(), ToolingTemplate(
            [lookup, FinishTool()])])])
        self.runner = Runner(FunctionModel(self.reply), self.template,
                             ScriptedInterface(["look X"]))

    def reply(self, messages: Sequence[Message], tools: Any) -> str:
        self.seen.append([(m.role, m.text) for m in messages])
        last = messages[-1]
        if last.role == "user" and last.text.startswith("look "):
            return f"{{lookup(q='{last.text[5:]}')}}" + (" {finish()}" if self.ends else "")
        return f"re: {last.text}"


def said(session: Session) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in session.messages]


def test_a_steered_message_is_seen_by_the_next_model_call_of_the_turn() -> None:
    bot = Steering()
    session = bot.runner.run(bot.session)
    assert session is bot.session
    assert bot.seen[1][-3:] == [("assistant", ""), ("tool", "found X"),
                                ("user", "the order is A7")]
    assert said(session) == [("user", "look X"), ("assistant", ""), ("tool", "found X"),
                             ("user", "the order is A7"), ("assistant", "re: the order is A7")]
    assert len(bot.seen) == 2 and session.queued == []
    assert session.turns[0].response == "re: the order is A7"  # one turn, not ended there


def test_asteer_hands_a_message_to_arun() -> None:
    bot = Steering()

    @tool
    async def lookup(q: str) -> str:
        """Look something up."""
        await bot.runner.asteer(bot.session, "also B")
        return f"found {q}"

    bot.runner.template = LinearTemplate([LoopTemplate([UserTemplate(), ToolingTemplate(
        [lookup, FinishTool()])])])
    session = asyncio.run(bot.runner.arun(bot.session))
    assert said(session)[3:] == [("user", "also B"), ("assistant", "re: also B")]


def test_steering_a_session_with_no_run_in_progress_is_an_error() -> None:
    bot = Steering()
    with pytest.raises(RuntimeError, match="no run of this runner is in progress on this "
                                           "session"):
        bot.runner.steer(bot.session, "hello?")
    bot.runner.run(bot.session)
    with pytest.raises(RuntimeError):
        bot.runner.steer(Session(), "another session")
    assert bot.session.queued == []


def test_a_steer_that_meets_a_turn_ending_batch_is_the_next_asks_reply() -> None:
    bot = Steering(ends=True)
    session = bot.runner.run(bot.session)
    assert said(session) == [("user", "look X"), ("assistant", ""), ("tool", "found X"),
                             ("tool", "Finished"), ("user", "the order is A7"),
                             ("assistant", "re: the order is A7")]


def test_queued_messages_are_kept_in_json_and_taken_by_a_resumed_run() -> None:
    bot = Steering()
    saved = Session([Message("user", "look X")])
    saved.queued.append(Message("user", "then Y"))
    again = Session.from_json(saved.to_json())
    assert [m.text for m in again.queued] == ["then Y"]
    assert "queued" not in Session().to_dict()  # nothing queued: as before
    session = bot.runner.resume(again)
    assert said(session)[:2] == [("user", "look X"), ("assistant", "")]
    assert ("user", "then Y") in said(session)


def test_a_replay_takes_the_steered_message_from_the_saved_messages() -> None:
    bot = Steering()
    first = bot.runner.run(bot.session)
    calls = len(bot.seen)
    replayed = Runner(FunctionModel(bot.reply), bot.template,
                      ScriptedInterface([])).resume(first)
    assert said(replayed) == said(first)
    assert len(bot.seen) == calls  # no model call made again


def test_two_runs_on_one_session_keep_it_steerable_until_the_last_ends() -> None:
    # Each run is registered on its own: the first to end leaves the other steerable.
    calls = iter(["{hold(name='long')}", "{hold(name='short')}"])

    def reply(messages: Sequence[Message], tools: Any) -> str:
        return next(calls, "done")

    async def main() -> Session:
        waiting, gate = asyncio.Event(), asyncio.Event()

        @tool
        async def hold(name: str) -> str:
            """Hold the run until let go (the long one)."""
            if name == "long":
                waiting.set()
                await gate.wait()
            return name

        session = Session()
        runner = Runner(FunctionModel(reply), ToolingTemplate([hold]))
        first = asyncio.create_task(runner.arun(session))
        await waiting.wait()
        await runner.arun(session)  # the second run, to its end
        runner.steer(session, "still there?")  # the first is still in progress
        gate.set()
        await first
        with pytest.raises(RuntimeError, match="no run of this runner is in progress"):
            runner.steer(session, "anyone?")
        return session

    session = asyncio.run(main())
    assert ("user", "still there?") in said(session)


def test_a_run_that_failed_is_no_longer_steerable() -> None:
    def reply(messages: Sequence[Message], tools: Any) -> str:
        raise ValueError("down")

    runner = Runner(FunctionModel(reply), ToolingTemplate([]))
    session = Session()
    with pytest.raises(ValueError, match="down"):
        runner.run(session)
    with pytest.raises(RuntimeError, match="no run of this runner is in progress"):
        runner.steer(session, "hello?")
