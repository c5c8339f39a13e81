"""Ctrl-C in a terminal chat: it cancels the reply being made, not the conversation.

``Cancelling`` is an answerer wrapped around the live one (``convo.run.answerer``): it
answers as that one does, except that a Ctrl-C (``KeyboardInterrupt``) during a model call or a
tool ends that reply and the conversation goes back to the prompt:

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
from typing import Any, Final, TypeVar

from ..messages import Message
from ..requests import AskUser, CallModel, Request, RunTools
from ..run.answerer import LiveAnswerer, merged
from ..session import RunStatus, Session
from ..tools.calls import Invocation, ToolRun, aexecute, execute
from ..tools.termination import TerminateResponse
from .interrupts import EXIT_INTERRUPTED, Interrupts

A = TypeVar("A")
CANCELLED: Final = "cancelled"
TOOL_CANCELLED: Final = "Cancelled by the user (Ctrl-C)"
__all__ = ["CANCELLED", "EXIT_INTERRUPTED", "TOOL_CANCELLED", "Cancelling", "Interrupts",
           "drop_empty_cancelled"]


class Cancelling:
    """Answers as ``live`` does; a Ctrl-C cancels a model call or tools (module docstring).

    ``interrupts``: the SIGINT handler to reset once a Ctrl-C is answered, if the caller
    installed one."""

    __slots__ = ("interrupts", "live")

    def __init__(self, live: LiveAnswerer, interrupts: Any = None) -> None:
        self.live = live
        self.interrupts = interrupts

    def answer(self, request: Request[A]) -> A:
        answer: Any
        if isinstance(request, CallModel):
            started = time.perf_counter()
            try:
                answer = self.live.call_model(request)
            except KeyboardInterrupt:
                answer = self._cancelled_reply(started)
        elif isinstance(request, RunTools):
            answer = self.live.run_tools(request, self._run_one())
        elif isinstance(request, AskUser):
            with self._fresh_interrupts():
                answer = self.live.ask_user(request)
        else:
            answer = self.live.answer(request)
        return answer  # type: ignore[no-any-return]

    async def aanswer(self, request: Request[A]) -> A:
        from .async_cancel import CUT, cancellable

        answer: Any
        if isinstance(request, CallModel):
            started = time.perf_counter()
            [answer] = await cancellable([lambda: self.live.acall_model(request)])
            if answer is CUT:
                answer = self._cancelled_reply(started)
        elif isinstance(request, RunTools):
            answer = await self._arun_tools(request)
        elif isinstance(request, AskUser):
            with self._fresh_interrupts():
                answer = await self.live.aask_user(request)
        else:
            answer = await self.live.aanswer(request)
        return answer  # type: ignore[no-any-return]

    def _cancelled_reply(self, started: float) -> Message:
        """What a cancelled model call gives: the text streamed so far, marked."""
        self._reset_interrupts()
        reply = Message("assistant", "".join(self.live.partial), metadata={CANCELLED: True})
        return self.live.replied(reply, started)

    def _run_one(self) -> Any:
        """How one call runs: a Ctrl-C stops it and the calls after it in the batch."""
        stopped: list[bool] = []

        def run(invocation: Invocation) -> ToolRun:
            if stopped:
                return ToolRun(_stop())
            try:
                return execute(invocation)
            except KeyboardInterrupt:
                self._reset_interrupts()
                stopped.append(True)
                return ToolRun(_stop())

        return run

    async def _arun_tools(self, request: RunTools) -> list[ToolRun]:
        from .async_cancel import CUT, cancellable

        verdicts = self.live.state.admit_tools(request.invocations)
        allowed = [inv for inv, why in zip(request.invocations, verdicts, strict=True)
                   if why is None]
        ran = await cancellable([_later(inv) for inv in allowed])
        if CUT in ran:
            self._reset_interrupts()
            ran = [ToolRun(_stop()) if run is CUT else run for run in ran]
        return merged(verdicts, ran)

    def _fresh_interrupts(self) -> Any:
        """Around a prompt: a Ctrl-C there is not the first of a pair during a reply."""
        import contextlib

        @contextlib.contextmanager
        def fresh() -> Any:
            self._reset_interrupts()
            try:
                yield
            finally:
                self._reset_interrupts()

        return fresh()

    def _reset_interrupts(self) -> None:
        """A Ctrl-C answered is spent: the count towards quitting starts again (the runner's
        handler, and the one that handles SIGINT now if it is another)."""
        import signal  # not needed by `import convo`

        interrupts = self.interrupts
        if interrupts is not None:
            interrupts.reset()
        handler = signal.getsignal(signal.SIGINT)
        if isinstance(handler, Interrupts) and handler is not interrupts:
            handler.reset()


def _later(invocation: Invocation) -> Any:
    return lambda: aexecute(invocation)


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
