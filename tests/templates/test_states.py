"""States (API.md §11): moves, precedence within a batch, limits, build-time checks, events."""

from __future__ import annotations

import asyncio
import re

import pytest
from provider_fakes import FakeProvider

from convo import (
    DefinitionError,
    Message,
    RunError,
    Runner,
    RunStatus,
    ScriptedInterface,
    Session,
    StateEntered,
    TurnResult,
)
from convo.events import Event
from convo.models import MockModel
from convo.templates import (
    AssistantTemplate,
    GotoTemplate,
    IfTemplate,
    LinearTemplate,
    LoopTemplate,
    StateMachineTemplate,
    SubroutineTemplate,
    SystemTemplate,
    ToolingTemplate,
    UserTemplate,
)
from convo.templates._states import STATE_KEY
from convo.tools import EndConversationTool, FinishTool, Transition, tool


@tool(terminal=True)
def answer(text: str) -> str:
    """Give the final answer.

    Args:
        text: The answer.
    """
    if not text:
        raise ValueError("empty answer")
    return f"ANSWER: {text}"

NO_CONTENTS = ("Gemini refuses a request with no contents (its SDK checks it before "
               "sending): a first model call with no message cannot run on Gemini")


def two_states(*a_tools: object, b: object = None) -> StateMachineTemplate:
    tools = list(a_tools) or [Transition("b", "Go to b.")]
    return StateMachineTemplate({
        "a": LinearTemplate([SystemTemplate("In a."), ToolingTemplate(tools)]),  # type: ignore[arg-type]
        "b": b or LinearTemplate([SystemTemplate("In b."), AssistantTemplate("b speaks")]),
    }, start="a")


def run(template: object, replies: list[str], user: list[str] | None = None,
        fake: FakeProvider | None = None, **kw: object
        ) -> tuple[list[Message], list[Event], Session]:
    """A run on a MockModel, or on ``fake``'s provider (whose fixture checks that the script
    is used up)."""
    events: list[Event] = []
    model = MockModel(replies) if fake is None else fake(replies)
    session = Runner(model, template, ScriptedInterface(user or []),  # type: ignore[arg-type]
                     on_event=events.append, **kw).run()  # type: ignore[arg-type]
    if isinstance(model, MockModel):
        model.assert_complete()
    return session.messages, events, session


def entered(events: list[Event]) -> list[tuple[str, str | None]]:
    return [(e.name, e.previous) for e in events if isinstance(e, StateEntered)]


def contents(messages: list[Message]) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in messages]


# --- moving -----------------------------------------------------------------------------------


def test_a_transition_moves_and_a_state_without_one_ends_the_machine(
        provider_model: FakeProvider) -> None:
    provider_model.cannot("gemini", why=NO_CONTENTS)
    tree = LinearTemplate([two_states(), AssistantTemplate("after the machine")])
    messages, events, session = run(tree, ["{go_to_b(reason='done here')}"],
                                    fake=provider_model)
    assert contents(messages) == [
        ("system", "In a."), ("assistant", ""),
        ("tool", "Moving to state 'b'. Reason: done here"),
        ("system", "In b."), ("assistant", "b speaks"), ("assistant", "after the machine"),
    ]
    assert entered(events) == [("a", None), ("b", "a")]
    assert session.outcome.status is RunStatus.COMPLETED
    assert session.turns == [TurnResult(status=RunStatus.COMPLETED, terminated_by="go_to_b",
                                        iterations=1, done=True)]
    assert STATE_KEY not in session.internal


def test_the_transition_tool_has_a_default_name_and_an_optional_reason() -> None:
    schema = Transition("billing", "Questions about charges.").schema()["function"]
    assert schema == {
        "name": "go_to_billing",
        "description": "Questions about charges.",
        "parameters": {"type": "object", "properties": {"reason": {
            "type": "string", "description": "Why you are moving on (optional)"}},
            "required": [], "additionalProperties": False},
    }
    assert Transition("billing", "x", name="escalate").name == "escalate"
    with pytest.raises(DefinitionError, match=re.escape(
            "Transition to 'the end': the tool name 'go_to_the end' is not a valid tool name "
            "(pass name=... with letters, digits, _ or -)")):
        Transition("the end", "x")


def test_a_move_cuts_the_state_short_loops_included() -> None:
    state_a = LinearTemplate([
        LoopTemplate([UserTemplate(), ToolingTemplate([Transition("b", "Go.")])]),
        AssistantTemplate("never said"),
    ])
    tree = StateMachineTemplate({"a": state_a, "b": AssistantTemplate("in b")}, start="a")
    messages, _events, _session = run(tree, ["Hm?", "{go_to_b()}"], ["hi", "move on"])
    assert contents(messages) == [
        ("user", "hi"), ("assistant", "Hm?"), ("user", "move on"), ("assistant", ""),
        ("tool", "Moving to state 'b'."), ("assistant", "in b"),
    ]


def test_goto_moves_from_code_and_the_state_is_in_the_session() -> None:
    seen: list[str] = []

    def note(session: object) -> bool:
        seen.append(session.internal[STATE_KEY])
        return True

    tree = StateMachineTemplate({
        "a": IfTemplate(note, GotoTemplate("b")),
        "b": IfTemplate(note, SystemTemplate("state is {{ _convo_state }}")),
    }, start="a")
    messages, events, _ = run(tree, [])
    assert seen == ["a", "b"]
    assert contents(messages) == [("system", "state is b")]
    assert entered(events) == [("a", None), ("b", "a")]


def test_a_nested_machine_hands_back_to_the_outer_state() -> None:
    inner = StateMachineTemplate({"x": GotoTemplate("y"), "y": SystemTemplate("in y")},
                                 start="x")
    outer = StateMachineTemplate({
        "a": LinearTemplate([inner, SystemTemplate("back in {{ _convo_state }}"),
                             GotoTemplate("b")]),
        "b": SystemTemplate("in b"),
    }, start="a")
    messages, events, _ = run(outer, [])
    assert contents(messages) == [("system", "in y"), ("system", "back in a"),
                                  ("system", "in b")]
    assert entered(events) == [("a", None), ("x", None), ("y", "x"), ("b", "a")]


def test_it_runs_the_same_under_arun(provider_model: FakeProvider) -> None:
    provider_model.cannot("gemini", why=NO_CONTENTS)
    events: list[Event] = []
    model = provider_model(["{go_to_b()}"])
    session = asyncio.run(Runner(model, two_states(), on_event=events.append).arun())
    assert contents(session.messages)[-2:] == [("system", "In b."), ("assistant", "b speaks")]
    assert entered(events) == [("a", None), ("b", "a")]


# --- precedence within one batch ----------------------------------------------------------


def test_end_conversation_beats_a_transition() -> None:
    tree = two_states(Transition("b", "Go."), EndConversationTool())
    messages, events, session = run(tree, ["{go_to_b()} {end_conversation(message='Bye.')}"])
    assert contents(messages)[-3:] == [
        ("tool", "Moving to state 'b'."),
        ("tool", '{"status": "success", "message": "Bye."}'), ("assistant", "Bye."),
    ]
    assert entered(events) == [("a", None)]
    assert session.outcome.status is RunStatus.ENDED


def test_a_transition_beats_a_terminal_tool_whose_result_stays_in_history() -> None:
    tree = two_states(answer, Transition("b", "Go."))
    messages, _events, session = run(tree, ["{answer(text='42')} {go_to_b()}"])
    assert contents(messages) == [
        ("system", "In a."), ("assistant", ""), ("tool", "ANSWER: 42"),
        ("tool", "Moving to state 'b'."), ("system", "In b."), ("assistant", "b speaks"),
    ]
    assert session.turns[0].terminated_by == "go_to_b"
    assert session.turns[0].response is None


def test_a_transition_beats_finish() -> None:
    tree = two_states(FinishTool(), Transition("b", "Go."))
    _messages, events, session = run(tree, ["{finish(note='ok')} {go_to_b()}"])
    assert entered(events) == [("a", None), ("b", "a")]
    assert session.turns[0].terminated_by == "go_to_b"


def test_a_second_transition_in_a_batch_gets_an_error_naming_the_first() -> None:
    tree = StateMachineTemplate({
        "a": ToolingTemplate([Transition("b", "Go."), Transition("c", "Go.")]),
        "b": SystemTemplate("in b"), "c": SystemTemplate("in c"),
    }, start="a")
    messages, events, _ = run(tree, ["{go_to_b()} {go_to_c()}"])
    assert contents(messages)[1:] == [
        ("tool", "Moving to state 'b'."),
        ("tool", "Error: ignored: 'go_to_b' was already called in this batch and moves to "
                 "state 'b'; only one transition is allowed per batch"),
        ("system", "in b"),
    ]
    assert messages[2].metadata == {"error": True}
    assert entered(events) == [("a", None), ("b", "a")]


def test_a_terminal_tool_that_fails_is_an_error_and_the_state_goes_on() -> None:
    tree = two_states(answer, Transition("b", "Go."))
    messages, _, session = run(tree, ["{answer(text='')}", "{answer(text='7')}"])
    assert contents(messages) == [
        ("system", "In a."), ("assistant", ""),
        ("tool", "Error: tool 'answer' failed: ValueError: empty answer"),
        ("assistant", ""), ("tool", "ANSWER: 7"), ("assistant", "ANSWER: 7"),
    ]
    assert session.turns[0].terminated_by == "answer"


def test_two_terminal_tools_the_second_gets_an_error() -> None:
    tree = two_states(answer, Transition("b", "Go."))
    messages, _, _ = run(tree, ["{answer(text='1')} {answer(text='2')}"])
    assert contents(messages)[2:] == [
        ("tool", "ANSWER: 1"),
        ("tool", "Error: not run: 'answer' was already called in this batch and ends the turn; "
                 "only one terminal tool call is allowed per batch"),
        ("assistant", "ANSWER: 1"),
    ]


# --- the limit -------------------------------------------------------------------------------


PING_PONG = StateMachineTemplate({"ping": GotoTemplate("pong"), "pong": GotoTemplate("ping")},
                                 start="ping", max_transitions=3)
LIMIT = ("RunError: StateMachineTemplate: more than max_transitions=3 transitions (move 4: "
         "'pong' -> 'ping' by GotoTemplate('ping')); raise max_transitions if the conversation "
         "really needs more")


def test_a_runaway_ping_pong_ends_the_run_with_error_naming_the_limit() -> None:
    events: list[Event] = []
    session = Runner(None, PING_PONG, on_event=events.append, raise_errors=False).run()
    assert session.outcome is not None
    assert session.outcome.status is RunStatus.ERROR
    assert session.outcome.error == LIMIT
    assert len(entered(events)) == 4  # the start and three moves
    with pytest.raises(RunError, match=re.escape(LIMIT.removeprefix("RunError: "))):
        Runner(None, PING_PONG).run()


def test_a_model_that_keeps_moving_is_stopped_by_the_limit() -> None:
    tree = StateMachineTemplate({
        "a": ToolingTemplate([Transition("b", "Go.")]),
        "b": ToolingTemplate([Transition("a", "Go.")]),
    }, start="a", max_transitions=2)
    model = MockModel(["{go_to_b()}", "{go_to_a()}", "{go_to_b()}"])
    session = Runner(model, tree, raise_errors=False).run()
    assert session.outcome is not None
    assert session.outcome.status is RunStatus.ERROR
    assert "more than max_transitions=2 transitions (move 3: 'a' -> 'b' by go_to_b)" in str(
        session.outcome.error)
    assert [m.role for m in session.messages] == ["assistant", "tool"] * 3  # nothing lost


# --- build-time checks -----------------------------------------------------------------------


def test_an_unknown_target_is_named_with_its_place() -> None:
    tree = StateMachineTemplate({"a": ToolingTemplate([Transition("nowhere", "x")])},
                                start="a")
    with pytest.raises(DefinitionError) as info:
        Runner(None, tree)
    assert str(info.value) == (
        "StateMachineTemplate > ['a'] ToolingTemplate: tool 'go_to_nowhere' moves to unknown "
        "state 'nowhere'; the machine at StateMachineTemplate has states 'a'")


def test_an_unknown_goto_target_and_start_are_named() -> None:
    tree = LinearTemplate([StateMachineTemplate({"a": GotoTemplate("b")}, start="a",
                                                template_id="m")])
    with pytest.raises(DefinitionError, match=re.escape(
            "LinearTemplate > [0] StateMachineTemplate(template_id='m') > ['a'] "
            "GotoTemplate('b'): GotoTemplate('b') moves to unknown state 'b'")):
        Runner(None, tree)
    with pytest.raises(DefinitionError) as info:
        Runner(None, StateMachineTemplate({"a": SystemTemplate("x")}, start="z"))
    assert str(info.value) == ("StateMachineTemplate: start state 'z' is not one of its states "
                               "('a')")


def test_moves_outside_any_machine_are_rejected() -> None:
    with pytest.raises(DefinitionError) as info:
        Runner(None, LinearTemplate([ToolingTemplate([Transition("b", "x")])]))
    assert str(info.value) == (
        "LinearTemplate > [0] ToolingTemplate: tool 'go_to_b' moves to state 'b', but it is "
        "not inside any StateMachineTemplate (a SubroutineTemplate's template needs a machine "
        "of its own)")
    with pytest.raises(DefinitionError, match=r"^IfTemplate > \[0\] GotoTemplate\('b'\): "):
        Runner(None, IfTemplate(lambda s: True, GotoTemplate("b")))
    in_subroutine = StateMachineTemplate({
        "a": SubroutineTemplate(ToolingTemplate([Transition("a", "x")])),
    }, start="a")
    with pytest.raises(DefinitionError, match="not inside any StateMachineTemplate"):
        Runner(None, in_subroutine)


def test_an_unreachable_state_is_a_warning() -> None:
    tree = StateMachineTemplate({"a": SystemTemplate("x"), "lost": SystemTemplate("y")},
                                start="a")
    with pytest.warns(UserWarning, match=re.escape(
            "StateMachineTemplate: state 'lost' is unreachable: no move from the start state "
            "'a' leads to it")):
        Runner(None, tree)


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"states": {}, "start": "a"}, "StateMachineTemplate: states is empty; give at least one "
                                   "state"),
    ({"states": {"a": "text"}, "start": "a"},
     "StateMachineTemplate: states['a'] is str 'text', expected a Template"),
    ({"states": {"a": SystemTemplate("x")}, "start": "a", "max_transitions": -1},
     "StateMachineTemplate: max_transitions must be an int >= 0, got -1"),
])
def test_bad_machines_are_rejected_when_built(kwargs: dict[str, object], error: str) -> None:
    with pytest.raises(DefinitionError) as info:
        StateMachineTemplate(**kwargs)  # type: ignore[arg-type]
    assert str(info.value) == error


# --- the picture -----------------------------------------------------------------------------


def test_nested_machines_are_drawn_as_composite_states() -> None:
    from convo import EndTemplate
    from convo.templates._graph import mermaid

    inner = StateMachineTemplate({"x": GotoTemplate("y"), "y": EndTemplate()}, start="x")
    outer = StateMachineTemplate({
        "a": LinearTemplate([inner, GotoTemplate("a-b")]),
        "a-b": GotoTemplate("a_b"), "a_b": SystemTemplate("z"),
    }, start="a")
    assert mermaid(outer) == """\
stateDiagram-v2
    state "a" as a {
        state "x" as a_1_x
        state "y" as a_1_y
        [*] --> a_1_x
        a_1_x --> a_1_y: goto
        a_1_y --> [*]: EndTemplate
    }
    state "a-b" as a_b
    state "a_b" as a_b_2
    [*] --> a
    a --> a_b: goto
    a_b --> a_b_2: goto
"""
    with pytest.raises(DefinitionError,
                       match=r"^LinearTemplate has no StateMachineTemplate to draw$"):
        mermaid(LinearTemplate([]))
