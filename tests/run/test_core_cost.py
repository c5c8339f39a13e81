"""A run pays for what it uses: a feature nobody uses in a run costs it no call. A state that
never changes is never diffed (no ``RunState.mark``/``noted``), a safe point with nothing
steered is answered inside the pump (no trip through the answerers), a reply without facts
reads none, a replay answers each saved request through its own table (no ``ready`` per
request), and a run needs no context manager to say it is in progress."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import convo._reply
from convo import (
    LinearTemplate,
    MockModel,
    Runner,
    Session,
    SystemTemplate,
    ToolingTemplate,
    UserTemplate,
    tool,
)
from convo._requests import Request, TakeSteered
from convo._run.answerer import steered_from_session
from convo._run.replay import Replay
from convo._run.stack import Forwarding
from convo._run.state import RunState


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}, 21 degrees."


TEMPLATE = LinearTemplate([SystemTemplate("Be brief."), UserTemplate("Weather in Oslo?"),
                           ToolingTemplate([get_weather])])
FINAL = "It is sunny in Oslo."


def model() -> MockModel:
    return MockModel(["{get_weather(city='Oslo')}", FINAL])


def counting(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[int]:
    """Count the calls of ``owner.name`` (a class's method or a module's function)."""
    calls = [0]
    original: Callable[..., Any] = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


class Seen(Forwarding):
    """In front of the live answerer: the class of each request that reaches the stack."""

    __slots__ = ("seen",)

    def __init__(self, inner: Any, seen: list[str]) -> None:
        super().__init__(inner)
        self.seen = seen

    def answer(self, request: Request[Any]) -> Any:
        self.seen.append(type(request).__name__)
        return self.inner.answer(request)


class Plain(Forwarding):
    """In front of the live answerer, changing no kind (as a cancel layer for the others)."""

    __slots__ = ()


class SeenRunner(Runner):
    seen: list[str]

    def answerer(self, state: RunState) -> Any:
        return Seen(super().answerer(state), self.seen)


class PlainRunner(Runner):
    def answerer(self, state: RunState) -> Any:
        return Plain(super().answerer(state))


def test_a_run_whose_state_never_changes_never_diffs_it(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    marks = counting(monkeypatch, RunState, "mark")
    noted = counting(monkeypatch, RunState, "noted")
    session = Runner(model(), TEMPLATE).run()
    assert [m.role for m in session.messages] == ["system", "user", "assistant", "tool",
                                                  "assistant"]
    assert (marks[0], noted[0]) == (0, 0)


def test_a_safe_point_with_nothing_steered_is_answered_inside_the_pump() -> None:
    runner = SeenRunner(model(), TEMPLATE)
    runner.seen = []
    session = runner.run()
    assert session.messages[-1].text == FINAL
    # The answerer in front overrides ``answer``: it may answer a safe point its own way, so
    # it is asked (the pump answers only for a stack that takes it from ``Session.queued``).
    assert runner.seen == ["CallModel", "RunTools", "TakeSteered", "CallModel"]


def test_the_stack_is_not_asked_at_a_safe_point_when_it_takes_from_the_queue(
        monkeypatch: pytest.MonkeyPatch) -> None:
    taken = counting(monkeypatch, Forwarding, "take_steered")
    session = PlainRunner(model(), TEMPLATE).run()
    assert session.messages[-1].text == FINAL
    assert taken[0] == 0


def test_which_stacks_take_a_safe_point_from_the_queue() -> None:
    state = RunState(Runner(model(), TEMPLATE), Session())
    live = Runner(model(), TEMPLATE).answerer(state)
    assert steered_from_session(live) is True
    assert steered_from_session(Plain(Plain(live))) is True
    assert steered_from_session(Seen(live, [])) is False  # its own ``answer``

    class Own(Forwarding):
        __slots__ = ()

        def take_steered(self, request: TakeSteered) -> Any:
            return ()

    assert steered_from_session(Own(live)) is False
    assert steered_from_session(object()) is False


def test_a_reply_without_facts_reads_none(monkeypatch: pytest.MonkeyPatch) -> None:
    finishes = counting(monkeypatch, convo._reply, "finish_of")
    usages = counting(monkeypatch, convo._reply, "usage_of")
    session = Runner(model(), TEMPLATE).run()
    assert session.outcome is not None and session.outcome.model_calls == 2
    assert (finishes[0], usages[0]) == (0, 0)
    assert session.messages[-1].finish is None and session.messages[-1].usage is None


def test_a_replay_answers_saved_requests_without_ready(monkeypatch: pytest.MonkeyPatch
                                                      ) -> None:
    saved = Runner(model(), TEMPLATE).run()
    ready = counting(monkeypatch, Replay, "ready")
    asked = counting(monkeypatch, Replay, "saved_call_model")
    again = Runner(MockModel([]), TEMPLATE).resume(saved)
    assert [m.text for m in again.messages] == [m.text for m in saved.messages]
    assert again.outcome is not None and again.outcome.model_calls == 2  # counted, not made
    assert ready[0] == 0
    assert asked[0] == 2
