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

Under ``arun()`` the same holds; how a Ctrl-C reaches a call that awaits is in
``convo.terminal.async_cancel`` (loaded only then: it needs asyncio).
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any, Final

from ..driving import Run
from ..invoking import run_async, run_sync
from ..messages import Message
from ..requests import AskUser, CallModel, RunTools, ToolRun
from ..session import RunStatus, Session
from ..tools.termination import TerminateResponse
from .interrupts import EXIT_INTERRUPTED, Interrupts

CANCELLED: Final = "cancelled"
TOOL_CANCELLED: Final = "Cancelled by the user (Ctrl-C)"
__all__ = ["CANCELLED", "EXIT_INTERRUPTED", "TOOL_CANCELLED", "CancellableRun", "Interrupts",
           "drop_empty_cancelled"]


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
            return self._cancelled_reply(started)

    async def acall_model(self, request: CallModel) -> Message:
        from .async_cancel import CUT, cancellable

        self.partial = []
        started = time.perf_counter()
        call = super().acall_model
        [reply] = await cancellable([lambda: call(request)])
        return self._cancelled_reply(started) if reply is CUT else reply

    def _cancelled_reply(self, started: float) -> Message:
        self._reset_interrupts()
        reply = Message("assistant", "".join(self.partial), metadata={CANCELLED: True})
        return self.model_replied(reply, started)

    def ask_user(self, request: AskUser) -> str:
        self._reset_interrupts()  # a Ctrl-C at the prompt is not the first of a pair during a reply
        try:
            return super().ask_user(request)
        finally:
            self._reset_interrupts()

    async def aask_user(self, request: AskUser) -> str:
        self._reset_interrupts()
        try:
            return await super().aask_user(request)
        finally:
            self._reset_interrupts()

    def run_tools(self, request: RunTools) -> list[ToolRun]:
        self.counted_tools(request.invocations)
        runs: list[ToolRun] = []
        stop = _stop()
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

    async def arun_tools(self, request: RunTools) -> list[ToolRun]:
        from .async_cancel import CUT, cancellable

        self.counted_tools(request.invocations)
        runs = await cancellable([partial(run_async, inv) for inv in request.invocations])
        if CUT not in runs:
            return runs
        self._reset_interrupts()
        stop = _stop()
        return [ToolRun(stop) if run is CUT else run for run in runs]

    def _reset_interrupts(self) -> None:
        """A Ctrl-C answered is spent: the count towards quitting starts again (the runner's
        handler, and the one that handles SIGINT now if it is another)."""
        import signal  # not needed by `import convo`

        interrupts = getattr(self.runner, "interrupts", None)
        if interrupts is not None:
            interrupts.reset()
        handler = signal.getsignal(signal.SIGINT)
        if isinstance(handler, Interrupts) and handler is not interrupts:
            handler.reset()


def _stop() -> TerminateResponse:
    """The result of a tool that Ctrl-C cancelled: it ends the turn, ``stopped``."""
    return TerminateResponse(TOOL_CANCELLED, status=RunStatus.STOPPED,
                             note="cancelled by the user (Ctrl-C)")


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
