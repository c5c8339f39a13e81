"""The ``convo`` command's SIGINT handler: the first Ctrl-C raises ``KeyboardInterrupt`` (and
the reply being made is cancelled, ``convo._terminal.cancel``); a second one before the cancel is
done quits at once, in case cancelling hangs. Under ``arun()`` the asyncio flavour is
``convo._terminal.async_cancel.LoopInterrupts``.
"""

from __future__ import annotations

import os
from types import FrameType
from typing import Final

from .typeahead import release_all

EXIT_INTERRUPTED: Final = 130


class Interrupts:
    """SIGINT: the first Ctrl-C raises ``KeyboardInterrupt``; a second one before ``reset()``
    quits the process at once."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.count += 1
        if self.count == 1:
            self.first(frame)
            return
        release_all()  # os._exit runs no atexit handler: give the terminal its echo back
        os.write(2, b"\nconvo: interrupted twice, quitting\n")
        os._exit(EXIT_INTERRUPTED)

    def first(self, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    def reset(self) -> None:
        self.count = 0
