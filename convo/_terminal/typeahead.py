"""What the user types while the model answers: not echoed, kept for the next prompt.

The terminal echoes keys as they are typed, wherever the cursor is; while a reply streams,
that is inside the spinner's line or rich's live Markdown region, whose redraws it garbles. So
while the model answers, echo is off (and only echo: Ctrl-C still cancels); the keys wait in
the terminal's input queue, and the next prompt shows them as typed. (A whole line, ended with
Enter, is read at once and sent as a steer: ``convo._terminal.steering``.)

The kernel decides whether to echo a key when it takes the key in, which can be a moment after
it was typed: echo turned back on just after a key can still echo it. When the prompt reads
with the line editor (which draws what is typed itself, echo or not), echo therefore stays off
until the run ends; otherwise it comes back once the reply is shown.
"""

from __future__ import annotations

import atexit
import sys
from typing import Any, TextIO

_HELD: list[TypeAhead] = []  # to give the terminal back even on a hasty exit


class TypeAhead:
    """``hold()`` turns the terminal's echo off, ``release()`` turns it back on; neither does
    anything when ``stream`` is not a terminal (or not on POSIX)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stdin
        self._saved: tuple[int, list[Any]] | None = None

    @property
    def held(self) -> bool:
        return self._saved is not None

    def hold(self) -> None:
        if self._saved is not None:
            return
        try:
            import termios

            if not self.stream.isatty():
                return
            fd = self.stream.fileno()
            saved = termios.tcgetattr(fd)
            quiet = list(saved)
            quiet[3] &= ~termios.ECHO  # the local modes
            termios.tcsetattr(fd, termios.TCSANOW, quiet)
        except (ImportError, AttributeError, ValueError, OSError):
            return  # not a terminal we can set (Windows, a closed or odd stream)
        self._saved = (fd, saved)
        if not _HELD:
            atexit.register(release_all)  # a crash must not leave the user's terminal silent
        _HELD.append(self)

    def release(self) -> None:
        if self._saved is None:
            return
        fd, saved = self._saved
        self._saved = None
        if self in _HELD:
            _HELD.remove(self)
        try:
            import termios

            termios.tcsetattr(fd, termios.TCSANOW, saved)
        except (ImportError, OSError):
            pass


def release_all() -> None:
    """Echo back on wherever it was turned off (before the process exits)."""
    for typeahead in list(_HELD):
        typeahead.release()
