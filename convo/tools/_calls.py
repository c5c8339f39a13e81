"""A tool call, from a model's request to its tool message: the one module that owns it.

The batch prepares a call (``convo.templates._batch.prepare``: its tool among the turn's, its
arguments by ``Tool.arguments_of``); ``execute`` (blocking) and ``aexecute`` (async) run it
once, with its ``timeout`` applied here and only here; ``outcome`` reads what the run gave:
the tool message's text and the ending the call asks for (a value of ``convo.tools._endings``:
a terminal tool's reply, a returned ``TerminateResponse``, a ``Transition``'s move, the end of
the conversation). Failures are values (``ToolRun.error``), never raised past this module. A
batch of calls, and which ending wins, is ``convo.templates._batch``'s.

Under ``arun()`` and serving a synchronous tool runs in a worker thread, so a slow tool never
blocks the event loop (other conversations, the server's health check); the threads are
daemons kept for the next call (``tools/_workers.py``: one starts only when none is idle);
``Tool.inline = True`` (``@tool(inline=True)``) runs a trivial one on the loop. A thread that
outlives its tool's ``timeout`` is abandoned (a daemon: it never holds up the process's exit)
and taken back once its tool returns.

asyncio costs ~25 ms to import and only async runs need it: it is imported where it is used.
A ``CancelledError`` that a tool's own code lets escape is an error of that tool; only the
cancellation of the task running the tools (the run's own) stops the run.

(Just over 300 lines: one module owns a tool call from running it to its tool message, so
that "which ending does this call ask for?" is read in one place.)
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import attrs

from .._errors import ReachedEndTemplateException, ToolRetry
from .._messages import Message, ToolCall
from .._parts import Part, shown
from .._reply import ERROR_KEY, TERMINATED_KEY
from ._base import Bound, SavedToolError, TerminateResponse, Tool, ToolResult, to_content
from ._endings import (
    CONTINUE,
    EndConversation,
    Ending,
    HandOver,
    MoveState,
    TerminalReply,
    Terminate,
)
from ._handoff import HandingOff
from ._toolset import Unlisted
from ._transition import Move


class Invokable(Protocol):
    """What a tool looks like to the runner (a ``Tool``, or a ``Bound`` one)."""

    @property
    def is_async(self) -> bool: ...

    @property
    def timeout(self) -> float | None: ...

    @property
    def inline(self) -> bool: ...

    @property
    def runs_blocking(self) -> bool: ...

    @property
    def rerun_on_resume(self) -> bool: ...

    @property
    def free_of_limits(self) -> bool: ...

    def requires_approval(self, args: dict[str, Any]) -> bool: ...

    @property
    def approver(self) -> str: ...

    def invoke(self, args: dict[str, Any]) -> Any: ...

    async def ainvoke(self, args: dict[str, Any]) -> Any: ...


@attrs.frozen(slots=True)
class Invocation:
    """One validated tool call, ready to run."""

    call: ToolCall
    tool: Invokable
    args: dict[str, Any]


@attrs.frozen(slots=True)
class ToolRun:
    """What running one invocation gave: a value, the exception it raised, or why it was not
    run (``skipped``: a limit was reached). ``started_ns`` / ``ended_ns``: when this call ran
    (``time.time_ns()``, so each of a batch's calls, even concurrent ones, has its own
    times); ``0`` when it was not run here (skipped, replayed, stopped)."""

    value: Any = None
    error: BaseException | None = None
    skipped: str | None = None
    started_ns: int = 0
    ended_ns: int = 0
    #: The saved tool message this run was read from (a replay), yielded again as it was.
    saved: Message | None = None


# -- running it, once ------------------------------------------------------------------------

def timed_out(name: str, timeout: float) -> TimeoutError:
    return TimeoutError(f"tool {name!r} timed out after {timeout:g} s")


def execute(invocation: Invocation) -> ToolRun:
    """Run a call, blocking (``Runner.run``)."""
    started = time.time_ns()
    tool = invocation.tool
    try:
        if tool.is_async and not tool.runs_blocking:
            value = _run_async(invocation)
        elif tool.timeout is None:  # the most frequent
            value = tool.invoke(invocation.args)
        else:
            value = _in_thread(tool.invoke, invocation, tool.timeout)
    except Exception as exc:
        return ToolRun(error=exc, started_ns=started, ended_ns=time.time_ns())
    return ToolRun(value, started_ns=started, ended_ns=time.time_ns())


def _run_async(invocation: Invocation) -> Any:
    """An async tool, run to its end on a loop of its own (a blocking run has none)."""
    import asyncio

    try:
        return asyncio.run(_awaited(invocation, invocation.tool.ainvoke(invocation.args)))
    except asyncio.CancelledError as exc:  # nothing cancels a blocking run's tool
        raise _stray(invocation, exc) from exc


async def aexecute(invocation: Invocation) -> ToolRun:
    """Run a call on the running loop (``Runner.arun``, serving)."""
    import asyncio

    started = time.time_ns()
    tool = invocation.tool
    try:
        if tool.is_async:
            value = await _awaited(invocation, tool.ainvoke(invocation.args))
        elif tool.inline:
            value = tool.invoke(invocation.args)
        else:
            value = await _awaited(invocation, _threaded(tool.invoke, invocation))
    except asyncio.CancelledError as exc:
        task = asyncio.current_task()
        if task is not None and task.cancelling() > 0:
            raise  # the run itself is cancelled: it stops
        return ToolRun(error=_stray(invocation, exc), started_ns=started,
                       ended_ns=time.time_ns())
    except Exception as exc:
        return ToolRun(error=exc, started_ns=started, ended_ns=time.time_ns())
    return ToolRun(value, started_ns=started, ended_ns=time.time_ns())


async def _awaited(invocation: Invocation, work: Any) -> Any:
    """Await ``work`` within the tool's timeout (the one place a timeout is applied)."""
    timeout = invocation.tool.timeout
    if timeout is None:
        return await work
    import asyncio

    try:
        return await asyncio.wait_for(work, timeout)
    except TimeoutError:
        raise timed_out(invocation.call.name, timeout) from None


def _worker(fn: Callable[[dict[str, Any]], Any], invocation: Invocation,
            done: Callable[[bool, Any], None]) -> None:
    def work() -> Callable[[], None]:
        try:
            result = fn(invocation.args)
        except BaseException as exc:
            error = exc  # (``exc`` is unbound after the block)
            return lambda: done(False, error)
        return lambda: done(True, result)

    from ._workers import submit

    submit(work)


def _in_thread(fn: Callable[[dict[str, Any]], Any], invocation: Invocation,
               timeout: float) -> Any:
    """``fn(args)`` in a worker thread, abandoned (left to finish alone) after ``timeout``."""
    import threading

    box: list[tuple[bool, Any]] = []
    finished = threading.Event()

    def done(ok: bool, value: Any) -> None:
        box.append((ok, value))
        finished.set()

    _worker(fn, invocation, done)
    if not finished.wait(timeout):
        raise timed_out(invocation.call.name, timeout)
    ok, value = box[0]
    if not ok:
        raise value
    return value


async def _threaded(fn: Callable[[dict[str, Any]], Any], invocation: Invocation) -> Any:
    """``fn(args)`` in a worker thread, awaited on the loop."""
    import asyncio

    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if not future.done():
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)

    def done(ok: bool, value: Any) -> None:
        if not loop.is_closed():
            loop.call_soon_threadsafe(settle, ok, value)

    _worker(fn, invocation, done)
    return await future


def _stray(invocation: Invocation, exc: BaseException) -> RuntimeError:
    """A tool's own stray ``CancelledError``, as an error of that tool."""
    detail = f" ({exc})" if str(exc) else ""
    error = RuntimeError(f"tool {invocation.call.name!r} raised CancelledError without the "
                         f"run being cancelled{detail}")
    error.__cause__ = exc
    return error


def rerun(invocation: Invocation) -> ToolRun:
    """Run a tool again on resume: a tool marked ``rerun_on_resume`` (convo's termination
    tools) is pure, and what it returns (a TerminateResponse with its status, the end of the
    conversation) is more than its saved text says."""
    try:
        return ToolRun(invocation.tool.invoke(invocation.args))
    except Exception as exc:
        return ToolRun(error=exc)


def saved_run(message: Message) -> ToolRun:
    """A call's run as its saved tool message tells it (a resumed or rebuilt conversation)."""
    if not message.metadata:  # the common case: no facts to read (this runs per replayed call)
        return ToolRun(message.content, saved=message)
    # A saved failure stays a failure (it counts against the tool's retries again).
    if message.error:
        return ToolRun(error=SavedToolError(message.content), saved=message)
    # A tool that ended the turn (a Ctrl-C cancelled it, say) ends it again, with its status.
    terminated = message.terminated
    if terminated is not None:
        return ToolRun(TerminateResponse.from_saved(message.text, terminated), saved=message)
    return ToolRun(message.content, saved=message)


# -- what it gave: the tool message, and the ending it asks for ------------------------------

def tool_message(call: ToolCall, content: str | tuple[Part, ...], *, error: bool = False,
                 metadata: Mapping[str, Any] | None = None) -> Message:
    meta = {**(metadata or {}), ERROR_KEY: True} if error else metadata
    return Message("tool", content, tool_call_id=call.id, name=call.name, metadata=meta)


Read = tuple[str | tuple[Part, ...], bool, Ending, Mapping[str, Any] | None]
"""What one run gave: its tool message content, whether it is an error, the ending it asks
for, and what its tool message keeps beyond its text (a ``ToolResult``'s metadata, or the
``TerminateResponse`` of a tool that is not run again on resume: a resumed run ends the turn
from it, see ``saved_run``)."""


def outcome(invocation: Invocation, run: ToolRun) -> Read:
    """What one run gave (``Read``: its content is text, or parts when the tool returned
    images or files): the one place a run is read; the batch decides which ending wins."""
    # Why longer than 40 lines: every way a call can end, in one place.
    runnable = invocation.tool
    tool = runnable.tool if isinstance(runnable, Bound) else runnable
    assert isinstance(tool, Tool)
    error = run.error
    if error is not None:
        if isinstance(error, ReachedEndTemplateException):  # a tool may raise the signal
            farewell = error.farewell_message
            return _ended(farewell), False, EndConversation(farewell, tool.name), None
        if isinstance(error, SavedToolError):
            return str(error), True, CONTINUE, None
        if isinstance(error, ToolRetry):
            return (f"Error: {error.message} (fix this and call {tool.name!r} again)", True,
                    CONTINUE, None)
        return (f"Error: tool {tool.name!r} failed: {type(error).__name__}: {error}", True,
                CONTINUE, None)
    if run.skipped is not None:  # a limit; or no tool at all (an unknown one, live)
        return (f"{'Error' if isinstance(tool, Unlisted) else 'Not run'}: {run.skipped}",
                True, CONTINUE, None)
    value = run.value
    if isinstance(value, EndConversation):  # convo's own end_conversation: a value
        return _ended(value.farewell), False, value, None
    if isinstance(value, HandingOff):
        return value.text, False, HandOver(invocation.call, value.reason), None
    if isinstance(value, Move):
        return value.text, False, MoveState(value), None
    try:
        content = value.text if isinstance(value, TerminateResponse) else to_content(value)
    except TypeError as exc:
        return f"Error: tool {tool.name!r}: {exc}", True, CONTINUE, None
    metadata = value.metadata if isinstance(value, ToolResult) else None
    if isinstance(value, TerminateResponse):
        if not runnable.rerun_on_resume:
            metadata = {TERMINATED_KEY: value.saved()}
        if not tool.terminal:
            return content, False, Terminate(value, tool.name), metadata
    if tool.terminal:
        return content, False, TerminalReply(shown(content), tool.name), metadata
    return content, False, CONTINUE, metadata


def _ended(farewell: str | None) -> str:
    """The tool message of a call that ended the conversation."""
    return json.dumps({"status": "success", "message": farewell})
