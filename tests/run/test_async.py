"""The async runner at scale: concurrent tools, timeouts, cancellation, many sessions.

Nothing here is timed. Concurrency is proven by tools that can only finish when they run at
the same time (each waits for something only the other does); the one timeout is a bound on
an event that is never set, not a measurement.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from convo import Message, Runner, RunStatus, Session, ToolCall
from convo.models import FunctionModel, MockModel
from convo.models._base import ToolSchemas
from convo.templates import LinearTemplate, SystemTemplate, ToolingTemplate, UserTemplate
from convo.tools import tool

# A failing test must not hang the suite: every wait below is bounded by this.
BOUND_S = 10.0


def _conversation(*tools: Any) -> LinearTemplate:
    return LinearTemplate([SystemTemplate("You are helpful."), UserTemplate("Go."),
                           ToolingTemplate(list(tools))])


def _calls(*names: str) -> Message:
    return Message("assistant", "", tool_calls=tuple(
        ToolCall(f"call_{i}", name, {}) for i, name in enumerate(names, 1)))


def _tool_messages(session: Session) -> list[tuple[str | None, str | None, str]]:
    return [(m.tool_call_id, m.name, m.content) for m in session.messages if m.role == "tool"]


def _other_tasks() -> set[asyncio.Task[Any]]:
    return asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]


# -- concurrent tools in one batch ------------------------------------------------------------

def test_async_tools_in_one_batch_run_concurrently_and_answer_in_call_order() -> None:
    finished: list[str] = []

    async def main() -> Session:
        first_waiting, second_done = asyncio.Event(), asyncio.Event()

        # Run one after the other, neither could finish: first waits for second, and second
        # waits until first is already waiting.
        @tool(timeout=BOUND_S)
        async def first() -> str:
            """Waits for the second tool."""
            first_waiting.set()
            await second_done.wait()
            finished.append("first")
            return "first result"

        @tool(timeout=BOUND_S)
        async def second() -> str:
            """Waits for the first tool to be waiting."""
            await first_waiting.wait()
            finished.append("second")
            second_done.set()
            return "second result"

        model = MockModel([_calls("first", "second"), "Both done."])
        session = await Runner(model, _conversation(first, second)).arun()
        model.assert_complete()
        return session

    session = asyncio.run(main())
    assert finished == ["second", "first"]  # they finished in the opposite order ...
    assert _tool_messages(session) == [  # ... and are answered in call order
        ("call_1", "first", "first result"),
        ("call_2", "second", "second result"),
    ]
    assert [m.role for m in session.messages] == [
        "system", "user", "assistant", "tool", "tool", "assistant"]
    assert session.outcome is not None
    assert session.outcome.status is RunStatus.COMPLETED
    assert session.outcome.turn is not None
    assert session.outcome.turn.response == "Both done."


def test_sync_and_async_tools_mixed_in_one_batch_keep_call_order() -> None:
    @tool
    def plain(x: int) -> int:
        """Doubles x."""
        return 2 * x

    @tool
    async def awaited(x: int) -> int:
        """Triples x."""
        await asyncio.sleep(0)
        return 3 * x

    reply = Message("assistant", "", tool_calls=(
        ToolCall("a", "awaited", {"x": 1}), ToolCall("b", "plain", {"x": 2}),
        ToolCall("c", "awaited", {"x": 3}), ToolCall("d", "missing", {}),
    ))
    model = MockModel([reply, "ok"])
    session = asyncio.run(Runner(model, _conversation(plain, awaited)).arun())
    assert _tool_messages(session) == [
        ("a", "awaited", "3"), ("b", "plain", "4"), ("c", "awaited", "9"),
        ("d", "missing", "Error: there is no tool named 'missing'; available tools: "
                         "plain, awaited"),
    ]


# -- per-tool timeout -------------------------------------------------------------------------

def test_a_tool_timeout_becomes_an_error_result_and_the_loop_goes_on() -> None:
    async def main() -> tuple[Session, set[asyncio.Task[Any]]]:
        never = asyncio.Event()

        @tool(timeout=0.05)
        async def stuck() -> str:
            """Never finishes."""
            await never.wait()
            return "unreachable"

        model = MockModel([_calls("stuck"), "Sorry, the tool timed out."])
        session = await Runner(model, _conversation(stuck)).arun()
        model.assert_complete()
        return session, _other_tasks()

    session, left = asyncio.run(main())
    assert left == set()
    tool_message = session.messages[3]
    assert tool_message.role == "tool"
    assert tool_message.tool_call_id == "call_1"
    assert tool_message.content == (
        "Error: tool 'stuck' failed: TimeoutError: tool 'stuck' timed out after 0.05 s")
    assert tool_message.metadata == {"error": True}
    assert session.outcome is not None
    assert session.outcome.status is RunStatus.COMPLETED
    assert session.outcome.model_calls == 2


def test_a_timeout_of_one_tool_does_not_cancel_the_others_in_its_batch() -> None:
    async def main() -> Session:
        never = asyncio.Event()

        @tool(timeout=0.05)
        async def stuck() -> str:
            """Never finishes."""
            await never.wait()
            return "unreachable"

        @tool
        async def quick() -> str:
            """Finishes."""
            return "quick result"

        model = MockModel([_calls("stuck", "quick"), "done"])
        return await Runner(model, _conversation(stuck, quick)).arun()

    session = asyncio.run(main())
    assert _tool_messages(session) == [
        ("call_1", "stuck",
         "Error: tool 'stuck' failed: TimeoutError: tool 'stuck' timed out after 0.05 s"),
        ("call_2", "quick", "quick result"),
    ]


# -- cancellation -----------------------------------------------------------------------------

def _cancel_when(started: asyncio.Event, session: Session, runner: Runner) -> Any:
    async def main() -> set[asyncio.Task[Any]]:
        task = asyncio.create_task(runner.arun(session))
        await asyncio.wait_for(started.wait(), BOUND_S)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0)  # let anything the run left behind get scheduled
        return _other_tasks()

    return main()


def test_cancelling_arun_during_a_model_call_gives_stopped_and_an_intact_session() -> None:
    started = asyncio.Event()
    cancelled: list[str] = []

    async def hang(messages: Sequence[Message], tools: ToolSchemas) -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append("model")
            raise
        return "unreachable"

    session = Session(state={"who": "Ada"})
    runner = Runner(FunctionModel(hang), _conversation())
    assert asyncio.run(_cancel_when(started, session, runner)) == set()
    assert cancelled == ["model"]
    assert [(m.role, m.content) for m in session.messages] == [
        ("system", "You are helpful."), ("user", "Go.")]
    assert session.state == {"who": "Ada"}
    assert session.turns == []
    assert session.outcome is not None
    assert session.outcome.status is RunStatus.STOPPED
    assert session.outcome.messages == 2
    assert session.outcome.model_calls == 1
    assert session.outcome.error is None
    # The session is still a valid transcript.
    assert Session.from_json(session.to_json()) == session


def test_cancelling_arun_while_tools_run_cancels_every_tool_and_leaves_no_task() -> None:
    started = asyncio.Event()
    waiting: set[str] = set()
    cancelled: list[str] = []

    def make(name: str) -> Any:
        async def wait_forever() -> str:
            waiting.add(name)
            if waiting == {"left", "right"}:
                started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.append(name)
                raise
            return "unreachable"

        wait_forever.__doc__ = "Waits forever."
        return tool(name=name)(wait_forever)

    model = MockModel([_calls("left", "right")])
    session = Session()
    runner = Runner(model, _conversation(make("left"), make("right")))
    assert asyncio.run(_cancel_when(started, session, runner)) == set()
    assert sorted(cancelled) == ["left", "right"]
    assert [m.role for m in session.messages] == ["system", "user", "assistant"]
    assert session.messages[2].tool_calls == _calls("left", "right").tool_calls
    assert session.outcome is not None
    assert session.outcome.status is RunStatus.STOPPED
    assert session.outcome.messages == 3


def test_cancellation_reaches_on_event_as_a_stopped_run() -> None:
    started = asyncio.Event()
    ended: list[Any] = []

    async def hang(messages: Sequence[Message], tools: ToolSchemas) -> str:
        started.set()
        await asyncio.Event().wait()
        return "unreachable"

    def on_event(event: Any) -> None:
        if type(event).__name__ == "RunEnded":
            ended.append(event.outcome.status)

    session = Session()
    runner = Runner(FunctionModel(hang), _conversation(), on_event=on_event)
    assert asyncio.run(_cancel_when(started, session, runner)) == set()
    assert ended == [RunStatus.STOPPED]


# -- many sessions, one runner ----------------------------------------------------------------

def test_a_thousand_concurrent_aruns_on_one_runner_have_independent_sessions() -> None:
    n = 1000
    arrived = 0
    all_in_flight = asyncio.Event()

    async def reply(messages: Sequence[Message], tools: ToolSchemas) -> str:
        nonlocal arrived
        last = messages[-1]
        if last.role == "user":
            # Hold every first call until all n conversations are in flight at once.
            arrived += 1
            if arrived == n:
                all_in_flight.set()
            await all_in_flight.wait()
            number = last.content.removeprefix("Look up ")
            return f"{{lookup(number={number})}}"
        return f"The answer is {last.content}."

    @tool
    async def lookup(number: int) -> str:
        """Looks a number up."""
        await asyncio.sleep(0)
        return f"<{number * number}>"

    template = LinearTemplate([SystemTemplate("You look numbers up."),
                               UserTemplate("Look up {{ number }}"),
                               ToolingTemplate([lookup])])
    model = FunctionModel(reply)
    runner = Runner(model, template)

    async def main() -> list[Session]:
        sessions = [Session(state={"number": i}) for i in range(n)]
        runs = asyncio.gather(*(runner.arun(s) for s in sessions))
        returned = await asyncio.wait_for(runs, BOUND_S * 6)
        assert all(r is s for r, s in zip(returned, sessions, strict=True))
        assert _other_tasks() == set()
        return sessions

    sessions = asyncio.run(main())
    assert model.calls == 2 * n
    call_ids: set[str] = set()
    for i, session in enumerate(sessions):
        assert session.state == {"number": i}
        assert [m.role for m in session.messages] == [
            "system", "user", "assistant", "tool", "assistant"]
        _system, user, asked, answered, final = session.messages
        assert user.content == f"Look up {i}"
        (call,) = asked.tool_calls
        assert (call.name, call.arguments) == ("lookup", {"number": i})
        assert (answered.tool_call_id, answered.content) == (call.id, f"<{i * i}>")
        assert final.content == f"The answer is <{i * i}>."
        call_ids.add(call.id)
        assert session.outcome is not None
        assert session.outcome.status is RunStatus.COMPLETED
        assert (session.outcome.messages, session.outcome.model_calls) == (5, 2)
        assert len(session.turns) == 1
    # FunctionModel's ids continue each conversation's own: every session has its call_1.
    assert call_ids == {"call_1"}
