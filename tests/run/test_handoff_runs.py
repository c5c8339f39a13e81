"""A handoff to a person on the one core (API.md §19): the ``handoff`` call's turn asks
``HandOff`` until the person hands back; ``ScriptedInterface(operator=[…])`` answers it (an
operator line, then the user's reply, in turn; "/handback" or running out hands back); the
messages said meanwhile are in the history the model sees next; a resumed run replays them,
and goes on inside a handoff that was not handed back."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from convo import HandoffTool, InterfaceError, Message, Runner, ScriptedInterface, Session
from convo._resume import resume
from convo.models import MockModel
from convo.templates import LoopTemplate, ToolingTemplate, UserTemplate
from convo.tools import tool

HANDED = "The conversation was handed to a person: stuck."


@tool
def look(order: str) -> str:
    """Look an order up."""
    return f"{order}: shipped"


def _bot() -> LoopTemplate:
    return LoopTemplate([UserTemplate(), ToolingTemplate([look, HandoffTool()])])


def _run(replies: list[str], operator: list[str], model_replies: list[Any],
         mode: str = "run", session: Session | None = None
         ) -> tuple[Session, ScriptedInterface, MockModel]:
    model = MockModel(model_replies)
    user = ScriptedInterface(replies, operator=operator)
    runner = Runner(model, _bot(), user)
    done = runner.run(session) if mode == "run" else asyncio.run(runner.arun(session))
    return done, user, model


def _said(session: Session) -> list[tuple[str, str, str | None]]:
    return [(m.role, m.text, m.metadata.get("author")) for m in session.messages]


@pytest.mark.parametrize("mode", ["run", "arun"])
def test_operator_lines_and_user_replies_take_turns_until_handback(mode: str) -> None:
    session, user, model = _run(
        ["help", "my order is lost", "thanks", "bye"],
        ["Hello, Ann here.", "Found it: resent.", "/handback"],
        ["{handoff(reason='stuck')}", "Anything else?"], mode)
    assert _said(session) == [
        ("user", "help", None), ("assistant", "", None), ("tool", HANDED, None),
        ("assistant", "Hello, Ann here.", "operator"), ("user", "my order is lost", None),
        ("assistant", "Found it: resent.", "operator"), ("user", "thanks", None),
        ("user", "bye", None), ("assistant", "Anything else?", None)]
    # after the hand-back the bot waited for the user; the model then saw the whole handoff
    assert [m.text for m in model.calls[1].messages] == [
        "help", "", HANDED, "Hello, Ann here.", "my order is lost", "Found it: resent.",
        "thanks", "bye"]
    assert session.internal["handoffs"] == {"call_1": 4}
    turn = session.turns[0]
    assert (turn.status, turn.terminated_by, turn.iterations) == ("completed", "handoff", 1)
    user.assert_complete()
    model.assert_complete()


def test_running_out_of_operator_lines_hands_back() -> None:
    session, _, _ = _run(["help", "hello?", "ok"], ["One moment."],
                            ["{handoff()}", "Back."])
    assert _said(session)[2:] == [
        ("tool", "The conversation was handed to a person.", None),
        ("assistant", "One moment.", "operator"), ("user", "hello?", None),
        ("user", "ok", None), ("assistant", "Back.", None)]
    assert session.internal["handoffs"] == {"call_1": 2}


def test_no_operator_lines_hand_back_at_once() -> None:
    session, _, _ = _run(["help", "ok"], [], ["{handoff(reason='stuck')}", "Back."])
    assert _said(session)[2:] == [("tool", HANDED, None), ("user", "ok", None),
                                  ("assistant", "Back.", None)]
    assert session.internal["handoffs"] == {"call_1": 0}


def test_running_out_of_user_replies_during_a_handoff_hands_back_then_stops() -> None:
    session, _, _ = _run(["help"], ["Hi.", "Still there?"], ["{handoff()}"])
    assert _said(session)[3:] == [("assistant", "Hi.", "operator")]
    assert session.outcome is not None and session.outcome.status == "stopped"


def test_a_handoff_in_a_batch_runs_the_other_calls_first() -> None:
    session, _, model = _run(["where is A1", "ok", "thanks"],
                             ["It is on its way.", "/handback"],
                             ["{look(order='A1')} {handoff(reason='stuck')}", "Done."])
    assert _said(session)[1:6] == [
        ("assistant", "", None), ("tool", "A1: shipped", None), ("tool", HANDED, None),
        ("assistant", "It is on its way.", "operator"), ("user", "ok", None)]
    assert len(model.calls) == 2


def test_an_interface_without_hand_off_hands_back_at_once() -> None:
    class Plain:
        replies = iter(["help", "ok"])

        def ask(self, session: Session, instruction: str | None, default: str | None) -> str:
            try:
                return next(self.replies)
            except StopIteration:
                raise EOFError from None

    session = Runner(MockModel(["{handoff()}", "Back."]), _bot(), Plain()).run()
    assert [m.text for m in session.messages][3:] == ["ok", "Back."]


def test_a_handoff_without_an_interface_is_an_error() -> None:
    from convo import LinearTemplate

    bot = LinearTemplate([UserTemplate("help"), ToolingTemplate([HandoffTool()])])
    with pytest.raises(InterfaceError, match=r"handed the conversation to a person .* no "
                                             r"user_interface"):
        Runner(MockModel(["{handoff()}"]), bot).run()


def test_a_resumed_run_replays_a_handoff_that_was_handed_back() -> None:
    first, _, _ = _run(["help", "lost", "ok"], ["Hi.", "/handback"],
                       ["{handoff(reason='stuck')}", "Back."])
    template, session = resume(_bot(), first)
    user = ScriptedInterface(["more"], operator=["nobody asks me"])
    again = Runner(MockModel(["Sure."]), template, user).run(session)
    assert _said(again)[:len(first.messages)] == _said(first)
    assert _said(again)[len(first.messages):] == [("user", "more", None),
                                                  ("assistant", "Sure.", None)]
    assert user.operator_said == 0  # the handoff was replayed, not asked again


def test_a_resumed_run_goes_on_inside_a_handoff_not_handed_back() -> None:
    # saved while handed off: an operator line and a user reply, no hand-back yet
    saved = Session([Message("user", "help")])
    saved.messages.append(MockModel(["{handoff(reason='stuck')}"]).complete([]))
    saved.messages += [Message("tool", HANDED, tool_call_id="call_1", name="handoff"),
                       Message("assistant", "Hi.", metadata={"author": "operator"}),
                       Message("user", "lost")]
    template, session = resume(_bot(), saved)
    user = ScriptedInterface(["ok", "thanks"], operator=["Found it.", "/handback"])
    model = MockModel(["Back."])
    again = Runner(model, template, user).run(session)
    assert _said(again)[3:] == [
        ("assistant", "Hi.", "operator"), ("user", "lost", None),
        ("assistant", "Found it.", "operator"), ("user", "ok", None),
        ("user", "thanks", None), ("assistant", "Back.", None)]
    assert again.internal["handoffs"] == {"call_1": 4}
    assert len(model.calls) == 1  # nothing was asked of the model again


def test_assert_complete_names_unused_operator_lines() -> None:
    _, user, _ = _run(["help", "ok"], ["Hi.", "/handback", "never said"],
                      ["{handoff()}", "Back."])
    with pytest.raises(AssertionError, match=r"^ScriptedInterface: 1 of 3 operator lines "
                                             r"were not used; next unused: 'never said'$"):
        user.assert_complete()
