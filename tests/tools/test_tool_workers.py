"""Synchronous tools under ``arun()`` and serving run in worker threads that are kept for
the next call (``convo/tools/_workers.py``): a thread is not started per call, yet a slow
tool, or one abandoned after its timeout, never holds up another call."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from convo._messages import ToolCall
from convo.tools import _workers as workers
from convo.tools._calls import Invocation, aexecute
from convo.tools._decorator import tool

seen: list[threading.Thread] = []  # kept, so no two threads are ever confused
release = threading.Event()


@tool
def where(n: int) -> str:
    """Say which thread runs the call."""
    seen.append(threading.current_thread())
    return f"call {n}"


@tool(timeout=0.2)
def stuck(n: int) -> str:
    """Wait until released (beyond the timeout)."""
    release.wait(10)
    seen.append(threading.current_thread())
    return "late"


def call(t: Any, n: int) -> Invocation:
    return Invocation(ToolCall(f"c{n}", t.name, {"n": n}), t, {"n": n})


def test_calls_one_after_another_start_at_most_one_thread() -> None:
    seen.clear()
    before = set(threading.enumerate())

    async def calls() -> list[str]:
        return [(await aexecute(call(where, n))).value for n in range(20)]

    assert asyncio.run(calls()) == [f"call {n}" for n in range(20)]
    assert len(set(seen) - before) <= 1  # one, or none when an idle one was there
    assert threading.current_thread() not in seen  # never on the loop's own thread


def test_a_stuck_tool_holds_up_no_other_call_and_its_thread_comes_back() -> None:
    seen.clear()
    release.clear()

    async def calls() -> tuple[Any, list[str]]:
        first = await aexecute(call(stuck, 0))  # abandoned after 0.2 s, still running
        others = [(await aexecute(call(where, n))).value for n in range(1, 4)]
        return first, others

    first, others = asyncio.run(calls())
    assert str(first.error) == "tool 'stuck' timed out after 0.2 s"
    assert others == ["call 1", "call 2", "call 3"]
    release.set()
    for _ in range(500):  # the stuck call ends; its thread is idle again
        if len(seen) == 4 and workers._workers._idle >= 2:
            break
        threading.Event().wait(0.01)
    stuck_thread = seen[3]
    assert stuck_thread not in seen[:3]
    before = set(threading.enumerate())
    assert stuck_thread in before

    async def two_at_once() -> list[str]:
        runs = await asyncio.gather(aexecute(call(where, 5)), aexecute(call(where, 6)))
        return [r.value for r in runs]

    seen.clear()
    assert asyncio.run(two_at_once()) == ["call 5", "call 6"]
    assert set(seen) <= before  # two threads were idle (the stuck one's among them)
