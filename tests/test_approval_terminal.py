"""Approval at the terminal: the real `convo run` in a pseudo-terminal asks y / n / a reason,
and Ctrl-C at that prompt rejects without ending the chat."""

from __future__ import annotations

import os
import re
import signal
import sys
from pathlib import Path

import pexpect

BOT = str(Path(__file__).resolve().parent.parent / "examples" / "refund_bot.py")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]|\r")
PROMPT = "[y]es / [n]o / or type a reason to reject: "


def test_y_n_a_reason_and_ctrl_c(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env.update(HOME=str(tmp_path), CONVO_HISTORY="", TERM="xterm", NO_COLOR="1",
               PYTHONIOENCODING="utf-8")
    child = pexpect.spawn(sys.executable, ["-m", "convo", "run", BOT], env=env,
                          encoding="utf-8", timeout=20, dimensions=(40, 200))
    try:
        for line, answer, expected in [
            ("refund A1", "y", "Tool: refund: Refunded 25.00 EUR for a kettle (order A1)."),
            ("refund B2", "n", "Tool: refund: Rejected by the user\r\n"),
            ("refund B2", "it was a gift", "Tool: refund: Rejected by the user: it was a gift"),
        ]:
            child.expect_exact("You: ")
            child.sendline(line)
            child.expect_exact("Approve refund(")
            child.expect_exact(PROMPT)
            child.sendline(answer)
            child.expect_exact(expected.replace("Tool: refund", "  ↳ refund"))
        child.expect_exact("You: ")
        child.sendline("refund A1")
        child.expect_exact(PROMPT)
        child.kill(signal.SIGINT)
        child.expect_exact("(rejected)")
        child.expect_exact("  ↳ refund: Rejected by the user\r\n")
        child.expect_exact("You: ")  # the chat goes on
        child.sendline("bye")
        child.expect(pexpect.EOF)
        seen = ANSI.sub("", child.before)
        assert "conversation ended" in seen
    finally:
        if child.isalive():
            child.kill(signal.SIGKILL)
        child.close()
    assert child.exitstatus == 0
