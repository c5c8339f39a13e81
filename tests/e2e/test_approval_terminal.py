"""Approval at the terminal: the real `convo run` in a pseudo-terminal asks y / n / a reason,
and Ctrl-C at that prompt rejects without ending the chat."""

from __future__ import annotations

from pathlib import Path

from terminal_harness import Spawn, env, terminal  # noqa: F401  (fixtures)

BOT = str(Path(__file__).resolve().parents[2] / "examples" / "refund_bot.py")
PROMPT = "[y]es / [n]o / or type a reason to reject:"


def test_y_n_a_reason_and_ctrl_c(terminal: Spawn) -> None:  # noqa: F811
    chat = terminal("run", BOT, "--plain")
    for line, answer, expected in [
        ("refund A1", "y", "Refunded 25.00 EUR for a kettle (order A1)."),
        ("refund B2", "n", "Rejected by the user\n"),
        ("refund B2", "it was a gift", "Rejected by the user: it was a gift"),
    ]:
        chat.say(line, "Approve refund(")
        chat.expect(PROMPT)
        chat.child.send(answer + "\r")
        chat.expect(expected)
    chat.say("refund A1", PROMPT)
    chat.child.sendintr()  # Ctrl-C
    chat.expect("(rejected)")
    chat.expect("Rejected by the user\n")
    chat.type("bye")  # the chat goes on
    assert chat.finish() == 0
    assert "conversation ended" in chat.seen
