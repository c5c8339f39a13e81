"""`convo run FILE -c` in a real terminal resumes as `--resume` does: an approved call inside a
subroutine is neither asked for nor run again."""

from __future__ import annotations

import signal
from pathlib import Path

import pexpect
from terminal_harness import Spawn, env, terminal  # noqa: F401  (fixtures)

BOT = str(Path(__file__).resolve().parents[1] / "cli_fixtures" / "approval_subroutine.py")


def test_continue_neither_asks_nor_runs_a_decided_call_again(
        terminal: Spawn, env: dict[str, str], tmp_path: Path) -> None:  # noqa: F811
    env["CONVO_TEST_DIR"] = str(tmp_path)
    chat = terminal("run", BOT, "--plain")
    chat.type("charge 5")
    chat.expect("Approve charge(")
    chat.child.send("y\r")
    chat.expect("Done: charged 5.")
    chat.type("hello")
    chat.expect("You said: hello")
    chat.expect("You:")
    chat.child.kill(signal.SIGKILL)
    chat.child.expect(pexpect.EOF)
    chat.child.close()
    again = terminal("run", BOT, "--plain", "-c")
    again.expect("resuming the history: replaying 3 saved messages")
    again.type("and now?")
    again.expect("You said: and now?")
    assert again.exit() == 0
    assert "Approve" not in again.seen
    assert (tmp_path / "charges.txt").read_text() == "5\n"
