"""``convo eval``: the table, failure lines, exit codes, --json, --baseline, JUnit, and a
cassette on the fake OpenAI server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from convo.cli import main
from convo.testing import OpenAIServer

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "refund_bot.py"

LOOK_UP = """
@tool
def look_up(order: str) -> str:
    '''Look an order up.

    Args:
        order: its number
    '''
    return f"Order {order}: delivered."
"""  # the tool both bot files below offer

BOT = """
from convo import FunctionModel, LoopTemplate, ToolingTemplate, UserTemplate, tool
""" + LOOK_UP + """
def reply(messages, tools):
    last = messages[-1]
    if last.role == "tool":
        return "Done: " + last.content
    return "{look_up(order='A1')}" if "A1" in last.content else "Hello!"

template = LoopTemplate([UserTemplate(), ToolingTemplate([look_up])])
mock_model = FunctionModel(reply)
"""


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture
def bot(tmp_path: Path) -> Path:
    path = tmp_path / "bot.py"
    path.write_text(BOT, encoding="utf-8")
    return path


def scenarios(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_refund_example_runs_offline_with_this_table() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    done = subprocess.run(
        [sys.executable, "-m", "convo", "eval", str(EXAMPLE),
         str(EXAMPLE.with_name("refund_bot.eval.yaml"))],
        capture_output=True, text=True, env=env, timeout=60, check=False, cwd=ROOT)
    assert done.stdout == """\
scenario                         passes  pass rate  model calls  tokens
looks up an order                   1/1       100%          3.0       -
refunds once approved               1/1       100%          3.0       -
a rejected refund is not made       2/2       100%          2.0       -
a customer asks after a bicycle     1/1       100%          3.0       -

4 scenarios, 5 runs: 4 passed, 0 failed
"""
    assert done.stderr == (f"convo: no OPENAI_API_KEY or --base-url: running offline on "
                           f"{EXAMPLE}'s mock_model\n")
    assert done.returncode == 0


FAILING = """
- name: greets
  user: [hi]
  repeat: 2
  checks: {status: stopped, reply_matches: Hello}
- name: looks up
  user: ["where is A1?"]
  min_pass_rate: 0.5
  checks:
    tools_called: [look_up, refund]
    reply_matches: shipped
"""


def test_a_failing_check_is_named_with_why_and_exits_1(
        offline: None, bot: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["eval", str(bot), str(scenarios(tmp_path, FAILING))])
    out = capsys.readouterr().out
    assert out == """\
scenario  passes  pass rate  model calls  tokens
greets       2/2       100%          1.0       -
looks up     0/1         0%          2.0       -  FAIL: below min_pass_rate 50%

looks up run 1: tools_called: expected look_up then refund in this order; refund was not \
called after look_up (called: look_up)
looks up run 1: reply_matches: 'shipped' not found in the last reply 'Done: Order A1: \
delivered.'

2 scenarios, 3 runs: 1 passed, 1 failed
"""
    assert code == 1


def test_json_and_a_baseline_that_was_better(
        offline: None, bot: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = scenarios(tmp_path, "- {name: greets, user: [hi], min_pass_rate: 0.5, "
                               "checks: {reply_matches: Hello}}\n")
    out = tmp_path / "now.json"
    assert main(["eval", str(bot), str(spec), "--repeat", "3", "--json", str(out)]) == 0
    assert json.loads(out.read_text(encoding="utf-8")) == {"scenarios": [{
        "name": "greets", "passes": 3, "runs": 3, "pass_rate": 1.0, "mean_model_calls": 1.0,
        "tokens": None, "failures": []}]}
    capsys.readouterr()

    worse = scenarios(tmp_path, "- {name: greets, user: [hi], min_pass_rate: 0, "
                                "checks: {reply_matches: Bye}}\n", "worse.yaml")
    assert main(["eval", str(bot), str(worse), "--baseline", str(out)]) == 1
    table = capsys.readouterr().out.splitlines()
    assert table[1] == ("greets       0/1         0%          1.0       -  FAIL: below the "
                        "baseline's 100%")
    assert main(["eval", str(bot), str(spec), "--baseline", str(out)]) == 0


def test_junit_is_read_back_by_a_junit_parser(
        offline: None, bot: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from junitparser import Failure, JUnitXml

    report = tmp_path / "junit.xml"
    assert main(["eval", str(bot), str(scenarios(tmp_path, FAILING)), "--junit",
                 str(report)]) == 1
    xml = JUnitXml.fromfile(str(report))
    [suite] = list(xml)
    assert (suite.name, suite.tests, suite.failures, suite.errors) == ("s", 2, 1, 0)
    greets, looks_up = list(suite)
    assert (greets.name, greets.classname, greets.is_passed) == ("greets", "s", True)
    assert looks_up.name == "looks up" and not looks_up.is_passed
    [failure] = looks_up.result
    assert isinstance(failure, Failure)
    assert failure.message == "0/1 runs passed (0%), below min_pass_rate 50%"
    assert failure.text.splitlines()[0].startswith("looks up run 1: tools_called: expected")


@pytest.mark.parametrize(("text", "error"), [
    ("- name: a\n  user: [hi\n", "{path}, line 3: not valid YAML: expected ',' or ']', but got "
                                 "'<stream end>'"),
    ("- {name: a, user: [hi], checks: {judge_by: x}}",
     "{path}, scenario 1 ('a'): checks: unknown check 'judge_by' (did you mean 'judge'?); "
     "expected one of status, "
     "tools_called, tools_not_called, state, reply_matches, max_model_calls, guard_tripped, judge"),
])
def test_bad_yaml_or_an_unknown_check_is_one_line_and_exit_2(
        offline: None, bot: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        text: str, error: str) -> None:
    path = scenarios(tmp_path, text)
    assert main(["eval", str(bot), str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"convo: error: {error.format(path=path)}\n"


@pytest.mark.parametrize(("args", "error"), [
    (["--frozen"], "--frozen needs --cassette PATH: the cassette to replay"),
    (["--repeat", "0"], "--repeat must be at least 1, got 0"),
    (["--concurrency", "0"], "--concurrency must be at least 1, got 0"),
    (["--baseline", "nowhere.json"], "--baseline nowhere.json: cannot read it (No such file or "
                                     "directory)"),
])
def test_bad_options_exit_2(offline: None, bot: Path, tmp_path: Path,
                            capsys: pytest.CaptureFixture[str], args: list[str],
                            error: str) -> None:
    spec = scenarios(tmp_path, "- {name: a, user: [hi]}\n")
    assert main(["eval", str(bot), str(spec), *args]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"convo: error: {error}"


def test_a_simulated_scenario_without_a_user_model_exits_2(
        offline: None, bot: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = scenarios(tmp_path, "- {name: sim, simulated: {goal: tea}}\n")
    assert main(["eval", str(bot), str(spec)]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "convo: error: scenario 'sim' has a simulated user, but no model plays it: give "
        "simulated.model, --model to convo eval (user_model= to evaluate), or define "
        "user_model in the bot file")


# -- a judge named by model, through a cassette, on the fake server ----------------------------

JUDGED = """
- name: judged
  user: ["where is A1?"]
  checks:
    judge: {rubric: "RUBRIC", model: judge-x}
"""


def grade(body: dict[str, Any]) -> str:
    assert body["model"] == "judge-x"
    ok = "delivered" in body["messages"][-1]["content"]
    return json.dumps({"pass": ok, "reason": "said it was delivered" if ok else "did not"})


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    with OpenAIServer(handler=grade) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        yield server


def test_a_cassette_on_the_command_line(server: OpenAIServer, bot: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    cassette = tmp_path / "judge.json"
    spec = scenarios(tmp_path, JUDGED.replace("RUBRIC", "It says where the order is."))
    command = ["eval", str(bot), str(spec), "--mock", "--cassette", str(cassette)]
    assert main(command) == 0
    assert server.received == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"convo: cassette {cassette}: replayed 0 model calls, recorded 1 (a new cassette)")

    assert main([*command, "--frozen"]) == 0
    assert server.received == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"convo: cassette {cassette}: replayed 1 model call")

    spec.write_text(JUDGED.replace("RUBRIC", "It says when it arrives."), encoding="utf-8")
    assert main([*command, "--frozen"]) == 1
    assert server.received == 1
    captured = capsys.readouterr()
    assert captured.err.splitlines()[-1] == (
        f"convo: error: --frozen: 1 model call not in the cassette {cassette} (see the "
        "cassette lines above)")
    assert (f"judged run 1: cassette: cassette {cassette}, run 'judged #1', judge call 1 "
            "(model 'judge-x'): the request changed;") in captured.out

    assert main(command) == 0  # not frozen: made live and added
    assert server.received == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"convo: cassette {cassette}: replayed 0 model calls, recorded 1 (not in the cassette, "
        "so made live and added: 'judged #1' judge call 1)")


def test_model_names_the_judge_when_the_scenario_does_not(
        server: OpenAIServer, bot: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    spec = scenarios(tmp_path, JUDGED.replace(", model: judge-x", ""))
    assert main(["eval", str(bot), str(spec), "--mock", "--model", "judge-x"]) == 0
    assert server.received == 1 and server.requests[0]["model"] == "judge-x"


def test_a_progress_bar_on_a_terminal_only() -> None:
    import io

    from convo.cli._eval import _Progress
    from convo.testing._evaluation.result import RunResult

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    from convo import Session

    ok = RunResult(scenario="a", index=1, failures=(), session=Session())
    bad = RunResult(scenario="a", index=2, failures=(("status", "no"),), session=Session())
    screen = Terminal()
    progress = _Progress(3, screen)
    progress(ok)
    progress(bad)
    progress.close()
    assert screen.getvalue() == (
        "\r[##########....................] 1/3 runs, 0 failed"
        "\r[####################..........] 2/3 runs, 1 failed\r\x1b[K")
    piped = io.StringIO()
    quiet = _Progress(1, piped)
    quiet(ok)
    quiet.close()
    assert piped.getvalue() == ""


def test_reports_and_a_cassette_go_into_folders_that_do_not_exist_yet(
        server: OpenAIServer, bot: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    spec = scenarios(tmp_path, JUDGED.replace("RUBRIC", "It says where the order is."))
    out = tmp_path / "out"
    assert main(["eval", str(bot), str(spec), "--mock", "--junit", str(out / "report.xml"),
                 "--json", str(out / "json" / "report.json"), "--cassette",
                 str(out / "tapes" / "judge.json")]) == 0
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"convo: cassette {out / 'tapes' / 'judge.json'}: replayed 0 model calls, recorded 1 "
        "(a new cassette)")
    assert (out / "report.xml").read_text(encoding="utf-8").startswith(
        "<?xml version='1.0' encoding='utf-8'?>\n<testsuites")
    assert json.loads((out / "json" / "report.json").read_text(encoding="utf-8"))[
        "scenarios"][0]["passes"] == 1
    assert json.loads((out / "tapes" / "judge.json").read_text(encoding="utf-8"))[
        "format"] == "convo.cassette"


PROMPTED = '''
from convo import LinearTemplate, LoopTemplate, SystemTemplate, ToolingTemplate, UserTemplate, tool
''' + LOOK_UP + '''
@tool
def refund(order: str) -> str:
    """Refund an order.

    Args:
        order: its number
    """
    return f"Refunded {order}."

template = LinearTemplate([SystemTemplate("PROMPT"), LoopTemplate([
    UserTemplate(), ToolingTemplate([look_up, refund])])])
'''
TWO_BY_FOUR = """
- {name: greets, user: [hi], repeat: 4, checks: {status: stopped, reply_matches: Hello}}
- {name: thanks, user: [hi, thanks], repeat: 4, checks: {reply_matches: Hello}}
"""


def test_frozen_says_the_first_difference_once_per_scenario(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    bot = tmp_path / "bot.py"
    bot.write_text(PROMPTED.replace("PROMPT", "Be brief."), encoding="utf-8")
    spec, cassette = scenarios(tmp_path, TWO_BY_FOUR), tmp_path / "c.json"
    with OpenAIServer(handler=lambda body: "Hello!") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        command = ["eval", str(bot), str(spec), "--cassette", str(cassette)]
        assert main(command) == 0
        capsys.readouterr()
        bot.write_text(PROMPTED.replace("PROMPT", "Be very brief."), encoding="utf-8")
        assert main([*command, "--frozen"]) == 1
        assert server.received == 12  # the recording's calls only
    captured = capsys.readouterr()
    changed = ("the request changed; - recorded, + requested now:\n"
               "-[0] system: Be brief.\n+[0] system: Be very brief.\n")
    assert captured.out == f"""\
scenario  passes  pass rate  model calls  tokens
greets       0/4         0%          1.0       -  FAIL: below min_pass_rate 100%
thanks       0/4         0%          1.0       -  FAIL: below min_pass_rate 100%

greets run 1: cassette: cassette {cassette}, run 'greets #1', bot call 1 (model \
'gpt-4o-mini'): {changed}\
greets runs 2, 3, 4: cassette: not in the cassette either (the first difference is above)
thanks run 1: cassette: cassette {cassette}, run 'thanks #1', bot call 1 (model \
'gpt-4o-mini'): {changed}\
thanks runs 2, 3, 4: cassette: not in the cassette either (the first difference is above)

2 scenarios, 8 runs: 0 passed, 2 failed
"""
    assert len(captured.out.splitlines()) == 14  # each diff was printed twice per run
    assert captured.err == (f"convo: error: --frozen: 8 model calls not in the cassette "
                            f"{cassette} (see the cassette lines above)\n")


def test_a_bot_files_guards_apply_and_guard_tripped_reads_them(
        offline: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "guarded.py"
    path.write_text(BOT.replace("template = ", "from convo.guards import pii\n"
                                "guards = [pii()]\ntemplate = ").replace(
        '"Hello!"', '"Hello! Call +47 912 34 567."'), encoding="utf-8")
    code = main(["eval", str(path), str(scenarios(tmp_path, """
- name: tripped
  user: [hi]
  checks: {guard_tripped: pii, reply_matches: "Call \\\\[phone\\\\]"}
- name: none tripped
  user: [hi]
  checks: {guard_tripped: false}
"""))])
    out = capsys.readouterr().out
    assert out.splitlines()[1:3] == [
        "tripped          1/1       100%          1.0       -",
        "none tripped     0/1         0%          1.0       -  FAIL: below min_pass_rate 100%"]
    assert "none tripped run 1: guard_tripped: expected no guard to trip; pii did" in out
    assert code == 1
