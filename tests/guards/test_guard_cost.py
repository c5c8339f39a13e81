"""A run pays for guards only where they look: without guards no check is asked for at all
(no ``CheckGuards`` request, no step through the template's frames), and with an output guard
only the replies are."""

from __future__ import annotations

from typing import Any

import pytest

import convo.templates._batch
import convo.templates._guarding
from convo import (
    LinearTemplate,
    MockModel,
    Runner,
    SystemTemplate,
    ToolingTemplate,
    UserTemplate,
    tool,
)
from convo._requests import CheckGuards
from convo.guards import pii


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}, 21 degrees."


TEMPLATE = LinearTemplate([SystemTemplate("Be brief."), UserTemplate("Weather in Oslo?"),
                           ToolingTemplate([get_weather])])


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ``on`` of every ``CheckGuards`` a template makes."""
    made: list[str] = []

    class Counted(CheckGuards):
        def __init__(self, on: str, *args: Any, **kwargs: Any) -> None:
            made.append(on)
            super().__init__(on, *args, **kwargs)

    monkeypatch.setattr(convo.templates._guarding, "CheckGuards", Counted)
    monkeypatch.setattr(convo.templates._batch, "CheckGuards", Counted)
    return made


def model() -> MockModel:
    return MockModel(["{get_weather(city='Oslo')}", "It is sunny, call +47 912 34 567."])


def test_a_run_without_guards_asks_for_no_check(asked: list[str]) -> None:
    session = Runner(model(), TEMPLATE).run()
    assert session.messages[-1].text == "It is sunny, call +47 912 34 567."
    assert asked == []


def test_an_output_guard_is_asked_for_replies_with_text_only(asked: list[str]) -> None:
    session = Runner(model(), TEMPLATE, guards=[pii()]).run()
    assert session.messages[-1].text == "It is sunny, call [phone]."
    assert session.outcome is not None and session.outcome.model_calls == 2
    assert asked == ["output"]


def test_a_turns_own_guards_are_asked_for_everywhere_they_may_look(asked: list[str]) -> None:
    template = LinearTemplate([UserTemplate("Weather in Oslo?"),
                               ToolingTemplate([get_weather], guards=[pii(on="tool_result")])])
    Runner(model(), template).run()
    # (The turn's guards go with each request: the answerer picks those of each kind.)
    assert asked == ["tool_call", "tool_result", "output"]
