"""Retry budgets (ToolRetry, ``@tool(retries=N)``) and the small fixes of the peers' port:
``max_iterations=None``, Enum members in ``execute``, sync tool timeouts, Jinja errors that
are also jinja2's."""

from __future__ import annotations

import asyncio
import enum
import threading

import pytest

from convo import (
    DefinitionError,
    RenderError,
    Runner,
    RunStatus,
    Session,
    TemplateSyntaxError,
    ToolDefinitionError,
    ToolRetry,
)
from convo.models import MockModel
from convo.templates import LinearTemplate, SystemTemplate, ToolingTemplate, UserTemplate
from convo.tools import ToolContext, tool

ATTEMPTS: list[int] = []


@tool(retries=2)
def even(ctx: ToolContext, n: int) -> str:
    """Accepts even numbers only."""
    ATTEMPTS.append(ctx.retry)
    if n % 2:
        raise ToolRetry(f"{n} is odd; pass an even number")
    return f"{n} is fine"


def _turn(tools: list[object], replies: list[str], **kw: object) -> Session:
    model = MockModel(replies)
    session = Runner(model, LinearTemplate([UserTemplate("Go."),
                                            ToolingTemplate(tools, **kw)])).run()  # type: ignore[arg-type]
    model.assert_complete()
    return session


def test_tool_retry_asks_the_model_again_with_the_message() -> None:
    ATTEMPTS.clear()
    session = _turn([even], ["{even(n=3)}", "{even(n=4)}", "Done."])
    assert [m.content for m in session.messages if m.role == "tool"] == [
        "Error: 3 is odd; pass an even number (fix this and call 'even' again)",
        "4 is fine",
    ]
    assert session.messages[2].metadata == {"error": True}
    assert ATTEMPTS == [0, 1]  # ctx.retry counts the failures before this call
    assert session.turns[-1].status == RunStatus.COMPLETED


def test_retries_bound_consecutive_failures_then_the_turn_ends_with_a_note() -> None:
    ATTEMPTS.clear()
    session = _turn([even], ["{even(n=1)}", "{even(n='x')}", "{even(n=5)}"])
    turn = session.turns[-1]
    assert ATTEMPTS == [0, 2]  # the bad argument never reached the function
    assert (turn.status, turn.iterations, turn.done) == (RunStatus.ERROR, 3, False)
    assert turn.note == (
        "tool 'even' failed 3 times in a row, more than its retries=2 allow; last: Error: 5 is "
        "odd; pass an even number (fix this and call 'even' again)")
    assert session.outcome is not None
    assert session.outcome.describe() == (
        f"error: the last turn failed: {turn.note} (7 messages, 3 model calls)")


def test_a_success_resets_the_count() -> None:
    ATTEMPTS.clear()
    session = _turn([even], ["{even(n=1)}", "{even(n=1)}", "{even(n=2)}", "{even(n=1)}",
                             "{even(n=1)}", "Done."])
    assert ATTEMPTS == [0, 1, 2, 0, 1]
    assert session.turns[-1].status == RunStatus.COMPLETED


def test_retries_zero_ends_the_turn_at_the_first_failure() -> None:
    @tool(retries=0)
    def boom() -> str:
        """Fails."""
        raise RuntimeError("kaput")

    session = _turn([boom], ["{boom()}"])
    assert session.turns[-1].note == (
        "tool 'boom' failed 1 time in a row, more than its retries=0 allow; last: Error: tool "
        "'boom' failed: RuntimeError: kaput")


def test_without_retries_failures_are_bounded_by_the_turn() -> None:
    @tool
    def boom() -> str:
        """Fails."""
        raise RuntimeError("kaput")

    session = _turn([boom], ["{boom()}"] * 3, max_iterations=3, loop_guard=None)
    assert session.turns[-1].status == RunStatus.MAX_ITERATIONS


@pytest.mark.parametrize("bad", [-1, 1.5, True, "2"])
def test_a_wrong_retries_value_is_a_definition_error(bad: object) -> None:
    with pytest.raises(ToolDefinitionError) as info:
        tool(retries=bad)(lambda: None)  # type: ignore[arg-type]
    assert str(info.value) == (f"@tool '<lambda>': retries must be an int >= 0 or None, "
                               f"got {bad!r}")


# -- max_iterations=None ----------------------------------------------------------------------

def test_max_iterations_none_means_no_limit_the_guard_still_applies() -> None:
    @tool
    def step(n: int) -> str:
        """A step."""
        return f"step {n}"

    replies = [f"{{step(n={i})}}" for i in range(40)] + ["Done."]
    session = _turn([step], replies, max_iterations=None)
    assert (session.turns[-1].status, session.turns[-1].iterations) == (RunStatus.COMPLETED, 41)
    session = _turn([step], ["{step(n=1)}"] * 3, max_iterations=None)
    assert session.turns[-1].status == RunStatus.IMPLICIT_COMPLETION  # the loop guard


# -- Enum members, sync timeouts --------------------------------------------------------------

class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


def test_execute_accepts_an_enum_member() -> None:
    @tool
    def paint(color: Color) -> str:
        """Paint."""
        return color.name

    assert paint.execute(color=Color.BLUE) == "BLUE"
    assert paint.execute(color="red") == "RED"


def test_a_sync_tool_times_out_in_a_worker_thread() -> None:
    release = threading.Event()

    @tool(timeout=0.05)
    def stuck() -> str:
        """Never answers in time."""
        release.wait()
        return "late"

    try:
        session = _turn([stuck], ["{stuck()}", "Gave up."])
        assert session.messages[2].content == (
            "Error: tool 'stuck' failed: TimeoutError: tool 'stuck' timed out after 0.05 s")
        session = asyncio.run(Runner(MockModel(["{stuck()}", "Gave up."]),
                                     ToolingTemplate([stuck])).arun())
        assert session.messages[1].content == (
            "Error: tool 'stuck' failed: TimeoutError: tool 'stuck' timed out after 0.05 s")
    finally:
        release.set()


def test_an_async_tool_times_out_under_the_sync_runner() -> None:
    @tool(timeout=0.05)
    async def stuck() -> str:
        """Never answers in time."""
        await asyncio.Event().wait()
        return "late"

    session = _turn([stuck], ["{stuck()}", "Gave up."])
    assert session.messages[2].content == (
        "Error: tool 'stuck' failed: TimeoutError: tool 'stuck' timed out after 0.05 s")


def test_a_quick_sync_tool_with_a_timeout_answers_normally() -> None:
    @tool(timeout=5)
    def quick(n: int) -> int:
        """Quick."""
        return n * 2

    assert _turn([quick], ["{quick(n=2)}", "ok"]).messages[2].content == "4"


# -- Jinja errors are also jinja2's -----------------------------------------------------------

def test_jinja_errors_are_also_jinja2_errors() -> None:
    import jinja2

    with pytest.raises(jinja2.TemplateSyntaxError) as syntax:
        SystemTemplate("{{ oops")
    assert isinstance(syntax.value, TemplateSyntaxError)
    assert isinstance(syntax.value, DefinitionError)
    assert str(syntax.value) == (
        "SystemTemplate: Jinja syntax error on line 1: unexpected end of template, expected "
        "'end of print statement'. in '{{ oops'")
    assert syntax.value.lineno == 1
    with pytest.raises(jinja2.UndefinedError) as undefined:
        Runner(None, SystemTemplate("Hi {{ name }}")).run()
    assert isinstance(undefined.value, RenderError)
    assert str(undefined.value) == (
        "SystemTemplate: undefined variable in 'Hi {{ name }}': 'name' is undefined. Defined: "
        "last_message, messages (set it in session.state)")


# -- retry budgets across resume ----------------------------------------------------------------

def test_a_resumed_turn_counts_saved_failures_again(tmp_path: object) -> None:
    from pathlib import Path

    from convo import LoopTemplate, ScriptedInterface
    from convo._resume import resume
    from convo._transcript import TranscriptWriter, load_transcript

    @tool(retries=1)
    def odd_only(n: int) -> str:
        """Odd numbers only."""
        if n % 2 == 0:
            raise ToolRetry(f"{n} is even")
        return "ok"

    chat = LoopTemplate([UserTemplate(), ToolingTemplate([odd_only])])
    path = Path(str(tmp_path)) / "t.jsonl"
    session = Session()
    writer = TranscriptWriter.create(path, session)
    try:
        Runner(MockModel(["{odd_only(n=2)}", "{odd_only(n=4)}"]), chat,
               ScriptedInterface(["go"]), on_event=writer).run(session)
    finally:
        writer.close()
    assert session.turns[-1].status == RunStatus.ERROR

    saved = load_transcript(path)
    resumed, again = resume(chat, saved)
    model = MockModel(["{odd_only(n=1)}", "Done."])
    Runner(model, resumed, ScriptedInterface(["more"])).run(again)
    model.assert_complete()  # the saved turn ended where it did: no model call was added
    assert [t.status for t in again.turns] == [RunStatus.ERROR, RunStatus.COMPLETED]
    assert again.messages[:5] == saved.messages[:5]
