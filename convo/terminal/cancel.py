"""Ctrl-C in a terminal chat: it cancels the reply being made, not the conversation.

``CancellableRun`` answers the runner's requests as ``Run`` does, except that a Ctrl-C
(``KeyboardInterrupt``) during a model call or a tool ends that reply and the conversation goes
back to the prompt:

- a model call: the text streamed so far is kept as the reply (marked ``cancelled`` in its
  metadata, so a later reader can tell); the model is not asked for more (the stream is
  closed). When nothing had arrived, the unanswered message and the empty reply are dropped
  before the next prompt (the message is still in the input history: Up brings it back).
- a tool: the tools of the batch that did not finish get ``"Cancelled by the user (Ctrl-C)"``
  as their result, and the turn ends with status ``stopped`` (their tool messages say so in
  their metadata, so a resumed run ends that turn the same way without a model call).

Inside a ``SubroutineTemplate`` it is the same: the reply is cancelled, not the subroutine.

``Interrupts`` is the SIGINT handler of the ``convo`` command: the first Ctrl-C raises
``KeyboardInterrupt`` (and the reply is cancelled); a second one before the cancel is done
quits at once, in case cancelling hangs.
"""

from __future__ import annotations

import os
import time
from types import FrameType
from typing import Any, Final

from ..driving import Run
from ..invoking import run_sync
from ..messages import Message
from ..requests import AskUser, CallModel, RunTools, ToolRun
from ..session import RunStatus, Session
from ..tools.termination import TerminateResponse

CANCELLED: Final = "cancelled"
TOOL_CANCELLED: Final = "Cancelled by the user (Ctrl-C)"
EXIT_INTERRUPTED: Final = 130


class Interrupts:
    """SIGINT: the first Ctrl-C raises ``KeyboardInterrupt``; a second one before ``reset()``
    quits the process at once."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.count += 1
        if self.count == 1:
            raise KeyboardInterrupt
        os.write(2, b"\nconvo: interrupted twice, quitting\n")
        os._exit(EXIT_INTERRUPTED)

    def reset(self) -> None:
        self.count = 0


class CancellableRun(Run):
    """A ``Run`` whose model calls and tools a Ctrl-C cancels (see the module docstring)."""

    __slots__ = ("partial",)

    def __init__(self, runner: Any, session: Session) -> None:
        super().__init__(runner, session)
        self.partial: list[str] = []

    def on_delta(self, request: CallModel) -> Any:
        emit = super().on_delta(request)

        def delta(text: str) -> None:
            self.partial.append(text)
            if emit is not None:
                emit(text)

        return delta

    def call_model(self, request: CallModel) -> Message:
        self.partial = []
        started = time.perf_counter()
        try:
            return super().call_model(request)
        except KeyboardInterrupt:
            self._reset_interrupts()
            reply = Message("assistant", "".join(self.partial), metadata={CANCELLED: True})
            return self.model_replied(reply, started)

    def ask_user(self, request: AskUser) -> str:
        self._reset_interrupts()  # a Ctrl-C at the prompt is not the first of a pair during a reply
        try:
            return super().ask_user(request)
        finally:
            self._reset_interrupts()

    def run_tools(self, request: RunTools) -> list[ToolRun]:
        self.counted_tools(request.invocations)
        runs: list[ToolRun] = []
        stop = TerminateResponse(TOOL_CANCELLED, status=RunStatus.STOPPED,
                                 note="cancelled by the user (Ctrl-C)")
        for invocation in request.invocations:
            if runs and runs[-1].value is stop:
                runs.append(ToolRun(stop))
                continue
            try:
                runs.append(run_sync(invocation))
            except KeyboardInterrupt:
                self._reset_interrupts()
                runs.append(ToolRun(stop))
        return runs

    def _reset_interrupts(self) -> None:
        interrupts = getattr(self.runner, "interrupts", None)
        if interrupts is not None:
            interrupts.reset()


def drop_empty_cancelled(session: Session) -> bool:
    """Before the next prompt: a cancelled reply with nothing in it goes, with the message it
    did not answer. Returns whether anything was dropped."""
    messages = session.messages
    if len(messages) >= 2 and messages[-1].role == "assistant" and not messages[-1].content \
            and not messages[-1].tool_calls and messages[-1].metadata.get(CANCELLED) \
            and messages[-2].role == "user":
        del messages[-2:]
        return True
    return False
