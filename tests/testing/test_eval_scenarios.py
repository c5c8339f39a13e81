"""Scenarios: read from YAML or built in Python, every mistake named with its place."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from process_kit import printed

from convo.testing import Scenario, load_scenarios
from convo.testing._evaluation import Checks, Judge, ScenarioError, Simulated


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_file_of_scenarios_reads_every_field(tmp_path: Path) -> None:
    path = write(tmp_path, """
- name: one
  user: ["hi", "bye"]
  state: {tier: gold}
  repeat: 3
  min_pass_rate: 0.5
  approvals: [y, "no, a gift"]
  checks:
    status: [ended, stopped]
    tools_called: [a, b]
    tools_not_called: c
    state: {refunded: true}
    reply_matches: 'Bye\\b'
    max_model_calls: 4
    judge: {rubric: polite, model: gpt-4o}
- name: two
  simulated: {goal: order tea, persona: a parent, max_turns: 2}
""")
    one, two = load_scenarios(path)
    assert one == Scenario(
        "one", user=["hi", "bye"], state={"tier": "gold"}, repeat=3, min_pass_rate=0.5,
        approvals=["y", "no, a gift"],
        checks=Checks(status=("ended", "stopped"), tools_called=("a", "b"),
                      tools_not_called=("c",), state={"refunded": True},
                      reply_matches=re.compile(r"Bye\b"), max_model_calls=4,
                      judge=Judge(rubric="polite", model="gpt-4o")))
    assert two.simulated == Simulated(goal="order tea", persona="a parent", max_turns=2)
    assert two.user is None and two.repeat == 1 and two.min_pass_rate == 1.0


def test_a_mapping_with_a_scenarios_list_is_read_too(tmp_path: Path) -> None:
    path = write(tmp_path, "scenarios:\n  - {name: a, user: [hi]}\n")
    assert [s.name for s in load_scenarios(path)] == ["a"]


@pytest.mark.parametrize(("text", "error"), [
    ("- {name: a, user: [hi], checks: {tool_called: [x]}}",
     "s.yaml, scenario 1 ('a'): checks: unknown check 'tool_called' (did you mean "
     "'tools_called'?); expected one of status, tools_called, tools_not_called, state, "
     "reply_matches, max_model_calls, guard_tripped, judge"),
    ("- {name: a, user: [hi]}\n- {name: b, usr: [hi]}",
     "s.yaml, scenario 2 ('b'): unknown key 'usr' (did you mean 'user'?); expected one of "
     "name, user, simulated, state, repeat, min_pass_rate, checks, approvals"),
    ("- {name: a}", "s.yaml, scenario 1 ('a'): scenario 'a' has neither of user: [lines] and "
                    "simulated: {goal, persona, max_turns}; give exactly one"),
    ("- {name: a, user: [hi], checks: {status: done}}",
     "s.yaml, scenario 1 ('a'): checks.status: unknown status 'done'; expected one of "
     "completed, ended, pending_review, max_iterations, iterations_exceeded, stopped, error, "
     "llm_empty_response_error, implicit_completion, max_messages, usage_limit, guarded"),
    ("- {name: a, user: [hi], checks: {reply_matches: '(unclosed'}}",
     "s.yaml, scenario 1 ('a'): checks.reply_matches '(unclosed' is not a regular "
     "expression: missing ), unterminated subpattern at position 0"),
    ("- {name: a, user: [hi], repeat: 0}",
     "s.yaml, scenario 1 ('a'): repeat must be a whole number of at least 1, got 0"),
    ("- {name: a, user: [hi], min_pass_rate: 2}",
     "s.yaml, scenario 1 ('a'): min_pass_rate must be a number from 0 to 1, got 2"),
    ("- {name: a, user: [hi], checks: {judge: {model: x}}}",
     "s.yaml, scenario 1 ('a'): checks.judge.rubric must be text saying what a good "
     "conversation does, got None"),
    ("- {name: a, user: [hi]}\n- {name: a, user: [yo]}",
     "s.yaml, scenario 2 ('a'): two scenarios are named 'a'; names must differ"),
    ("[]", "s.yaml: expected a non-empty list of scenarios, got []"),
    ("- name: a\n  user: [hi\n", "s.yaml, line 3: not valid YAML: expected ',' or ']', but "
                                "got '<stream end>'"),
])
def test_mistakes_name_the_file_the_scenario_and_what_was_expected(
        tmp_path: Path, text: str, error: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ScenarioError) as info:
        load_scenarios(path)
    assert str(info.value) == error.replace("s.yaml", str(path))


def test_in_python_the_checks_are_a_mapping_validated_the_same_way() -> None:
    scenario = Scenario("x", user=["hi"], checks={"status": "completed", "judge": "kind"})
    assert scenario.checks.status == ("completed",)
    assert scenario.checks.judge == Judge(rubric="kind")
    with pytest.raises(ScenarioError, match="unknown check 'stat'"):
        Scenario("x", user=["hi"], checks={"stat": "completed"})
    with pytest.raises(ScenarioError, match="has both of user"):
        Scenario("x", user=["hi"], simulated={"goal": "g"})


def test_importing_convo_does_not_load_yaml() -> None:
    code = ("import sys, convo, convo.testing; convo.testing.Scenario; "
            "print('yaml' in sys.modules)")
    assert printed(code) == "False"
