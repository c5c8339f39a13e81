"""Driving the real `convo` command in a pseudo-terminal (pexpect), and reading its screen.

What the command prints is kept with terminal escapes removed and the padding rich puts at the
end of rendered lines dropped, so that tests can look for plain text.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pexpect
import pyte
import pytest

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]|\r")
PADDING = re.compile(r" +\n")
TIMEOUT = 20
ROWS, COLUMNS = 100, 120


def plain(raw: str) -> str:
    return PADDING.sub("\n", ANSI.sub("", raw))


def user_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a user without an API key, with everything kept in tmp_path."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "NO_COLOR", "XDG_DATA_HOME")}
    env.update(HOME=str(tmp_path), CONVO_HOME=str(tmp_path / "home"),
               CONVO_HISTORY=str(tmp_path / "history"), TERM="xterm", NO_COLOR="1",
               PYTHONIOENCODING="utf-8",
               PROMPT_TOOLKIT_NO_CPR="1",  # pexpect does not answer cursor position requests
               CONVO_START_WAIT="0")  # a refused local server fails at once
    return env


def convo_cmd(*args: str, env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "convo", *args], input=stdin, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT, check=False)


class Terminal:
    """A pexpect child, and everything it printed so far (``seen``, as plain text)."""

    def __init__(self, child: pexpect.spawn, rows: int = ROWS) -> None:
        self.child = child
        self.raw = ""
        self.at = 0  # how far expect() has read in seen
        self._screen = pyte.Screen(COLUMNS, rows)
        self._stream = pyte.Stream(self._screen)
        self._fed = 0

    def screen(self) -> str:
        """What the terminal shows now, as text (the lines' trailing blanks removed)."""
        self._stream.feed(self.raw[self._fed:])
        self._fed = len(self.raw)
        return "\n".join(line.rstrip() for line in self._screen.display).strip("\n") + "\n"

    @property
    def seen(self) -> str:
        return plain(self.raw)

    def _read(self, timeout: float = TIMEOUT) -> None:
        self.raw += self.child.read_nonblocking(65536, timeout=timeout)

    def expect(self, text: str) -> None:
        """Wait until ``text`` appears (as plain text) after what was expected before: at
        most TIMEOUT seconds in all, even if the command never stops writing."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            found = self.seen.find(text, self.at)
            if found >= 0:
                self.at = found + len(text)
                return
            try:
                if time.monotonic() > deadline:
                    raise pexpect.TIMEOUT("still writing")
                self._read()
            except (pexpect.EOF, pexpect.TIMEOUT) as exc:
                raise AssertionError(f"{text!r} did not appear; the screen:\n{self.seen}") \
                    from exc

    def type(self, line: str) -> None:
        self.expect("You:")  # the line editor draws the space after it by moving the cursor
        self.child.send(line + "\r")

    def say(self, line: str, answer: str) -> None:
        """Type ``line`` at the prompt and wait until ``answer`` appears."""
        self.type(line)
        self.expect(answer)

    def exit(self) -> int:
        """Type ``/exit`` at the prompt and wait for the command to end: its exit status."""
        self.type("/exit")
        return self.finish()

    def interrupt(self, busy: str, then: str) -> None:
        """Wait until ``busy`` appears (the model or a tool inside its call), press Ctrl-C,
        and wait until ``then`` appears."""
        self.expect(busy)
        self.child.sendintr()
        self.expect(then)

    def cancel_then_go_on(self, line: str, busy: str, then: str, answer: str) -> None:
        """Type ``line``, Ctrl-C once ``busy`` appears (``then`` said), say "hello" (wait for
        ``answer``) and ``/exit``: the command ends with status 0."""
        self.type(line)
        self.interrupt(busy, then)
        self.say("hello", answer)
        status = self.exit()
        assert status == 0, f"exit status {status}; the screen:\n{self.seen}"

    def clear_then_ask_to_leave(self) -> None:
        """At the prompt, type half a line and press Ctrl-C twice: the first clears what is
        typed (nothing is sent), the second, at the empty prompt, asks."""
        self.expect("You:")
        self.child.send("half a thought")
        self.expect("half a thought")
        self.child.sendintr()
        self.child.sendintr()
        self.expect("(press Ctrl-C again or Ctrl-D to leave)")

    def end_of_input(self) -> None:
        """Ctrl-D. A Ctrl-D typed before the editor has set the terminal up can be lost, so it
        is typed again until the command ends (a second one is harmless)."""
        deadline = time.monotonic() + TIMEOUT
        for _ in range(5):
            self.child.sendeof()
            try:
                while time.monotonic() < deadline:  # a command that never stops writing fails
                    self._read(timeout=2)
            except pexpect.EOF:
                return
            except pexpect.TIMEOUT:
                continue
        raise AssertionError("Ctrl-D did not end the run")

    def finish(self) -> int:
        deadline = time.monotonic() + TIMEOUT
        try:
            while True:
                if time.monotonic() > deadline:
                    raise AssertionError(f"the command did not end; the screen:\n{self.seen}")
                self._read()
        except pexpect.EOF:
            pass
        self.child.close()
        assert self.child.exitstatus is not None, f"killed by {self.child.signalstatus}"
        return int(self.child.exitstatus)


Spawn = Callable[..., Terminal]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return user_env(tmp_path)


@pytest.fixture
def terminal(env: dict[str, str]) -> Iterator[Spawn]:
    terminals: list[Terminal] = []

    def spawn(*args: str, rows: int = ROWS) -> Terminal:
        terminals.append(Terminal(child(["-m", "convo", *args], env, rows), rows))
        return terminals[-1]

    yield spawn
    close_all(terminals)


def child(args: list[str], env: dict[str, str], rows: int = ROWS) -> pexpect.spawn:
    """This Python running ``args`` in a pseudo-terminal of ``rows`` by COLUMNS."""
    return pexpect.spawn(sys.executable, args, env=env, encoding="utf-8", timeout=TIMEOUT,
                         dimensions=(rows, COLUMNS))


def close_all(terminals: Sequence[Terminal]) -> None:
    """Kill what still runs of ``terminals`` and close them all (a fixture's teardown)."""
    for t in terminals:
        if t.child.isalive():
            t.child.kill(signal.SIGKILL)
        t.child.close()
