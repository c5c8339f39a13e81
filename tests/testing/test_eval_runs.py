"""``evaluate``: runs, checks with their reasons, pass rates, judges on test models."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from provider_fakes import FakeProvider

from convo import Message
from convo.models import FunctionModel, MockModel
from convo.templates import LinearTemplate, LoopTemplate, ToolingTemplate, UserTemplate
from convo.testing import EvalResult, Scenario, evaluate
from convo.testing._evaluation import aevaluate
from convo.testing._evaluation.judge import transcript, verdict
from convo.tools import ToolContext, tool


@tool
def look_up(order: str) -> str:
    """Look an order up.

    Args:
        order: its number
    """
    return f"Order {order}: delivered."


@tool
def refund(ctx: ToolContext, order: str) -> str:
    """Refund an order.

    Args:
        order: its number
    """
    ctx.state["refunded"] = order
    return f"Refunded {order}."


bot = LoopTemplate([UserTemplate(), ToolingTemplate([look_up, refund])])


def shop(messages: Sequence[Message], tools: Any) -> str:
    last = messages[-1]
    if last.role == "tool":
        return f"Done: {last.content}"
    if "refund" in last.content:
        return "{look_up(order='A1')}{refund(order='A1')}"
    return "{look_up(order='A1')}"


def test_a_passing_scenario_makes_every_check() -> None:
    scenario = Scenario("refund", user=["refund A1 please"], repeat=3, checks={
        "status": "stopped", "tools_called": ["look_up", "refund"], "tools_not_called": ["x"],
        "state": {"refunded": "A1"}, "reply_matches": r"Done: Refunded A\d", "max_model_calls": 2})
    result = evaluate(bot, FunctionModel(shop), scenario)
    assert isinstance(result, EvalResult)
    assert (result.passed, result.passes, len(result.runs), result.pass_rate) == (True, 3, 3, 1.0)
    assert result.mean_model_calls == 2.0 and result.tokens is None
    assert [r.index for r in result.runs] == [1, 2, 3]
    result.assert_passed()


def test_each_failed_check_says_why() -> None:
    scenario = Scenario("wrong", user=["where is A1?"], checks={
        "status": "ended", "tools_called": ["look_up", "refund"], "tools_not_called": ["look_up"],
        "state": {"refunded": "A1"}, "reply_matches": "Refunded", "max_model_calls": 1})
    result = evaluate(bot, FunctionModel(shop), scenario)
    assert not result.passed and result.pass_rate == 0.0
    assert result.runs[0].failures == (
        ("status", "expected ended, the run ended stopped (stopped: the user quit or the run "
                   "was cancelled (4 messages, 2 model calls))"),
        ("tools_called", "expected look_up then refund in this order; refund was not called "
                         "after look_up (called: look_up)"),
        ("tools_not_called", "called look_up (1x), which it must not (called: look_up)"),
        ("state", "refunded is missing (expected 'A1')"),
        ("reply_matches", "'Refunded' not found in the last reply 'Done: Order A1: delivered.'"),
        ("max_model_calls", "the bot made 2 model calls, more than 1"),
    )
    assert result.lines()[0] == ("wrong run 1: status: expected ended, the run ended stopped "
                                 "(stopped: the user quit or the run was cancelled (4 messages, "
                                 "2 model calls))")
    with pytest.raises(AssertionError, match=r"^scenario 'wrong': 0/1 runs passed \(0%\), "
                                             r"below min_pass_rate 100%\nwrong run 1: status"):
        result.assert_passed()


def test_tools_called_is_a_subsequence_in_order() -> None:
    order_matters = Scenario("o", user=["refund"], checks={"tools_called": ["refund", "look_up"]})
    [run] = evaluate(bot, FunctionModel(shop), order_matters).runs
    assert run.failures == (("tools_called", "expected refund then look_up in this order; "
                             "look_up was not called after refund (called: look_up, refund)"),)
    skipping = Scenario("s", user=["refund"], checks={"tools_called": ["refund"]})
    assert evaluate(bot, FunctionModel(shop), skipping).passed


def test_pass_rate_against_min_pass_rate_over_repeats() -> None:
    calls = iter(range(100))

    def flaky(messages: Sequence[Message], tools: Any) -> str:  # every third run fails
        return "Bye" if next(calls) % 3 == 0 else "Hello"

    scenario = Scenario("flaky", user=["hi"], min_pass_rate=0.6,
                        checks={"reply_matches": "Hello"})
    tree = LinearTemplate([UserTemplate(), ToolingTemplate([])])
    result = evaluate(tree, FunctionModel(flaky), scenario, repeat=3, concurrency=1)
    assert (result.passes, len(result.runs), round(result.pass_rate, 2)) == (2, 3, 0.67)
    assert result.passed
    assert [r.passed for r in result.runs] == [False, True, True]


def test_a_mock_model_is_a_script_for_each_run() -> None:
    model = MockModel(["{look_up(order='B2')}", "It was delivered."])
    scenario = Scenario("m", user=["where?"], repeat=4,
                        checks={"reply_matches": "delivered", "tools_called": ["look_up"]})
    assert evaluate(bot, model, scenario).passes == 4
    assert model.calls == []  # each run had its own copy


def test_the_scenario_state_is_laid_over_the_starting_state() -> None:
    seen: list[dict[str, Any]] = []

    @tool
    def peek(ctx: ToolContext) -> str:
        """Look at the state."""
        seen.append(dict(ctx.state))
        return "ok"

    tree = LinearTemplate([UserTemplate(), ToolingTemplate([peek])])
    model = MockModel(["{peek()}", "fine"])
    scenario = Scenario("s", user=["go"], state={"tier": "gold"},
                        checks={"state": {"tier": "gold", "lang": "en"}})
    assert evaluate(tree, model, scenario, state={"tier": "basic", "lang": "en"}).passed
    assert seen == [{"tier": "gold", "lang": "en"}]


def test_approvals_answer_tool_calls_that_need_one(provider_model: FakeProvider) -> None:
    @tool(needs_approval=True)
    def pay(amount: int) -> str:
        """Pay.

        Args:
            amount: how much
        """
        return f"paid {amount}"

    tree = LinearTemplate([UserTemplate(), ToolingTemplate([pay])])
    # one script for both evaluations: the second run stops at its unanswered approval
    model = provider_model(["{pay(amount=3)}", "done", "{pay(amount=3)}"])
    rejected = Scenario("r", user=["pay"], approvals=["no, too much"],
                        checks={"status": "completed", "reply_matches": "done"})
    result = evaluate(tree, model, rejected)
    assert result.passed
    assert result.runs[0].session.messages[2].content == "Rejected by the user: no, too much"
    unanswered = Scenario("u", user=["pay"], checks={"status": "completed"})
    [run] = evaluate(tree, model, unanswered).runs
    assert run.failures[0][1].startswith("expected completed, the run ended stopped")


# -- the judge ---------------------------------------------------------------------------------

def test_a_judge_on_a_function_model_grades_the_transcript() -> None:
    asked: list[list[Message]] = []

    def grader(messages: Sequence[Message], tools: Any) -> str:
        asked.append(list(messages))
        if "refund(" in messages[-1].content:
            return '{"pass": true, "reason": "refunded"}'
        return '{"pass": false, "reason": "it never refunded"}'

    rubric = {"judge": {"rubric": "It refunds the order.", "model": FunctionModel(grader)}}
    good = evaluate(bot, FunctionModel(shop), Scenario("g", user=["refund"], checks=rubric))
    bad = evaluate(bot, FunctionModel(shop), Scenario("b", user=["where"], checks=rubric))
    assert good.passed and bad.runs[0].failures == (("judge", "it never refunded"),)
    system, user = asked[0]
    assert system.role == "system" and system.content.endswith("Rubric:\nIt refunds the order.")
    assert user.content == (
        "Transcript:\nuser: refund\nassistant calls look_up({\"order\": \"A1\"})\n"
        "assistant calls refund({\"order\": \"A1\"})\ntool look_up: Order A1: delivered.\n"
        "tool refund: Refunded A1.\nassistant: Done: Refunded A1.")


def test_the_judge_falls_back_to_judge_model_and_fails_without_one() -> None:
    scenario = Scenario("j", user=["hi"], checks={"judge": {"rubric": "kind"}})
    ok = FunctionModel(lambda m, t: "PASS - it was kind")
    assert evaluate(bot, FunctionModel(shop), scenario, judge_model=ok).passed
    [run] = evaluate(bot, FunctionModel(shop), scenario).runs
    assert run.failures == (("judge", "no judge model: give checks.judge.model in the scenario, "
                             "--model to convo eval (judge_model= to evaluate), or define "
                             "judge_model in the bot file"),)


@pytest.mark.parametrize(("reply", "expected"), [
    ('{"pass": true, "reason": "fine"}', (True, "fine")),
    ('Verdict: ```json\n{"pass": false, "reason": "rude"}\n```', (False, "rude")),
    ("FAIL: it was rude", (False, "it was rude")),
    ("pass", (True, "(no reason given)")),
    ("I think it went well", (False, "the judge's reply is not a verdict (expected {\"pass\": "
                                     "true|false, \"reason\": ...}): 'I think it went well'")),
])
def test_verdicts(reply: str, expected: tuple[bool, str]) -> None:
    assert verdict(reply) == expected


def test_a_judge_that_raises_fails_its_check_only() -> None:
    def broken(messages: Sequence[Message], tools: Any) -> str:
        raise RuntimeError("no network")

    scenario = Scenario("j", user=["hi"], checks={"status": "stopped", "judge": "kind"})
    [run] = evaluate(bot, FunctionModel(shop), scenario, judge_model=FunctionModel(broken)).runs
    assert run.failures == (("judge", "the judge model 'FunctionModel' failed: RuntimeError: "
                                      "no network"),)


def test_transcript_leaves_out_system_messages() -> None:
    from convo import Session

    session = Session([Message("system", "secret"), Message("user", "hi"),
                       Message("assistant", "hello")])
    assert transcript(session) == "user: hi\nassistant: hello"


# -- a simulated user --------------------------------------------------------------------------

def test_a_simulated_user_plays_the_user_from_its_goal() -> None:
    def customer(messages: Sequence[Message], tools: Any) -> str:
        assert "Your goal: get order A1 refunded" in messages[0].content
        return "refund A1 [DONE]" if len(messages) == 2 else "[DONE]"

    scenario = Scenario("sim", simulated={"goal": "get order A1 refunded", "max_turns": 2},
                        repeat=2, checks={"status": "stopped", "state": {"refunded": "A1"}})
    result = evaluate(bot, FunctionModel(shop), scenario, user_model=FunctionModel(customer))
    assert result.passes == 2
    assert result.runs[0].session.messages[0].content == "refund A1"


def test_a_simulated_user_without_a_model_is_an_error_before_any_run() -> None:
    from convo.testing._evaluation import ScenarioError

    scenario = Scenario("sim", simulated={"goal": "g"})
    with pytest.raises(ScenarioError, match=r"^scenario 'sim' has a simulated user, but no "
                                            r"model plays it: give simulated.model"):
        evaluate(bot, FunctionModel(shop), scenario)


def test_aevaluate_runs_on_the_running_loop_and_evaluate_says_to_use_it() -> None:
    scenario = Scenario("a", user=["hi"], repeat=5, checks={"status": "stopped"})

    async def main() -> EvalResult:
        with pytest.raises(RuntimeError, match="use `await aevaluate"):
            evaluate(bot, FunctionModel(shop), scenario)
        return await aevaluate(bot, FunctionModel(shop), scenario, concurrency=2)

    assert asyncio.run(main()).passes == 5


def test_a_run_that_ends_in_error_fails_without_a_status_check() -> None:
    def broken(messages: Sequence[Message], tools: Any) -> str:
        raise RuntimeError("the model fell over")

    [run] = evaluate(bot, FunctionModel(broken), Scenario("e", user=["hi"])).runs
    assert run.failures == (("error", "the run ended with an error: RuntimeError: the model "
                                      "fell over"),)
    allowed = Scenario("e", user=["hi"], checks={"status": ["error"]})
    assert evaluate(bot, FunctionModel(broken), allowed).passed
