"""Toolsets in a ``ToolingTemplate``'s tool list (``convo.tools._toolset``): listed at the start
of every turn through the ``ListTools`` request, merged with the template's own tools, clashes
raised before any model call, a toolset that cannot be listed leaving its turn without its
tools, replays that do not need it, and ``Runner.close()``. Plain Python toolsets here; the
same with real MCP servers is in tests/tools/test_mcp_toolsets.py."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from pydantic import BaseModel
from toolset_kit import Between, ran, tool_messages

from convo import Limits, Message, Runner, ScriptedInterface, ToolDefinitionError
from convo._requests import ListTools
from convo.events import CaughtUp
from convo.models import FunctionModel, MockModel
from convo.templates import LinearTemplate, LoopTemplate, ToolingTemplate, UserTemplate
from convo.tools import Tool, tool
from convo.tools._toolset import Toolset, is_toolset


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def shout(text: str) -> str:
    """Say it louder."""
    return text.upper()


class Calc:
    """A toolset of plain tools that can be taken down; counts its listings and closings."""

    def __init__(self, name: str = "calc", tools: Sequence[Tool] = (add,),
                 down: str | None = None) -> None:
        self.name = name
        self.listed = list(tools)
        self.down = down
        self.listings = 0
        self.closed = 0

    def tools(self) -> list[Tool]:
        self.listings += 1
        if self.down is not None:
            raise ConnectionError(self.down)
        return self.listed

    async def atools(self) -> list[Tool]:
        return self.tools()

    def up(self) -> None:
        """Brings the toolset back up."""
        self.down = None

    def close(self) -> None:
        self.closed += 1


def test_a_toolset_is_a_toolset_and_a_tool_is_not() -> None:
    assert is_toolset(Calc()) and isinstance(Calc(), Toolset)
    assert not is_toolset(add) and not is_toolset("calc")


@pytest.mark.parametrize("mode", ["run", "arun"])
def test_a_toolset_gives_each_turn_its_tools_in_the_lists_order(mode: str) -> None:
    calc = Calc()
    template = LinearTemplate([UserTemplate("go"), ToolingTemplate([calc, shout])])
    model = MockModel(["{add(a=1, b=2)}{shout(text='hi')}", "Done."])
    runner = Runner(model, template)
    assert calc.listings == 0  # building lists nothing
    session = ran(runner, mode)
    assert tool_messages(session) == [("3", False), ("HI", False)]
    assert [c.tool_names for c in model.calls] == [("add", "shout")] * 2
    assert calc.listings == 1  # once for the turn, not once per model call


class Answer(BaseModel):
    value: int


def test_the_final_output_tool_comes_last() -> None:
    model = MockModel(["{final_result(value=3)}"])
    template = LinearTemplate([UserTemplate("go"), ToolingTemplate([shout, Calc()],
                                                                   output_type=Answer)])
    session = Runner(model, template).run()
    assert model.calls[0].tool_names == ("shout", "add", "final_result")
    assert session.turns[-1].output == Answer(value=3)


def test_every_turn_lists_its_toolsets_before_its_first_model_call() -> None:
    calc = Calc()
    seen: list[int] = []

    def reply(messages: Sequence[Message], tools: Any) -> str:
        seen.append(calc.listings)
        return "{add(a=1, b=1)}" if messages[-1].content == "add" else "ok"

    template = LoopTemplate([UserTemplate(), ToolingTemplate([calc])])
    Runner(FunctionModel(reply), template, ScriptedInterface(["add", "b", "c"])).run()
    assert seen == [1, 1, 2, 3]


@pytest.mark.parametrize("mode", ["run", "arun"])
def test_a_clash_is_raised_before_any_model_call(mode: str) -> None:
    model = MockModel(["never"])
    runner = Runner(model, LinearTemplate([UserTemplate("go"), ToolingTemplate([add, Calc()])]))
    with pytest.raises(ToolDefinitionError) as info:
        ran(runner, mode)
    assert str(info.value) == (
        "ToolingTemplate: two tools of the turn are named 'add': <FunctionTool 'add'> "
        "(tools[0]) and <FunctionTool 'add'> (listed by 'calc', tools[1])")
    assert model.calls == []
    quiet = Runner(model, runner.template, raise_errors=False).run()
    assert quiet.outcome is not None and quiet.outcome.status == "error"
    assert quiet.outcome.error is not None and "two tools of the turn" in quiet.outcome.error
    assert model.calls == []


def test_a_clash_between_toolsets_and_with_the_output_tool() -> None:
    two = ToolingTemplate([Calc("one"), Calc("two", tools=[shout, add])])
    with pytest.raises(ToolDefinitionError) as info:
        Runner(MockModel([]), LinearTemplate([UserTemplate("go"), two])).run()
    assert str(info.value) == (
        "ToolingTemplate: two tools of the turn are named 'add': <FunctionTool 'add'> (listed "
        "by 'one', tools[0]) and <FunctionTool 'add'> (listed by 'two', tools[1])")

    @tool
    def final_result(value: int) -> int:
        """Not the output tool."""
        return value

    typed = ToolingTemplate([Calc(tools=[final_result])], output_type=Answer)
    with pytest.raises(ToolDefinitionError) as info:
        Runner(MockModel([]), LinearTemplate([UserTemplate("go"), typed])).run()
    assert str(info.value) == (
        "ToolingTemplate: <FunctionTool 'final_result'> (listed by 'calc', tools[0]) is named "
        "'final_result', the name of the final-output tool of output_type")


@pytest.mark.parametrize("mode", ["run", "arun"])
def test_a_toolset_that_cannot_be_listed_leaves_the_turn_without_its_tools(mode: str) -> None:
    calc = Calc(down="connection refused")
    model = MockModel(["{add(a=1, b=2)}{shout(text='x')}", "Without add.",
                       "{add(a=1, b=2)}", "3 it is."])
    template = LoopTemplate([UserTemplate(), ToolingTemplate([calc, shout])])
    runner = Runner(model, template, Between(["first", "second"], calc.up),
                    limits=Limits(tool_calls=2))
    session = ran(runner, mode)
    assert tool_messages(session) == [
        ("Error: there is no tool named 'add'; available tools: shout; the tools of 'calc' "
         "could not be listed: ConnectionError: connection refused", True),
        ("X", False),  # the stand-in of 'add' is not counted against tool_calls=2
        ("3", False),  # listed again the next turn
    ]
    assert [c.tool_names for c in model.calls] == [("shout",)] * 2 + [("add", "shout")] * 2
    assert session.outcome is not None and session.outcome.status == "stopped"
    model.assert_complete()


def test_an_unknown_tool_says_the_same_with_toolsets_and_is_not_counted() -> None:
    model = MockModel(["{zzz()}{add(a=1, b=1)}", "ok"])
    template = LinearTemplate([UserTemplate("go"), ToolingTemplate([Calc(), shout])])
    session = Runner(model, template, limits=Limits(tool_calls=1)).run()
    assert tool_messages(session) == [
        ("Error: there is no tool named 'zzz'; available tools: add, shout", True),
        ("2", False)]


class Recording:
    """Counts the ListTools requests a runner's answerer sees."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.lists: list[int] = []

    def answer(self, request: Any) -> Any:
        if isinstance(request, ListTools):
            self.lists.append(len(request.toolsets))
        return self.inner.answer(request)


class Counting(Runner):
    def answerer(self, state: Any) -> Any:
        self.seen = Recording(super().answerer(state))
        return self.seen


def test_a_replay_does_not_need_the_toolset_and_lists_it_once() -> None:
    calc = Calc()
    template = LoopTemplate([UserTemplate(), ToolingTemplate([calc, shout])])
    model = MockModel(["{add(a=1, b=2)}{shout(text='a')}", "One.", "{add(a=2, b=2)}", "Two.",
                       "Three."])
    saved = Runner(model, template, ScriptedInterface(["a", "b", "c"])).run()
    assert calc.listings == 3
    calc.down, calc.listings = "gone", 0
    events: list[object] = []
    later = MockModel(["{add(a=5, b=5)}", "Four."])
    runner = Counting(later, template, ScriptedInterface(["d"]),
                      on_event=events.append)
    again = runner.resume(saved)
    assert again.messages[:len(saved.messages)] == saved.messages  # the saved results
    assert [(e.replayed, e.saved) for e in events if isinstance(e, CaughtUp)] == [
        (len(saved.messages), len(saved.messages))]
    assert tool_messages(again)[-1] == (
        "Error: there is no tool named 'add'; available tools: shout; the tools of 'calc' "
        "could not be listed: ConnectionError: gone", True)
    assert calc.listings == 2  # once for the three replayed turns, once for the live one
    assert runner.seen.lists == [1, 1]  # the replay's one listing, the live turn's
    assert again.outcome is not None and again.outcome.model_calls == 7
    assert again.outcome.status == "stopped"
    later.assert_complete()


def test_a_replay_keeps_a_saved_error_of_a_tool_of_a_toolset_that_is_down() -> None:
    calc = Calc()
    template = LinearTemplate([UserTemplate("go"), ToolingTemplate([calc])])
    saved = Runner(MockModel(["{add(a=1)}", "Missing b."]), template).run()
    assert tool_messages(saved)[0][1] is True
    calc.down = "gone"
    again = Runner(MockModel([]), template).resume(saved)
    assert again.messages == saved.messages


class Both(Calc):
    """A toolset with aclose() besides close()."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.aclosed = 0

    async def aclose(self) -> None:
        self.aclosed += 1


class Stubborn(Calc):
    def close(self) -> None:
        self.closed += 1
        raise OSError(f"{self.name} will not close")


def test_runner_close_closes_every_toolset_of_the_tree_once() -> None:
    calc, both, bad, worse = Calc(), Both("both"), Stubborn("bad"), Stubborn("worse")
    inner = LoopTemplate([UserTemplate(), ToolingTemplate([calc, shout])])
    template = LinearTemplate([ToolingTemplate([calc, both, bad]), inner,
                               ToolingTemplate([worse])])
    runner = Runner(MockModel([]), template)
    with pytest.raises(OSError, match=r"^bad will not close$"):
        runner.close()
    assert (calc.closed, both.closed, both.aclosed, bad.closed, worse.closed) == (1, 1, 0, 1, 1)
    with pytest.raises(OSError, match=r"^bad will not close$"):
        asyncio.run(runner.aclose())
    assert (calc.closed, both.closed, both.aclosed, bad.closed, worse.closed) == (2, 1, 1, 2, 2)
    assert calc.listings == 0
    Runner(MockModel([]), ToolingTemplate([shout])).close()  # nothing to close


def test_a_toolset_in_a_subroutine_is_listed_replayed_and_closed() -> None:
    from convo import SubroutineTemplate

    calc = Calc()
    child = SubroutineTemplate(LinearTemplate([UserTemplate("1+2?"), ToolingTemplate([calc])]),
                               keep="all")
    template = LinearTemplate([UserTemplate("go"), child])
    saved = Runner(MockModel(["{add(a=1, b=2)}", "3."]), template).run()
    assert [m.content for m in saved.subroutines[0].messages] == ["1+2?", "", "3", "3."]
    calc.down = "gone"
    again = Runner(MockModel([]), template).resume(saved)
    assert again.messages == saved.messages
    assert again.subroutines[0].messages == saved.subroutines[0].messages
    Runner(MockModel([]), template).close()
    assert calc.closed == 1
