"""``convo test``: a bot file against a simulated user, offline and against a live server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from convo.testing import OpenAIServer

BOT = """
from convo import AssistantTemplate, LinearTemplate, LoopTemplate, MockModel, UserTemplate

template = LinearTemplate([AssistantTemplate("Hi! What can I get you?"),
                           LoopTemplate([UserTemplate(), AssistantTemplate()])])
mock_model = MockModel(["One latte.", "You're welcome."], repeat_last=True)
"""


def convo(path: Path, *args: str, key: bool = False) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env.update(NO_COLOR="1", PYTHONIOENCODING="utf-8")
    if key:
        env["OPENAI_API_KEY"] = "test"
    return subprocess.run([sys.executable, "-m", "convo", "test", str(path), *args],
                          capture_output=True, text=True, env=env, timeout=30, check=False)


def bot(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "bot.py"
    path.write_text(BOT + extra, encoding="utf-8")
    return path


def test_offline_the_demo_input_plays_the_user(tmp_path: Path) -> None:
    result = convo(bot(tmp_path, "demo_input = ['A latte, please.', 'Thanks!']\n"),
                   "--user", "a student|order a latte")
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "--- convo test: 'a student' wants to 'order a latte' (at most 10 turns) ---\n"
        "Assistant: Hi! What can I get you?\n"
        "User (simulated): A latte, please.\n"
        "Assistant: One latte.\n"
        "User (simulated): Thanks!\n"
        "Assistant: You're welcome.\n"
        "--- conversation stopped: the user quit or the run was cancelled (5 messages, "
        "2 model calls) ---\n"
        "--- simulated user: it said its goal was reached, after 2 turns ---\n"
    )
    assert "running offline on" in result.stderr


def test_a_user_that_runs_out_of_turns_exits_3(tmp_path: Path) -> None:
    result = convo(bot(tmp_path, "user_model = MockModel(['Hm?'], repeat_last=True)\n"),
                   "--turns", "2")
    assert result.returncode == 3
    assert result.stdout.splitlines()[0] == (
        "--- convo test: 'a curious first-time user' wants to 'find out what this assistant "
        "can do for you, then say goodbye' (at most 2 turns) ---")
    assert result.stdout.splitlines()[-1] == (
        "--- simulated user: it reached max_turns=2 without reaching its goal ---")


@pytest.mark.parametrize(("args", "extra", "message"), [
    (["--user", "no bar"], "", 'convo: error: --user expects "PERSONA|GOAL", e.g. --user '
     '"a busy parent|order two lattes to take away"; got \'no bar\'\n'),
    (["--turns", "0"], "", "convo: error: --turns must be at least 1, got 0\n"),
    ([], "", "convo: error: offline, the simulated user needs a model too: define user_model "
     "(a model that plays the user) or demo_input (lines the user says) in {path}, or set "
     "OPENAI_API_KEY\n"),
    ([], "user_model = 3\n", "convo: error: {path}: user_model is a int, not a model\n"),
])
def test_usage_problems_are_one_line(tmp_path: Path, args: list[str], extra: str,
                                     message: str) -> None:
    path = bot(tmp_path, extra)
    result = convo(path, *args)
    assert result.returncode == 2
    assert result.stderr.endswith(message.format(path=path))


def test_live_one_model_plays_both_sides(tmp_path: Path) -> None:
    def reply(body: dict[str, Any]) -> str:
        messages = body["messages"]
        if messages[0]["role"] == "system" and "playing a user" in messages[0]["content"]:
            said = sum(m["role"] == "assistant" for m in messages)
            return ["Two lattes, please.", "Great, thanks! [DONE]"][said]
        return "Two lattes coming up."

    with OpenAIServer(handler=reply) as server:
        result = convo(bot(tmp_path), "--user", "a busy parent|order two lattes",
                       "--base-url", server.base_url, "--no-stream", key=True)
        user_prompt = server.requests[2]["messages"]  # the user's second turn
    assert result.returncode == 0, result.stderr
    shown = [line for line in result.stdout.splitlines() if not line.startswith("  (")]
    assert shown[1:6] == [  # (usage lines, "  (11 tokens in, 4 out)", left out)
        "Assistant: Hi! What can I get you?",
        "User (simulated): Two lattes, please.",
        "Assistant: Two lattes coming up.",
        "User (simulated): Great, thanks!",
        "Assistant: Two lattes coming up.",
    ]
    assert "Who you are: a busy parent" in user_prompt[0]["content"]
    assert user_prompt[1:] == [
        {"role": "user", "content": "Hi! What can I get you?"},
        {"role": "assistant", "content": "Two lattes, please."},
        {"role": "user", "content": "Two lattes coming up."},
    ]


def test_a_failing_run_exits_1(tmp_path: Path) -> None:
    path = bot(tmp_path, "demo_input = ['hi']\nmock_model = MockModel([])\n")
    result = convo(path)
    assert result.returncode == 1
    assert "--- conversation error: " in result.stdout
    debug = convo(path, "--debug")
    assert debug.returncode == 1
    assert "Traceback" in debug.stderr and "ScriptError: MockModel ran out" in debug.stderr
