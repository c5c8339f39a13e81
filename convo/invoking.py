"""Running one tool call, blocking or async; failures become values (``ToolRun.error``).

asyncio costs ~25 ms to import and only async runs (and async tools) need it: it is imported
when a function here needs it, so that ``import convo`` stays quick.
"""

from __future__ import annotations

from .requests import Invocation, ToolRun


def run_sync(invocation: Invocation) -> ToolRun:
    tool = invocation.tool
    try:
        if tool.is_async:
            import asyncio

            return ToolRun(asyncio.run(tool.ainvoke(invocation.args)))
        return ToolRun(tool.invoke(invocation.args))
    except Exception as exc:
        return ToolRun(error=exc)


async def run_async(invocation: Invocation) -> ToolRun:
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
