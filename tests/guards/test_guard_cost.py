"""A run pays for guards only where they look: without guards no check is asked for at all
(no ``CheckGuards`` request, no step through the template's frames), and with an output guard
only the replies are; a guard that is a plain function is checked inside the pump (no trip
through the answerers), a judge or an ``async def`` check by the answerers."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

import convo._run.guarding
import convo.templates._batch
import convo.templates._guarding
from convo import Runner
from convo._requests import CheckGuards
from convo._run.stack import Forwarding
from convo._run.state import RunState
from convo.guards import Guard, ModelGuard, matches, pii
from convo.models import MockModel
from convo.templates import LinearTemplate, SystemTemplate, ToolingTemplate, UserTemplate
from convo.tools import tool


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


def spying() -> tuple[list[str], Callable[[str, Any], bool]]:
    """A guard check that passes everything, and the list of the values it was given."""
    seen: list[str] = []

    def spy(value: str, ctx: Any) -> bool:
        seen.append(value)
        return True

    return seen, spy


def test_a_run_without_guards_asks_for_no_check(asked: list[str]) -> None:
    session = Runner(model(), TEMPLATE).run()
    assert session.messages[-1].text == "It is sunny, call +47 912 34 567."
    assert asked == []


def test_a_plain_output_guard_checks_a_reply_where_it_comes_in(asked: list[str]) -> None:
    # The run's output guards, all plain functions: the pump checks each reply with text as
    # the model's answer comes in; the template asks for nothing (no request up its frames).
    seen, spy = spying()
    session = Runner(model(), TEMPLATE, guards=[Guard(spy, on="output"), pii()]).run()
    assert session.messages[-1].text == "It is sunny, call [phone]."
    assert session.outcome is not None and session.outcome.model_calls == 2
    assert seen == ["It is sunny, call +47 912 34 567."]  # the tool call's reply has no text
    assert asked == []


def test_a_turns_own_output_guard_asks_with_the_runs_first(asked: list[str]) -> None:
    seen, spy = spying()
    template = LinearTemplate([UserTemplate("Weather in Oslo?"),
                               ToolingTemplate([get_weather], guards=[Guard(spy, on="output")])])
    session = Runner(model(), template, guards=[pii()]).run()
    assert session.messages[-1].text == "It is sunny, call [phone]."
    assert seen == ["It is sunny, call [phone]."]  # the run's redaction, then the turn's guard
    assert asked == ["tool_call", "tool_result", "output"]  # (a turn's guards go everywhere)


def test_a_turns_own_guards_are_asked_for_everywhere_they_may_look(asked: list[str]) -> None:
    template = LinearTemplate([UserTemplate("Weather in Oslo?"),
                               ToolingTemplate([get_weather], guards=[pii(on="tool_result")])])
    Runner(model(), template).run()
    # (The turn's guards go with each request: the answerer picks those of each kind.)
    assert asked == ["tool_call", "tool_result", "output"]


# -- where a check is answered: plain functions inside the pump, the rest by the answerers ------

class Counting(Forwarding):
    """In front of the live answerer: the ``on`` of each check that reaches the answerers."""

    def __init__(self, inner: Any, reached: list[str]) -> None:
        super().__init__(inner)
        self.reached = reached

    def check_guards(self, request: CheckGuards) -> Any:
        self.reached.append(request.on)
        return super().check_guards(request)

    async def acheck_guards(self, request: CheckGuards) -> Any:
        self.reached.append(request.on)
        return await super().acheck_guards(request)


def reaching(guards: list[Any], how: str = "run") -> tuple[list[str], Any]:
    reached: list[str] = []

    class CountingRunner(Runner):
        def answerer(self, state: RunState) -> Any:
            return Counting(super().answerer(state), reached)

    runner = CountingRunner(model(), TEMPLATE, guards=guards)
    session = runner.run() if how == "run" else asyncio.run(runner.arun())
    return reached, session


@pytest.mark.parametrize("how", ["run", "arun"])
def test_a_plain_function_guard_is_checked_inside_the_pump(how: str) -> None:
    reached, session = reaching([pii(), pii(on="tool_call", name="args")], how)
    assert session.messages[-1].text == "It is sunny, call [phone]."
    assert reached == []


@pytest.mark.parametrize("how", ["run", "arun"])
def test_an_async_check_or_a_judge_goes_to_the_answerers(how: str) -> None:
    async def fine(value: Any, ctx: Any) -> bool:
        return True

    judge = ModelGuard(MockModel(['{"pass": true, "reason": "ok"}']), "Be kind.", on="output")
    for guards in ([pii(), Guard(fine, on="output")], [judge]):
        reached, session = reaching(guards, how)
        assert reached == ["output"]
        assert session.outcome is not None and session.outcome.status == "completed"


def test_a_plain_guard_never_runs_again_for_a_stored_value() -> None:
    checked: list[str] = []

    def cards(value: str, ctx: Any) -> Any:
        checked.append(value)
        return value.replace("4111 1111 1111 1111", "[card]")

    guards = [Guard(cards, on="output", action="redact")]
    first = Runner(MockModel(["card 4111 1111 1111 1111"]),
                   LinearTemplate([UserTemplate("hi"), ToolingTemplate([])]), guards=guards).run()
    assert checked == ["card 4111 1111 1111 1111"]
    resumed = Runner(MockModel(["no more"]), LinearTemplate([
        UserTemplate("hi"), ToolingTemplate([]), UserTemplate("more?"), ToolingTemplate([])]),
        guards=guards).resume(first)
    assert checked == ["card 4111 1111 1111 1111", "no more"]
    assert [m.text for m in resumed.messages] == ["hi", "card [card]", "more?", "no more"]


# -- what a reply checked by the pump pays for: its check, little else --------------------------

@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many ``GuardContext``s the pump made for a reply, and how often it worked out a
    reply's reasoning."""
    counts = {"contexts": 0, "reasoning": 0}
    context, thought = convo._run.guarding.GuardContext, convo._run.guarding._thought

    def counted_context(*args: Any) -> Any:
        counts["contexts"] += 1
        return context(*args)

    def counted_thought(*args: Any) -> Any:
        counts["reasoning"] += 1
        return thought(*args)

    monkeypatch.setattr(convo._run.guarding, "GuardContext", counted_context)
    monkeypatch.setattr(convo._run.guarding, "_thought", counted_thought)
    return counts


def test_a_built_in_guard_is_checked_without_a_context_or_a_reasoning_check(
        made: dict[str, int]) -> None:
    # The built-ins read nothing of ``ctx``: none is made for them; a reply without reasoning
    # has none to work out (its check costs nothing).
    session = Runner(model(), TEMPLATE, guards=[pii(), matches("secret", name="secret")]).run()
    assert session.messages[-1].text == "It is sunny, call [phone]."
    assert made == {"contexts": 0, "reasoning": 0}


def test_a_check_that_reads_its_context_gets_the_runs(made: dict[str, int]) -> None:
    got: list[Any] = []

    def reads(value: str, ctx: Any) -> bool:
        got.append((value, ctx.session, ctx.state, ctx.scope, ctx.call))
        return True

    session = Runner(model(), TEMPLATE, guards=[pii(), Guard(reads, on="output")]).run()
    assert got == [("It is sunny, call [phone].", session, session.state, (), None)]
    assert made == {"contexts": 1, "reasoning": 0}  # the reply with text; the call's has none


def test_each_runner_applies_its_own_guards_when_lists_take_turns() -> None:
    # How a run applies its guards is worked out once per list (``convo.guards._plan``): a
    # runner per conversation with one list, then another list, then the first again.
    redacting, blocking = [pii()], [matches("sunny", name="sunny")]
    texts = [Runner(model(), TEMPLATE, guards=guards).run().messages[-1].text
             for guards in (redacting, redacting, blocking, redacting, blocking)]
    assert texts == ["It is sunny, call [phone].", "It is sunny, call [phone].",
                     "Sorry, I can't help with that.", "It is sunny, call [phone].",
                     "Sorry, I can't help with that."]
    redacting.append(matches("sunny", name="sunny"))  # the same list, changed: checked again
    assert Runner(model(), TEMPLATE, guards=redacting).run().messages[-1].text == \
        "Sorry, I can't help with that."
    with pytest.raises(ValueError, match="pii"):
        Runner(model(), TEMPLATE, guards=[*redacting, pii()])
