"""Ctrl-C in a terminal chat: it cancels the reply being made, not the conversation.

``Cancelling`` is the one cancel (``convo._run.cancel.Cancellable``) in front of the live
answerer, with Ctrl-C as its canceller: it answers as the live one does, except that a Ctrl-C
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
``convo._terminal.async_cancel`` (loaded only then: it needs asyncio).
"""

from __future__ import annotations

from typing import Any, Final

from .._messages import Message
from .._reply import Finish
from .._requests import AskUser, CallModel, RunTools
from .._run.answerer import LiveAnswerer, merged
from .._run.cancel import CANCELLED, Cancellable, stopped
from .._session import Session
from ..tools._calls import Invocation, ToolRun, aexecute, execute
from .interrupts import EXIT_INTERRUPTED, Interrupts

TOOL_CANCELLED: Final = "Cancelled by the user (Ctrl-C)"
__all__ = ["CANCELLED", "EXIT_INTERRUPTED", "TOOL_CANCELLED", "Cancelling", "Interrupts",
           "drop_empty_cancelled"]


class Cancelling(Cancellable):
    """Answers as ``live`` does; a Ctrl-C cancels a model call or tools (module docstring).

    ``interrupts``: the SIGINT handler to reset once a Ctrl-C is answered, if the caller
    installed one."""

    __slots__ = ("interrupts",)
    ctrl_c = True

    def __init__(self, live: LiveAnswerer, interrupts: Any = None) -> None:
        super().__init__(live, _loop_scopes)
        self.interrupts = interrupts

    def call_model(self, request: CallModel) -> Message:
        started = self.inner.state.clock()
        try:
            return self.inner.call_model(request)
        except KeyboardInterrupt:
            return self.cut_reply(started)

    def run_tools(self, request: RunTools) -> list[ToolRun]:
        return self.inner.run_tools(request, self._run_one())

    def ask_user(self, request: AskUser) -> Any:
        with self._fresh_interrupts():
            return self.inner.ask_user(request)

    async def arun_tools(self, request: RunTools) -> list[ToolRun]:
        from .._run.cancel import CUT, cut_off

        verdicts = self.inner.state.admit_tools(request.invocations)
        allowed = [inv for inv, why in zip(request.invocations, verdicts, strict=True)
                   if why is None]
        scopes = _loop_scopes()
        ran = await cut_off([_later(inv) for inv in allowed],
                            [] if scopes is None else scopes, ctrl_c=True)
        if CUT in ran:
            self.was_cut()
            ran = [_stop() if run is CUT else run for run in ran]
        return merged(verdicts, ran)

    async def aask_user(self, request: AskUser) -> Any:
        with self._fresh_interrupts():
            return await self.inner.aask_user(request)

    def was_cut(self) -> None:
        self._reset_interrupts()

    def _run_one(self) -> Any:
        """How one call runs: a Ctrl-C stops it and the calls after it in the batch."""
        hit: list[bool] = []

        def run(invocation: Invocation) -> ToolRun:
            if hit:
                return _stop()
            try:
                return execute(invocation)
            except KeyboardInterrupt:
                self._reset_interrupts()
                hit.append(True)
                return _stop()

        return run

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


def _loop_scopes() -> Any:
    """Where a Ctrl-C under ``arun()`` finds the calls under way: the running loop's
    ``LoopInterrupts``, else a list nobody cancels (a Ctrl-C raised in a call's own code still
    cuts it)."""
    from .async_cancel import installed

    interrupts = installed()
    return [] if interrupts is None else interrupts.scopes


def _later(invocation: Invocation) -> Any:
    return lambda: aexecute(invocation)


def _stop() -> ToolRun:
    """The result of a tool that Ctrl-C cancelled: it ends the turn, ``stopped``."""
    return stopped(TOOL_CANCELLED, "cancelled by the user (Ctrl-C)")


def drop_empty_cancelled(session: Session) -> bool:
    """Before the next prompt: a cancelled reply with nothing in it goes, with the message it
    did not answer. Returns whether anything was dropped."""
    messages = session.messages
    if len(messages) >= 2 and messages[-1].role == "assistant" and not messages[-1].content \
            and not messages[-1].tool_calls and messages[-1].finish is Finish.CANCELLED \
            and messages[-2].role == "user":
        del messages[-2:]
        return True
    return False
