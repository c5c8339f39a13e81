"""Typing while the model answers, in a real pty (API.md §26): a line ended with Enter during a
reply is handed to the run as a steer (``Runner.steer``), shown dimmed until the run takes it,
and the model's next call of the same turn sees it; Ctrl-C still cancels the reply; a
half-typed line or a slash command waits for the next prompt."""

from __future__ import annotations

import json
import os
from pathlib import Path

from terminal_harness import Spawn, Terminal, env, terminal

__all__ = ["env", "terminal"]  # the fixtures

BOT = str(Path(__file__).resolve().parents[1] / "cli_fixtures" / "steer_bot.py")


def _calls(path: Path) -> list[list[list[str]]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _gated(env: dict[str, str], tmp_path: Path) -> tuple[Path, Path]:
    gate, calls = tmp_path / "gate", tmp_path / "calls.jsonl"
    os.mkfifo(gate)
    env.update(CONVO_GATE=str(gate), CONVO_CALLS=str(calls))
    return gate, calls


def _started(terminal: Spawn, env: dict[str, str], tmp_path: Path) -> tuple[Terminal, Path, Path]:
    """``convo run`` of the steer bot, its model held at a gate: the terminal, the gate and
    the file of the model's calls."""
    gate, calls = _gated(env, tmp_path)
    return terminal("run", BOT, "--no-log"), gate, calls


def _typed_during(t: Spawn, said: str, shown: str, typed: str) -> None:
    """Says ``said`` and, once ``shown`` shows the reply is on its way, types ``typed`` and
    Enter: shown as waiting."""
    t.say(said, shown)
    t.child.send(typed + "\r")
    t.expect(f"You (waiting): {typed}")


def _release(gate: Path) -> None:
    """Opens the bot's gate: the held model call goes on."""
    with open(gate, "w") as release:
        release.write("go")


def test_a_line_typed_during_a_reply_is_steered_into_the_same_turn(
        terminal: Spawn, env: dict[str, str], tmp_path: Path) -> None:
    t, gate, calls = _started(terminal, env, tmp_path)
    # the model call runs, held at the gate
    _typed_during(t, "slow look A", "thinking…", "the order number is A7")
    _release(gate)
    t.expect("↳ lookup: found A")
    t.expect("You: the order number is A7")
    t.expect("Assistant: re: the order number is A7")
    assert t.exit() == 0
    made = _calls(calls)
    assert len(made) == 2  # taken by the turn: no turn of its own
    assert made[1][-4:] == [["user", "slow look A"], ["assistant", ""], ["tool", "found A"],
                            ["user", "the order number is A7"]]
    screen = t.screen()
    assert ("You: slow look A\n  You (waiting): the order number is A7\n"
            "  → lookup({\"q\": \"A\"})\n  ↳ lookup: found A\n"
            "You: the order number is A7\nAssistant: re: the order number is A7\n"
            ) in screen, screen


def test_ctrl_c_still_cancels_and_what_was_typed_before_it_goes_on(
        terminal: Spawn, env: dict[str, str], tmp_path: Path) -> None:
    t, _, calls = _started(terminal, env, tmp_path)
    _typed_during(t, "hang", "thinking…", "never mind")
    t.child.send("/history\r")  # a command is not a message: it waits for the prompt
    t.interrupt("/history (typed at the next prompt)", "(reply cancelled with Ctrl-C)")
    t.expect("You: never mind")  # sent before the Ctrl-C: the conversation takes it next
    t.expect("Assistant: re: never mind")
    t.expect("You: /history")  # in the prompt's line, as typed: Enter carries it out
    t.child.send("\r")
    t.expect("   0  you: never mind\n   1  assistant: re: never mind")
    assert t.exit() == 0
    made = _calls(calls)
    # The empty cancelled reply and the message it did not answer are gone, as at a prompt.
    assert made == [[["user", "hang"]], [["user", "never mind"]]]


def test_a_line_typed_while_a_reply_streams_shows_above_it_and_is_answered_after_it(
        terminal: Spawn, env: dict[str, str], tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    env["CONVO_GATE"] = str(gate)
    t = terminal("run", str(Path(BOT).with_name("stream.py")), "--no-log")
    _typed_during(t, "gated", "Half", "also this")  # streaming, as Markdown in a live region
    _release(gate)
    t.expect("You said: also this")  # the turn ended first: the line is the next message
    assert t.exit() == 0
    screen = t.screen()
    assert ("You: gated\n  You (waiting): also this\nAssistant: Half and the rest.\n"
            "  (12 tokens in, 5 out)\nYou: also this\nAssistant: You said: also this\n"
            ) in screen, screen


def test_a_line_the_conversation_ended_before_taking_is_said_on_the_way_out(
        terminal: Spawn, env: dict[str, str], tmp_path: Path) -> None:
    t, gate, calls = _started(terminal, env, tmp_path)
    _typed_during(t, "slow bye", "thinking…", "one more thing")
    _release(gate)
    t.expect("convo: not sent, the conversation ended first: 'one more thing'")
    assert t.finish() == 0
    assert len(_calls(calls)) == 1
