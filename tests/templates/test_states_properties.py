"""Random machines with random moves: every run ends within max_transitions, nothing is lost.

Each state is a model turn offered a transition to every state (sometimes after a system
message), a ``GotoTemplate`` to a random state, or a plain message. The model cycles through
a random script of replies: text (the state ends, so does the machine), one or several
transition calls (the first one moves), or a transition beside ``finish``. A script made only
of moves never ends by itself: ``max_transitions`` must end it. Each run's transcript,
resumed, replays every move without a model call and ends the same way.
"""

from __future__ import annotations

import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from convo import Message, Runner, RunStatus, Session, StateEntered
from convo._resume import resume
from convo._transcript import TranscriptWriter, load_transcript
from convo.events import Event, MessageAdded
from convo.models import FunctionModel, MockModel
from convo.templates import (
    GotoTemplate,
    LinearTemplate,
    StateMachineTemplate,
    SystemTemplate,
    Template,
    ToolingTemplate,
)
from convo.tools import FinishTool, Transition


@st.composite
def machines(draw: st.DrawFn) -> tuple[StateMachineTemplate, list[str]]:
    names = [f"s{i}" for i in range(draw(st.integers(1, 4)))]
    moves = [Transition(name, f"Go to {name}.") for name in names]
    states: dict[str, Template] = {}
    for name in names:
        kind = draw(st.sampled_from(["turn", "prompted turn", "goto", "message"]))
        turn = ToolingTemplate([*moves, FinishTool()])
        states[name] = {
            "turn": turn,
            "prompted turn": LinearTemplate([SystemTemplate(f"In {name}."), turn]),
            "goto": GotoTemplate(draw(st.sampled_from(names))),
            "message": SystemTemplate(f"Only {name}."),
        }[kind]
    call = st.sampled_from(names).map(lambda name: f"{{go_to_{name}()}}")
    reply = st.one_of(
        st.just("Plain text."),
        call,
        st.lists(call, min_size=2, max_size=3).map(" ".join),
        call.map(lambda c: c + " {finish()}"),
    )
    script = draw(st.lists(reply, min_size=1, max_size=12))
    machine = StateMachineTemplate(states, start=draw(st.sampled_from(names)),
                                   max_transitions=draw(st.integers(0, 8)))
    return machine, script


def cycling(script: Sequence[str]) -> FunctionModel:
    calls = iter(range(10**6))
    return FunctionModel(lambda messages, tools: script[next(calls) % len(script)])


def assert_calls_answered_once(messages: Sequence[Message]) -> None:
    answered = 0
    for i, message in enumerate(messages):
        if message.role == "assistant" and message.tool_calls:
            ids = [c.id for c in message.tool_calls]
            after = messages[i + 1:i + 1 + len(ids)]
            assert [(m.role, m.tool_call_id) for m in after] == [("tool", x) for x in ids]
            answered += len(ids)
    assert sum(m.role == "tool" for m in messages) == answered


@settings(max_examples=150, deadline=None)
@given(machines())
def test_random_machines_end_within_max_transitions_and_lose_nothing(
        case: tuple[StateMachineTemplate, list[str]]) -> None:
    machine, script = case
    events: list[Event] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.jsonl"
        session = Session()
        writer = TranscriptWriter.create(path, session)

        def on_event(event: Event) -> None:
            events.append(event)
            writer(event)

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # unreachable states are fine here
                runner = Runner(cycling(script), LinearTemplate([machine, SystemTemplate("after")]),
                                on_event=on_event, raise_errors=False, max_messages=10_000)
            runner.run(session)
        finally:
            writer.close()
        saved = load_transcript(path)
        assert saved == session  # the transcript has every line too

    # Resumed, the saved moves replay without a single model call, to the same end.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        resumed, again = resume(LinearTemplate([machine, SystemTemplate("after")]), saved)
        Runner(MockModel([]), resumed, raise_errors=False).run(again)
    assert again.messages == session.messages
    assert again.outcome is not None and session.outcome is not None
    assert (again.outcome.status, again.outcome.error) == (session.outcome.status,
                                                           session.outcome.error)

    outcome = session.outcome
    assert outcome is not None
    moves = sum(isinstance(e, StateEntered) for e in events) - 1
    assert 0 <= moves <= machine.max_transitions
    if outcome.status is RunStatus.ERROR:
        assert outcome.error is not None
        assert f"more than max_transitions={machine.max_transitions} transitions" in outcome.error
        assert moves == machine.max_transitions
        assert Message("system", "after") not in session.messages
    else:
        assert outcome.status is RunStatus.COMPLETED
        assert session.messages[-1] == Message("system", "after")
    added = [e.message for e in events if isinstance(e, MessageAdded)]
    assert added == session.messages  # every message the run made is in the session
    assert outcome.messages == len(session.messages)
    assert_calls_answered_once(session.messages)
