"""The ending of a batch as one value (convo.tools._endings): its precedence, written once, and
each way a call's run is read into it (convo.tools._calls.outcome)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from convo import ReachedEndTemplateException, ToolCall
from convo.templates._tree import termination_tools
from convo.tools import EndConversationTool, FinishTool, TerminateResponse, Tool, Transition, tool
from convo.tools._calls import Invocation, execute, outcome
from convo.tools._endings import (
    CONTINUE,
    PRECEDENCE,
    Continue,
    EndConversation,
    FinalOutput,
    GuardEnd,
    HandOver,
    MoveState,
    RetriesSpent,
    TerminalReply,
    Terminate,
    stronger,
)
from convo.tools._handoff import HandoffTool
from convo.tools._transition import Move


def _read(t: Tool, args: dict[str, Any] | None = None) -> Any:
    call = ToolCall("c1", t.name, args or {})
    invocation = Invocation(call, t, args or {})
    return outcome(invocation, execute(invocation))


def test_the_precedence_is_the_documented_one() -> None:
    # docs/termination.md, "Precedence in one batch"; docs/architecture.md, "One batch".
    assert PRECEDENCE == (GuardEnd, EndConversation, MoveState, HandOver, TerminalReply,
                          Terminate, FinalOutput, RetriesSpent, Continue)
    end = EndConversation("Bye", "end_conversation")
    terminal = TerminalReply("42", "answer")
    finish = Terminate(TerminateResponse("a"), "finish")
    assert stronger(CONTINUE, finish) is finish
    assert stronger(finish, terminal) is terminal  # a later, stronger ending wins
    assert stronger(terminal, finish) is terminal
    assert stronger(terminal, end) is end
    second = Terminate(TerminateResponse("b"), "finish")
    assert stronger(finish, second) is finish  # within one rank, the first call wins
    assert stronger(RetriesSpent("x"), FinalOutput(1)) == FinalOutput(1)


def test_end_conversation_gives_its_ending_as_a_value_and_execute_still_raises() -> None:
    end = EndConversationTool()
    assert end.invoke({"message": "Bye!"}) == EndConversation("Bye!", "end_conversation")
    assert _read(end, {"message": "Bye!"}) == (
        '{"status": "success", "message": "Bye!"}', False,
        EndConversation("Bye!", "end_conversation"), None)
    with pytest.raises(ReachedEndTemplateException) as info:
        end.execute(message="Bye!")
    assert info.value.farewell_message == "Bye!"


def test_a_tool_raising_the_signal_itself_is_read_as_the_same_ending() -> None:
    @tool
    def leave() -> str:
        """Leave."""
        raise ReachedEndTemplateException("See you.")

    assert _read(leave) == (json.dumps({"status": "success", "message": "See you."}), False,
                            EndConversation("See you.", "leave"), None)


def test_each_kind_of_result_is_read_into_its_ending() -> None:
    @tool(terminal=True)
    def answer(text: str) -> str:
        """Answer."""
        return text

    @tool
    def plain() -> str:
        """Plain."""
        return "ok"

    @tool
    def done() -> TerminateResponse:
        """Done."""
        return TerminateResponse("all done", status="pending_review", summary="s")

    # convo's finish tools run again on resume: their messages keep nothing more; a tool of
    # the user's keeps its response, so that a resumed run ends the turn the same way.
    assert _read(FinishTool(), {"note": "n"}) == (
        "n", False, Terminate(TerminateResponse("n", note="n"), "finish"), None)
    assert _read(done) == (
        "all done", False,
        Terminate(TerminateResponse("all done", status="pending_review", summary="s"), "done"),
        {"terminated": {"status": "pending_review", "summary": "s"}})
    assert _read(answer, {"text": "42"}) == ("42", False, TerminalReply("42", "answer"), None)
    assert _read(Transition("billing", "Bills."), {"reason": "money"}) == (
        "Moving to state 'billing'. Reason: money", False,
        MoveState(Move("billing", "money", "go_to_billing")), None)
    assert _read(HandoffTool(), {"reason": "stuck"}) == (
        "The conversation was handed to a person: stuck.", False,
        HandOver(ToolCall("c1", "handoff", {"reason": "stuck"}), "stuck"), None)
    assert _read(plain) == ("ok", False, CONTINUE, None)


def test_front_ends_ask_whether_a_tool_shows_its_effect_only() -> None:
    from convo import LinearTemplate, ToolingTemplate

    class Quiet(Tool):  # not terminal, not rerun on resume: shown only by what it does
        name = "quiet"
        description = "Quiet."
        shows_effect_only = True  # type: ignore[assignment]

        def _execute(self, args: dict[str, Any]) -> str:
            return "done"

    class Loud(FinishTool):  # a finish tool whose calls front ends still show
        name = "loud_finish"
        shows_effect_only = False  # type: ignore[assignment]

    @tool
    def plain() -> str:
        """Plain."""
        return "ok"

    template = LinearTemplate([ToolingTemplate([Quiet(), Loud(), FinishTool(), plain])])
    assert termination_tools(template) == {"quiet", "finish"}
