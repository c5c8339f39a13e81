"""The ``guard_tripped`` check of a scenario (API.md §27): a guard's name, or false."""

from __future__ import annotations

import pytest

from convo import LinearTemplate, LoopTemplate, MockModel, ToolingTemplate, UserTemplate
from convo.guards import pii
from convo.testing._evaluation import Scenario, evaluate
from convo.testing._evaluation.scenario import ScenarioError

BOT = LinearTemplate([LoopTemplate([UserTemplate(), ToolingTemplate([])])])


def test_guard_tripped_names_a_guard_or_says_none() -> None:
    tripped = Scenario("card", user=["my card?"], checks={"guard_tripped": "pii"})
    clean = Scenario("clean", user=["hi"], checks={"guard_tripped": False})
    card = MockModel(["it is 4111 1111 1111 1111"])
    assert evaluate(BOT, card, tripped, guards=[pii()]).passed
    result = evaluate(BOT, MockModel(["it is 4111 1111 1111 1111"]), clean, guards=[pii()])
    assert result.runs[0].failures == (("guard_tripped", "expected no guard to trip; pii did"),)
    result = evaluate(BOT, MockModel(["hello"]), tripped, guards=[pii()])
    assert result.runs[0].failures == (("guard_tripped", "expected guard pii to trip; none did"),)
    assert evaluate(BOT, MockModel(["hello"]), clean, guards=[pii()]).passed


def test_guard_tripped_must_be_a_name_or_false() -> None:
    with pytest.raises(ScenarioError, match=r"checks\.guard_tripped must be a guard's name "
                                            r"or false, got 3"):
        Scenario("x", user=["hi"], checks={"guard_tripped": 3})
