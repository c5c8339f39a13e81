"""The cassette: judge, simulated-user and (real-model) bot calls recorded once, replayed
after; a missing call is made live and added, or, frozen, an error naming what changed.

The judge and the user are real ``OpenAIModel``s talking to the fake OpenAI server, so the
recording goes through the real SDK and the wire format."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from convo import FunctionModel, LoopTemplate, Message, OpenAIModel, ToolingTemplate, UserTemplate
from convo import tool as make_tool
from convo.testing import Cassette, OpenAIServer, Scenario, evaluate


@make_tool
def refund(order: str) -> str:
    """Refund an order.

    Args:
        order: its number
    """
    return f"Refunded {order}."


bot = LoopTemplate([UserTemplate(), ToolingTemplate([refund])])


def shop(messages: Sequence[Message], tools: Any) -> str:
    if messages[-1].role == "tool":
        return f"Done: {messages[-1].content}"
    return "{refund(order='A1')}" if "refund" in messages[-1].content else "How can I help?"


def plays(body: dict[str, Any]) -> str:
    """The fake server plays the judge, the simulated user, and the bot."""
    system = body["messages"][0]["content"] if body["messages"] else ""
    if system.startswith("You grade"):
        ok = "Refunded" in body["messages"][-1]["content"]
        return json.dumps({"pass": ok, "reason": "refunded" if ok else "no refund"})
    if system.startswith("You are playing a user"):
        return "Please refund A1. [DONE]"
    last = body["messages"][-1]
    return shop([Message(last["role"], last.get("content") or "")], body.get("tools"))


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(handler=plays) as server:
        yield server


def model(server: OpenAIServer, name: str) -> OpenAIModel:
    return OpenAIModel(name, base_url=server.base_url, api_key="test", max_retries=0)


SCENARIO = Scenario("sim", simulated={"goal": "get A1 refunded"}, repeat=2,
                    checks={"tools_called": ["refund"], "judge": "The order is refunded."})


def run(server: OpenAIServer, cassette: Cassette, scenario: Scenario = SCENARIO,
        judge: str = "judge-model") -> list[tuple[tuple[str, str], ...]]:
    result = evaluate(bot, FunctionModel(shop), scenario, cassette=cassette,
                      judge_model=model(server, judge), user_model=model(server, "user-model"))
    return [r.failures for r in result.runs]


def roles(path: Path) -> dict[str, list[str]]:
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["format"] == "convo.cassette" and doc["version"] == 1
    return {run: [f"{e['role']} {e['model']}" for e in calls] for run, calls in doc["runs"].items()}


def test_recorded_on_the_first_run_and_replayed_after(server: OpenAIServer,
                                                      tmp_path: Path) -> None:
    path = tmp_path / "eval.cassette.json"
    first = Cassette(path)
    assert run(server, first) == [(), ()]
    assert server.received == 4  # per run: the user once, then the judge
    assert roles(path) == {"sim #1": ["user user-model", "judge judge-model"],
                           "sim #2": ["user user-model", "judge judge-model"]}
    assert first.summary() == (f"cassette {path}: replayed 0 model calls, recorded 4 (a new "
                               "cassette)")
    written = path.read_text(encoding="utf-8")

    again = Cassette(path)
    assert run(server, again) == [(), ()]
    assert server.received == 4  # nothing new was asked
    assert again.summary() == f"cassette {path}: replayed 4 model calls"
    assert path.read_text(encoding="utf-8") == written  # nothing new: not rewritten


def test_a_missing_call_is_made_live_and_added_and_stale_ones_dropped(
        server: OpenAIServer, tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    run(server, Cassette(path))
    changed = Scenario("sim", simulated={"goal": "get A1 refunded"}, repeat=3,
                       checks={"judge": "The order is refunded, politely."})
    cassette = Cassette(path)
    assert run(server, cassette, changed) == [(), (), ()]
    assert server.received == 4 + 4  # three new judge calls, and the third run's user
    assert sorted(cassette.added) == ["'sim #1' judge call 1", "'sim #2' judge call 1",
                                      "'sim #3' judge call 1", "'sim #3' user call 1"]
    assert cassette.summary().startswith(
        f"cassette {path}: replayed 2 model calls, recorded 4 (not in the cassette, so made "
        "live and added: ")
    assert cassette.summary().endswith(" and 1 more)")
    doc = json.loads(path.read_text(encoding="utf-8"))
    judged = [e["request"]["messages"][0]["content"] for calls in doc["runs"].values()
              for e in calls if e["role"] == "judge"]
    assert len(judged) == 3 and all(j.endswith("refunded, politely.") for j in judged)


def test_frozen_a_changed_request_is_an_error_naming_what_changed(
        server: OpenAIServer, tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    run(server, Cassette(path))
    written = path.read_text(encoding="utf-8")
    changed = Scenario("sim", simulated={"goal": "get A1 refunded"}, repeat=2,
                       checks={"judge": "The order is refunded, politely."})
    frozen = Cassette(path, frozen=True)
    [first, second] = run(server, frozen, changed)
    assert server.received == 4  # nothing was asked live
    check, reason = first[0]
    assert check == "cassette"
    assert reason.startswith(f"cassette {path}, run 'sim #1', judge call 1 (model "
                             "'judge-model'): the request changed; - recorded, + requested now:")
    assert "\n-      The order is refunded.\n+      The order is refunded, politely." in reason
    assert second[0][0] == "cassette"
    assert sorted(frozen.misses) == ["sim #1", "sim #2"]
    assert path.read_text(encoding="utf-8") == written  # a frozen cassette is never written


def test_frozen_a_changed_judge_model_is_named(server: OpenAIServer, tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    run(server, Cassette(path))
    [first, _] = run(server, Cassette(path, frozen=True), judge="judge-2")
    assert first == (("cassette", f"cassette {path}, run 'sim #1', judge call 1 (model "
                                  "'judge-2'): the judge model changed: recorded 'judge-model', "
                                  "now 'judge-2'"),)


def test_frozen_a_run_the_cassette_lacks(server: OpenAIServer, tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    run(server, Cassette(path))
    more = Scenario("sim", simulated={"goal": "get A1 refunded"}, repeat=3,
                    checks={"judge": "The order is refunded."})
    failures = run(server, Cassette(path, frozen=True), more)
    assert failures[:2] == [(), ()]
    assert failures[2] == (("cassette", f"cassette {path}, run 'sim #3', user call 1 (model "
                                        "'user-model'): the cassette has no run 'sim #3' (a "
                                        "scenario or a repeat added since it was recorded?)"),)


def test_frozen_without_a_cassette_file(tmp_path: Path) -> None:
    from convo.testing._evaluation import CassetteMiss

    with pytest.raises(CassetteMiss, match="--frozen: there is no cassette at"):
        Cassette(tmp_path / "none.json", frozen=True)


def test_a_bot_on_a_real_model_is_recorded_too(server: OpenAIServer, tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    scenario = Scenario("real", user=["refund please"],
                        checks={"tools_called": ["refund"], "reply_matches": "Refunded A1"})
    result = evaluate(bot, model(server, "bot-model"), scenario, cassette=path)
    assert result.passed and server.received == 2
    assert result.tokens is not None and result.tokens > 0  # the server reports usage
    assert roles(path) == {"real #1": ["bot bot-model", "bot bot-model"]}
    server.handler = None  # any request now would get an HTTP 500
    replayed = evaluate(bot, model(server, "bot-model"), scenario, cassette=path)
    assert replayed.passed and server.received == 2
    assert replayed.tokens == result.tokens  # the recorded usage, replayed


def test_frozen_a_real_bot_whose_request_changed_fails_the_run(server: OpenAIServer,
                                                               tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    scenario = Scenario("real", user=["refund please"], checks={"status": "stopped"})
    assert evaluate(bot, model(server, "bot-model"), scenario, cassette=path).passed
    changed = Scenario("real", user=["refund it please"], checks={"status": "stopped"})
    [run] = evaluate(bot, model(server, "bot-model"), changed,
                     cassette=Cassette(path, frozen=True)).runs
    assert server.received == 2
    # The miss alone: the status check would only repeat it (the run ended in its error).
    assert [check for check, _ in run.failures] == ["cassette"]
    assert run.failures[0][1].endswith(
        "bot call 1 (model 'bot-model'): the request changed; - recorded, + requested now:\n"
        "-[0] user: refund please\n+[0] user: refund it please")
