"""Session, TurnResult, Outcome, RunStatus and the JSON round-trip (API.md §1, §4)."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest

from convo import (
    Message,
    Outcome,
    Runner,
    RunStatus,
    ScriptedInterface,
    Session,
    ToolCall,
    TurnResult,
    Usage,
)
from convo._requests import Flow
from convo.events import TurnEnded
from convo.models import MockModel
from convo.templates import (
    AssistantTemplate,
    EndTemplate,
    LinearTemplate,
    LoopTemplate,
    SystemTemplate,
    Template,
    UserTemplate,
)


def test_a_new_session_is_empty() -> None:
    session = Session()
    assert session.messages == []
    assert session.state == {}
    assert session.turns == []
    assert session.outcome is None
    assert session.last_message is None


def test_append_and_last_message() -> None:
    session = Session(state={"name": "Ada"})
    session.append(Message("user", "hi"))
    session.append(Message("assistant", "hello"))
    assert session.messages == [Message("user", "hi"), Message("assistant", "hello")]
    assert session.last_message == Message("assistant", "hello")
    assert session.state == {"name": "Ada"}


def test_session_takes_messages_positionally() -> None:
    session = Session([Message("user", "hi")], {"x": 1})
    assert session.messages == [Message("user", "hi")]
    assert session.state == {"x": 1}
    assert Session(messages=(Message("user", "a"),)).messages == [Message("user", "a")]


def test_run_status_values_are_exactly_the_contract() -> None:
    assert [s.value for s in RunStatus] == [
        "completed", "ended", "pending_review", "max_iterations", "iterations_exceeded",
        "stopped", "error", "llm_empty_response_error", "implicit_completion", "max_messages",
        "usage_limit", "guarded",
    ]
    assert RunStatus.ENDED == "ended"
    assert str(RunStatus.STOPPED) == "stopped"
    assert isinstance(RunStatus.COMPLETED, str)


def test_turn_result_and_outcome_are_frozen() -> None:
    turn = TurnResult(status="completed", response="hi", iterations=1, done=True)
    assert turn.status is RunStatus.COMPLETED
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        turn.status = RunStatus.ERROR  # type: ignore[misc]
    outcome = Outcome(status="ended", farewell="bye")
    assert outcome.status is RunStatus.ENDED
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        outcome.farewell = "x"  # type: ignore[misc]


def test_outcome_describe() -> None:
    outcome = Outcome(status="ended", farewell="Bye!", messages=3, model_calls=1)
    assert outcome.describe() == (
        "ended: the conversation was ended ('Bye!') (3 messages, 1 model call)"
    )
    assert Outcome(status="completed").describe() == (
        "completed: the conversation ran to its end (0 messages, 0 model calls)"
    )


@pytest.mark.parametrize(("status", "turn", "why"), [
    ("implicit_completion", {"note": "loop guard: the same reply 3 times in a row"},
     "the loop guard ended the turn (the same reply 3 times in a row)"),
    ("llm_empty_response_error", {"note": "loop guard: 3 empty replies in a row"},
     "the loop guard ended the turn (3 empty replies in a row)"),
    ("implicit_completion", {}, "the model answered without calling a finish tool"),
    ("max_iterations", {"iterations": 25},
     "the agent turn reached its max_iterations (25 model calls)"),
    ("iterations_exceeded", {"iterations": 5},
     "the task reached its max_iterations (5 model calls) unfinished"),
    ("completed", {"terminated_by": "finish"}, "the model called 'finish'"),
    ("usage_limit", {}, "the tokens limit was reached"),
])
def test_outcome_describe_names_the_real_ending(status: str, turn: dict[str, Any],
                                                why: str) -> None:
    outcome = Outcome(status=status, turn=TurnResult(status=status, **turn), limit="tokens",
                      messages=1, model_calls=1)
    assert outcome.describe() == f"{status}: {why} (1 message, 1 model call)"


class _Turn(Template):
    """Yields a TurnEnded event, as a ToolingTemplate would."""

    def render(self, session: Session) -> Flow:
        yield TurnEnded(TurnResult(status="completed", response="done", iterations=2,
                                   terminated_by="finish", done=True))
        return session


def _finished_session() -> Session:
    template = LinearTemplate([
        SystemTemplate("You teach {{ subject }} & more."),
        LoopTemplate([UserTemplate(), AssistantTemplate()], exit_loop_count=1),
        _Turn(),
        EndTemplate("Bye — à bientôt!"),
    ])
    usage = {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
    model = MockModel([Message("assistant", "Four.", metadata={"usage": usage})])
    session = Session(state={"subject": "math", "scores": [1, 2], "nested": {"a": None}})
    calls = [ToolCall("c1", "f", {"x": 1}), ToolCall("c2", "g", {}, raw_arguments="raw")]
    session.append(Message("assistant", "", tool_calls=calls))
    session.append(Message("tool", "ok", tool_call_id="c1", name="f"))
    return Runner(model, template, ScriptedInterface(["2+2?"])).run(session)


def test_json_round_trip_of_a_finished_session_is_exact() -> None:
    session = _finished_session()
    assert session.outcome is not None
    assert session.outcome.status is RunStatus.ENDED
    assert session.outcome.usage == Usage(5, 2, 7)
    assert session.turns == [TurnResult(status="completed", response="done", iterations=2,
                                        terminated_by="finish", done=True)]

    again = Session.from_json(session.to_json())
    assert again == session
    assert again.outcome == session.outcome
    assert again.outcome is not None and again.outcome.elapsed_s == session.outcome.elapsed_s
    assert Session.from_dict(session.to_dict()) == session
    assert again.to_json() == session.to_json()


def test_the_dict_carries_format_and_version() -> None:
    d = _finished_session().to_dict()
    assert d["format"] == "convo.session"
    assert d["version"] == 2  # 2: convo's own records in "internal", not in "state"
    assert list(d) == ["format", "version", "messages", "state", "turns", "outcome",
                       "approvals"]
    json.dumps(d)  # JSON-able as is


def test_a_newer_version_is_rejected() -> None:
    d = Session([Message("user", "hi")]).to_dict()
    d["version"] = 3
    with pytest.raises(ValueError) as info:
        Session.from_dict(d)
    assert str(info.value) == (
        "session format version 3 is newer than this convo reads (up to 2); upgrade convo"
    )


def test_another_format_is_rejected() -> None:
    with pytest.raises(ValueError) as info:
        Session.from_dict({"format": "something.else", "version": 1})
    assert str(info.value) == (
        "not a convo session: format is 'something.else', expected 'convo.session'"
    )


def test_state_that_is_not_json_says_so() -> None:
    session = Session(state={"when": object()})
    with pytest.raises(TypeError) as info:
        session.to_json()
    assert str(info.value).startswith("session cannot be written as JSON: session.state['when'] "
                                      "is a object (<object object at ")


def test_unfinished_session_round_trips() -> None:
    session = Session([Message("user", "hi")], {"a": 1})
    assert Session.from_json(session.to_json()) == session
    assert Session.from_json(session.to_json()).outcome is None
