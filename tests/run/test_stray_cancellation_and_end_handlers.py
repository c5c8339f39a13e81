"""A tool's stray cancellation is a tool error; an event handler failing at
the end of a run with ``raise_errors=False`` still gives the session back."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from convo import Event, Message, Runner, RunStatus, Session, ToolCall
from convo.events import RunEnded
from convo.models import MockModel
from convo.templates import LinearTemplate, SystemTemplate, ToolingTemplate, UserTemplate
from convo.tools import tool

BOUND_S = 10.0


@tool
async def flaky() -> str:
    """Waits on a task of its own that something else cancels."""
    inner = asyncio.ensure_future(asyncio.sleep(BOUND_S))
    asyncio.get_running_loop().call_soon(inner.cancel)
    await inner  # its CancelledError escapes the tool
    return "never"


def _agent(*tools: Any) -> LinearTemplate:
    return LinearTemplate([SystemTemplate("s"), UserTemplate("Go."),
                           ToolingTemplate(list(tools))])


def _model() -> MockModel:
    return MockModel([Message("assistant", "", tool_calls=(ToolCall("c1", "flaky", {}),)),
                      "Done."])


def _tool_result(session: Session) -> str:
    return next(m.content for m in session.messages if m.role == "tool")


def test_an_async_tools_stray_cancellation_is_a_tool_error_in_arun() -> None:
    runner = Runner(_model(), _agent(flaky), raise_errors=False)
    session = asyncio.run(asyncio.wait_for(runner.arun(), BOUND_S))
    assert session.outcome is not None
    assert session.outcome.status == RunStatus.COMPLETED
    assert "raised CancelledError without the run being cancelled" in _tool_result(session)
    assert session.messages[-1].content == "Done."


def test_an_async_tools_stray_cancellation_is_a_tool_error_in_run() -> None:
    session = Runner(_model(), _agent(flaky)).run()
    assert session.outcome is not None and session.outcome.status == RunStatus.COMPLETED
    assert "raised CancelledError without the run being cancelled" in _tool_result(session)


def test_cancelling_the_run_while_a_tool_waits_still_stops_it() -> None:
    started = asyncio.Event()

    @tool
    async def wait() -> str:
        """Waits until cancelled."""
        started.set()
        await asyncio.sleep(BOUND_S)
        return "never"

    model = MockModel([Message("assistant", "", tool_calls=(ToolCall("c1", "wait", {}),))])
    runner = Runner(model, _agent(wait), raise_errors=False)
    session = Session()

    async def main() -> None:
        task = asyncio.ensure_future(runner.arun(session))
        await asyncio.wait_for(started.wait(), BOUND_S)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert session.outcome is not None and session.outcome.status == RunStatus.STOPPED


class _DiskFull:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, event: Event) -> None:
        self.seen.append(type(event).__name__)
        if isinstance(event, RunEnded):
            raise OSError(28, "No space left on device")


def test_raise_errors_false_returns_the_session_when_the_handler_fails_at_the_end() -> None:
    handler = _DiskFull()
    runner = Runner(MockModel(["Hi."]), _agent(), on_event=handler, raise_errors=False)
    session = runner.run()
    assert session.messages[-1].content == "Hi."
    assert session.outcome is not None and session.outcome.status == RunStatus.ERROR
    assert session.outcome.error == ("the event handler failed at the end of the run: OSError: "
                                     "[Errno 28] No space left on device")
    assert handler.seen[-1] == "RunEnded"


def test_raise_errors_false_async_too_and_an_earlier_error_is_kept() -> None:
    def handler(event: Event) -> None:
        if isinstance(event, RunEnded):
            raise OSError(28, "No space left on device")

    broken = MockModel([])  # runs out of replies: the run fails first
    runner = Runner(broken, _agent(), on_event=handler, raise_errors=False)
    session = asyncio.run(runner.arun())
    assert session.outcome is not None and session.outcome.status == RunStatus.ERROR
    error = session.outcome.error or ""
    assert error.endswith("; then the event handler failed at the end of the run: OSError: "
                          "[Errno 28] No space left on device")


def test_raise_errors_true_still_raises_the_handlers_failure() -> None:
    runner = Runner(MockModel(["Hi."]), _agent(), on_event=_DiskFull())
    with pytest.raises(OSError, match="No space left"):
        runner.run()
