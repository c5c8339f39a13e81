"""A cancel: it cuts off the reply being made, not the run. Written once, for every front end.

``Cancellable`` stands in front of the live answerer (``convo._run.answerer``). A cancel cuts
off the model call under way: its reply is the text streamed so far, marked
``metadata["cancelled"]`` (``CANCELLED``), and counted as any reply; the model is not asked for
more. A tool a cancel stops gives ``stopped(text, note)``: its result ends the turn,
``stopped``, and says why (its tool message says so in its metadata, so a resumed run ends that
turn the same way without a model call).

How a cancel arrives is the front end's: ``Cancellable(live, scopes)`` asks ``scopes()``, at each
model call, for the list where its canceller looks for the calls under way (``None``: nothing
can cancel it now; the call is simply made). The call runs in a task of a ``Scope`` put there;
the canceller cuts them with ``cut(scopes)``. A served turn's cancel (``convo.serve._turns``) is
one canceller; the terminal's Ctrl-C (``convo._terminal.cancel``, ``async_cancel``) another, which
also cuts tools and, under ``run()``, cuts a call by ``KeyboardInterrupt``.

asyncio is imported only when a call is cut off or made cancellable (``import convo`` stays
small).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final

from .._messages import Message
from .._requests import CallModel
from .._session import RunStatus
from ..tools._base import TerminateResponse
from ..tools._calls import ToolRun
from .stack import Forwarding

if TYPE_CHECKING:
    import asyncio

    from .answerer import LiveAnswerer

CANCELLED: Final = "cancelled"  # the metadata key of a reply cut off by a cancel
CUT: Final = object()  # the result of a call that a cancel cut off


class Scope:
    """The tasks of one model call or one batch of tools, which a cancel cuts together."""

    __slots__ = ("hit", "tasks")

    def __init__(self) -> None:
        self.tasks: list[asyncio.Task[Any]] = []
        self.hit = False  # a cancel cut it

    def cancel(self) -> None:
        """On the loop: cancel the tasks that have not finished (not the one running now)."""
        import asyncio

        self.hit = True
        running = asyncio.current_task()
        for task in self.tasks:
            if task is not running and not task.done():
                task.cancel()


def cut(scopes: Sequence[Scope]) -> None:
    """Cut off every call under way in ``scopes`` (on the loop)."""
    for scope in list(scopes):
        scope.cancel()


async def cut_off(calls: Sequence[Callable[[], Awaitable[Any]]], scopes: list[Scope], *,
                  ctrl_c: bool = False) -> list[Any]:
    """Make and await ``calls`` at once, each in a task of its own, in a ``Scope`` put in
    ``scopes`` while they run; their results in order, ``CUT`` for a call that a cancel cut off
    (or that failed once cut, or never started because of it). ``ctrl_c``: a
    ``KeyboardInterrupt`` raised in a call's own (blocking) code cuts the scope too (the
    terminal's Ctrl-C)."""
    import asyncio

    if not calls:  # (a batch whose every call a limit stopped: nothing to wait for)
        return []
    scope = Scope()

    async def guarded(call: Callable[[], Awaitable[Any]]) -> Any:
        try:
            return await call()
        except KeyboardInterrupt:
            if not ctrl_c:
                raise
            scope.cancel()
            return CUT
        except (asyncio.CancelledError, Exception):
            if scope.hit:  # whatever it would have said is not waited for
                return CUT
            raise

    scope.tasks = [asyncio.ensure_future(guarded(call)) for call in calls]
    scopes.append(scope)
    try:
        await asyncio.wait(scope.tasks)
    except asyncio.CancelledError:  # the run itself is cancelled: so are its calls
        for task in scope.tasks:
            task.cancel()
        raise
    finally:
        scopes.remove(scope)
    return [CUT if task.cancelled() else task.result() for task in scope.tasks]


def stopped(text: str, note: str) -> ToolRun:
    """The result of a tool that a cancel stopped: ``text``; it ends the turn, ``stopped``."""
    return ToolRun(TerminateResponse(text, status=RunStatus.STOPPED, note=note))


class Cancellable(Forwarding):
    """In front of the live answerer: a cancel cuts off the model call under way (module
    docstring). ``scopes``: where a cancel looks for the calls under way now, or ``None``."""

    __slots__ = ("scopes",)
    inner: LiveAnswerer
    ctrl_c: ClassVar[bool] = False  # whether a KeyboardInterrupt in a call cuts it (a terminal)

    def __init__(self, live: LiveAnswerer, scopes: Callable[[], list[Scope] | None]) -> None:
        super().__init__(live)
        self.scopes = scopes

    async def acall_model(self, request: CallModel) -> Message:
        scopes = self.scopes()
        if scopes is None:
            return await self.inner.acall_model(request)
        started = self.inner.state.clock()
        [reply] = await cut_off([lambda: self.inner.acall_model(request)], scopes,
                                ctrl_c=self.ctrl_c)
        if reply is CUT:
            return self.cut_reply(started)
        return reply  # type: ignore[no-any-return]

    def cut_reply(self, started: float) -> Message:
        """What a cut-off model call gives: the text streamed so far, marked, counted."""
        self.was_cut()
        live = self.inner
        return live.replied(Message("assistant", "".join(live.partial),
                                    metadata={CANCELLED: True}), started)

    def was_cut(self) -> None:
        """A call was cut off (the terminal counts its Ctrl-Cs again from here)."""
