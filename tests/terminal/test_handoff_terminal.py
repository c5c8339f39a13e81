"""A handoff in the terminal (API.md §19): the person at it answers as the operator, on lines
after "Operator:", until /handback; the bot then goes on with what was said in its history,
and a continued chat (-c) replays the handoff from the history."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pexpect
from terminal_harness import TIMEOUT, Spawn, Terminal, convo_cmd, env, terminal

__all__ = ["env", "terminal"]  # the fixtures

BOT = str(Path(__file__).resolve().parents[2] / "examples" / "staffed_support_bot.py")
NOTICE = ("(the bot handed the conversation to a person: the customer asked for a person. "
          "You answer as the operator now; /handback gives it back to the bot)")


def test_piped_lines_answer_as_the_operator_until_handback(env: dict[str, str]) -> None:
    result = convo_cmd("run", BOT, "--no-log", env=env,
                       stdin="a person, please\nhello from staff\n\n/handback\nok\n")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    start = lines.index("You: a person, please")
    assert lines[start:start + 6] == [
        "You: a person, please", NOTICE, "Operator: hello from staff",
        "(handed back to the bot)", "You: ok",
        "Assistant: I'm back. operator told you: 'hello from staff'"]


def test_the_terminal_operator_and_a_continued_chat(terminal: Spawn, env: dict[str, str]
                                                    ) -> None:
    t = terminal("run", BOT)
    t.type("a person, please")
    t.expect(NOTICE)
    t.expect("Operator:")
    t.child.send("hello from staff\r")
    _second_prompt(t)
    t.child.send("/handback\r")
    t.expect("(handed back to the bot)")
    t.type("ok")
    t.expect("Assistant: I'm back. operator told you: 'hello from staff'")
    t.end_of_input()
    assert t.finish() == 0
    screen = t.screen()
    assert screen.count("hello from staff") == 2  # typed once, and quoted by the bot
    assert "Assistant: hello from staff" not in screen
    again = convo_cmd("run", BOT, "-c", env=env, stdin="thanks\n")
    assert again.returncode == 0, again.stderr
    lines = again.stdout.splitlines()
    start = lines.index("You: a person, please")
    assert lines[start:] == [
        "You: a person, please", "Operator: hello from staff", "You: ok",
        "Assistant: I'm back. operator told you: 'hello from staff'",
        "--- resumed after 7 saved messages; live from here ---", "You: thanks",
        "Assistant: I'm back. operator told you: 'hello from staff'",
        "--- conversation stopped: the user quit or the run was cancelled (9 messages, 3 model "
        "calls) ---"]


def _second_prompt(t: Terminal) -> None:
    """Wait until the screen shows a second "Operator:" line (the next prompt; a redraw of
    the first line does not count twice on the screen, as it may in the raw output)."""
    deadline = time.monotonic() + TIMEOUT
    while "Operator: hello from staff\nOperator:" not in t.screen():
        if time.monotonic() > deadline:
            raise AssertionError(f"no second operator prompt; the screen:\n{t.screen()}")
        with contextlib.suppress(pexpect.TIMEOUT):
            t._read(timeout=1)


def test_a_chat_killed_during_a_handoff_goes_on_with_it(terminal: Spawn, env: dict[str, str]
                                                        ) -> None:
    t = terminal("run", BOT)
    t.type("a person, please")
    t.expect("Operator:")
    t.child.send("hello from staff\r")
    _second_prompt(t)  # the first line is in the history once the next is asked for
    t.child.kill(9)
    t.child.close()
    again = convo_cmd("run", BOT, "-c", env=env, stdin="more from staff\n/handback\nok\n")
    assert again.returncode == 0, again.stderr
    lines = again.stdout.splitlines()
    start = lines.index("You: a person, please")
    assert lines[start:start + 8] == [
        "You: a person, please", "Operator: hello from staff",
        "--- resumed after 5 saved messages; live from here ---", NOTICE,
        "Operator: more from staff", "(handed back to the bot)", "You: ok",
        "Assistant: I'm back. operator told you: 'more from staff'"]
