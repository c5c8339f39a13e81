"""LoopGuard (API.md §4 step 5): each rule, its status, and switching it off."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from convo import Message, Runner, RunStatus, Session, ToolCall, TurnResult
from convo.events import Event, ToolCallStarted
from convo.models import MockModel
from convo.templates import (
    DEFAULT_RESTRICTION_MESSAGE,
    LinearTemplate,
    LoopGuard,
    ToolingTemplate,
    UserTemplate,
)
from convo.tools import FinishTool, tool

RESTRICTED = Message("system", DEFAULT_RESTRICTION_MESSAGE)

ran: list[str] = []


@tool
def search(query: str) -> str:
    """Search the notes.

    Args:
        query: What to search for.
    """
    ran.append(query)
    return f"Found 3 notes about {query}."


def _turn(replies: Sequence[str], *, events: list[Event] | None = None,
          **kw: Any) -> tuple[Session, MockModel]:
    ran.clear()
    model = MockModel(replies)
    template = LinearTemplate([UserTemplate("Go."),
                               ToolingTemplate([search, FinishTool()], **kw)])
    session = Runner(model, template,
                     on_event=events.append if events is not None else None).run()
    model.assert_complete()
    return session, model


def test_defaults() -> None:
    assert LoopGuard() == LoopGuard(max_repeats=3, max_empty=3, trivial_chars=10,
                                    detect_echo=True)
    assert ToolingTemplate([search]).loop_guard == LoopGuard()


def test_the_same_reply_text_three_times_is_an_implicit_completion() -> None:
    session, model = _turn(["I am still thinking."] * 3, restrict_output=True)

    assert session.messages == [
        Message("user", "Go."),
        Message("assistant", "I am still thinking."), RESTRICTED,
        Message("assistant", "I am still thinking."), RESTRICTED,
        Message("assistant", "I am still thinking."),
    ]
    assert session.turns == [TurnResult(
        note="loop guard: the same reply 3 times in a row",
        status=RunStatus.IMPLICIT_COMPLETION,
                                        response="I am still thinking.", iterations=3,
                                        injections=2)]
    assert len(model.calls) == 3


def test_the_same_tool_batch_three_times_is_not_run_the_third_time() -> None:
    events: list[Event] = []
    session, model = _turn(["{search(query='x')}"] * 3, events=events)

    assert ran == ["x", "x"]
    assert session.messages[-2:] == [
        Message("assistant", "", tool_calls=(ToolCall("call_3", "search", {"query": "x"}),)),
        Message("tool", "Not run: the same tool calls 3 times in a row; the loop guard ended "
                "the turn.", tool_call_id="call_3", name="search", metadata={"error": True}),
    ]
    assert session.turns == [TurnResult(
        note="loop guard: the same tool calls 3 times in a row",
        status=RunStatus.IMPLICIT_COMPLETION, iterations=3)]
    assert len(model.calls) == 3
    assert sum(isinstance(e, ToolCallStarted) for e in events) == 2


def test_a_tripping_batch_answers_every_call() -> None:
    session, _ = _turn(["{search(query='a')} {search(query='b')}"] * 3)

    tool_messages = [m for m in session.messages if m.role == "tool"]
    assert [(m.tool_call_id, m.content.startswith("Not run:")) for m in tool_messages] == [
        ("call_1", False), ("call_2", False), ("call_3", False), ("call_4", False),
        ("call_5", True), ("call_6", True)]


def test_different_arguments_are_not_repeats() -> None:
    session, model = _turn(["{search(query='a')}", "{search(query='b')}",
                            "{search(query='a')}", "{finish()}"])

    assert session.turns[-1].terminated_by == "finish"
    assert ran == ["a", "b", "a"]
    assert len(model.calls) == 4


def test_three_empty_replies_are_an_empty_response_error() -> None:
    session, model = _turn(["", "  ", "\n"], restrict_output=True)

    assert [m.role for m in session.messages] == [
        "user", "assistant", "system", "assistant", "system", "assistant"]
    assert session.turns == [TurnResult(
        note="loop guard: 3 empty replies in a row",
        status=RunStatus.LLM_EMPTY_RESPONSE_ERROR,
                                        response="\n", iterations=3, injections=2)]
    assert session.outcome is not None
    assert session.outcome.status is RunStatus.LLM_EMPTY_RESPONSE_ERROR
    assert len(model.calls) == 3


def test_trivial_replies_mixed_with_empty_ones_are_an_implicit_completion() -> None:
    session, _ = _turn(["", "ok", "."], restrict_output=True)

    assert session.turns == [TurnResult(
        note="loop guard: 3 empty or trivial replies in a row",
        status=RunStatus.IMPLICIT_COMPLETION, response=".",
                                        iterations=3, injections=2)]


def test_empty_replies_are_counted_before_repeats() -> None:
    # "ok" three times is both a repeat and trivial: it counts as trivial.
    session, _ = _turn(["ok", "ok", "ok"], restrict_output=True)

    assert session.turns[-1].status is RunStatus.IMPLICIT_COMPLETION
    assert session.turns[-1].injections == 2


def test_a_tool_call_resets_the_empty_count() -> None:
    session, model = _turn(["", "", "{search(query='q')}", "", "", "{finish()}"],
                           restrict_output=True)

    assert session.turns[-1].terminated_by == "finish"
    assert session.turns[-1].injections == 4
    assert len(model.calls) == 6


def test_a_reply_echoing_the_last_tool_result_is_an_implicit_completion() -> None:
    session, model = _turn(["{search(query='cats')}", "Found 3 notes about cats."])

    assert session.messages[-2:] == [
        Message("tool", "Found 3 notes about cats.", tool_call_id="call_1", name="search"),
        Message("assistant", "Found 3 notes about cats."),
    ]
    assert session.turns == [TurnResult(
        note="loop guard: the reply only echoed the last tool result",
        status=RunStatus.IMPLICIT_COMPLETION,
                                        response="Found 3 notes about cats.", iterations=2)]
    assert len(model.calls) == 2


def test_an_echo_under_restricted_output_ends_the_turn_without_an_injection() -> None:
    session, model = _turn(["{search(query='cats')}", "  Found 3 notes about cats.  "],
                           restrict_output=True)

    assert session.turns[-1].status is RunStatus.IMPLICIT_COMPLETION
    assert session.turns[-1].injections == 0
    assert session.messages[-1].role == "assistant"
    assert len(model.calls) == 2


def test_a_trivial_echo_is_not_an_echo() -> None:
    @tool
    def count() -> int:
        """Count."""
        return 4

    model = MockModel(["{count()}", "4"])
    session = Runner(model, LinearTemplate([UserTemplate("Go."),
                                            ToolingTemplate([count])])).run()

    assert session.turns[-1] == TurnResult(status=RunStatus.COMPLETED, response="4",
                                           iterations=2)


def test_a_reply_that_adds_to_the_tool_result_is_not_an_echo() -> None:
    session, _ = _turn(["{search(query='cats')}", "Found 3 notes about cats. Want them?"])

    assert session.turns[-1].status is RunStatus.COMPLETED


def test_the_restriction_budget_ending_a_turn_wins_over_the_guard() -> None:
    session, _ = _turn(["", "", ""], restrict_output=True, restriction_max_injections=2)

    assert session.turns == [TurnResult(status=RunStatus.COMPLETED, response="",
                                        iterations=3, injections=2,
                                        restriction_exhausted=True)]


@pytest.mark.parametrize("replies", [
    ["I am still thinking."] * 5 + ["{finish()}"],
    ["{search(query='x')}"] * 5 + ["{finish()}"],
    [""] * 5 + ["{finish()}"],
    ["{search(query='cats')}", "Found 3 notes about cats.", "{finish()}"],
])
def test_loop_guard_none_switches_every_rule_off(replies: list[str]) -> None:
    session, model = _turn(replies, restrict_output=True, loop_guard=None)

    assert session.turns[-1].terminated_by == "finish"
    assert session.turns[-1].status is RunStatus.COMPLETED
    assert len(model.calls) == len(replies)


def test_limits_are_configurable_and_zero_switches_a_rule_off() -> None:
    session, model = _turn(["Same old answer."] * 2, restrict_output=True,
                           loop_guard=LoopGuard(max_repeats=2))
    assert session.turns[-1].status is RunStatus.IMPLICIT_COMPLETION
    assert len(model.calls) == 2

    session, model = _turn(["Same old answer."] * 4 + ["{finish()}"], restrict_output=True,
                           loop_guard=LoopGuard(max_repeats=0))
    assert session.turns[-1].terminated_by == "finish"

    session, model = _turn(["", "", "", "{finish()}"], restrict_output=True,
                           loop_guard=LoopGuard(max_empty=0))
    assert session.turns[-1].terminated_by == "finish"

    session, _ = _turn(["{search(query='cats')}", "Found 3 notes about cats."],
                       loop_guard=LoopGuard(detect_echo=False))
    assert session.turns[-1].status is RunStatus.COMPLETED

    session, _ = _turn(["Short answer", "Short answer"], restrict_output=True,
                       restriction_max_injections=1, loop_guard=LoopGuard(trivial_chars=20,
                                                                          max_empty=2))
    # both replies are trivial under trivial_chars=20, but the budget ends the turn first
    assert session.turns[-1].restriction_exhausted


def test_the_guard_state_is_per_turn() -> None:
    from convo import LoopTemplate, ScriptedInterface

    model = MockModel(["{search(query='x')}", "{search(query='x')}", "Done searching.",
                       "{search(query='x')}", "{search(query='x')}", "Done again."])
    template = LoopTemplate([UserTemplate(), ToolingTemplate([search])], exit_loop_count=2)
    session = Runner(model, template, ScriptedInterface(["one", "two"])).run()

    assert [t.status for t in session.turns] == [RunStatus.COMPLETED, RunStatus.COMPLETED]
    model.assert_complete()
