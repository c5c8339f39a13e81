"""Running one tool call, blocking or async; failures become values (``ToolRun.error``).

asyncio costs ~25 ms to import and only async runs (and async tools) need it: it is imported
when a function here needs it, so that ``import convo`` stays quick.

A ``CancelledError`` that a tool's own code lets escape (a task of its own cancelled, a
library's timeout) is an error of that tool, like any other; only the cancellation of the
task running the tools (the run's own) stops the run.
"""

from __future__ import annotations

from .requests import Invocation, ToolRun


def run_sync(invocation: Invocation) -> ToolRun:
    tool = invocation.tool
    try:
        if tool.is_async:
            import asyncio

            try:
                return ToolRun(asyncio.run(tool.ainvoke(invocation.args)))
            except asyncio.CancelledError as exc:  # nothing cancels a blocking run's tool
                return ToolRun(error=_stray(invocation, exc))
        return ToolRun(tool.invoke(invocation.args))
    except Exception as exc:
        return ToolRun(error=exc)


async def run_async(invocation: Invocation) -> ToolRun:
    import asyncio

    try:
        return await _run_async(invocation)
    except asyncio.CancelledError as exc:
        task = asyncio.current_task()
        if task is not None and task.cancelling() > 0:
            raise  # the run itself is cancelled: it stops
        return ToolRun(error=_stray(invocation, exc))


async def _run_async(invocation: Invocation) -> ToolRun:
    tool = invocation.tool
    try:
        if not tool.is_async:
            return ToolRun(tool.invoke(invocation.args))
        timeout = tool.timeout
        if timeout is None:
            return ToolRun(await tool.ainvoke(invocation.args))
        import asyncio

        try:
            return ToolRun(await asyncio.wait_for(tool.ainvoke(invocation.args), timeout))
        except TimeoutError:
            return ToolRun(error=TimeoutError(
                f"tool {invocation.call.name!r} timed out after {timeout:g} s"))
    except Exception as exc:
        return ToolRun(error=exc)


def _stray(invocation: Invocation, exc: BaseException) -> RuntimeError:
    """A tool's own stray ``CancelledError``, as an error of that tool."""
    detail = f" ({exc})" if str(exc) else ""
    error = RuntimeError(f"tool {invocation.call.name!r} raised CancelledError without the "
                         f"run being cancelled{detail}")
    error.__cause__ = exc
    return error
