"""Answering one batch of tool calls: the helpers of ``ToolingTemplate`` (see tooling.py).

What each call's tool message says, which termination it asks for, and the retry budgets.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from ..errors import DefinitionError, ReachedEndTemplateException, ToolDefinitionError, ToolRetry
from ..messages import Message, ToolCall
from ..requests import Invocation, ToolRun
from ..tools.base import Bound, SavedToolError, Tool, ToolResult, to_text
from ..tools.output import NO_OUTPUT
from ..tools.termination import TERMINATED, TerminateResponse
from ..tools.transition import Move


@attrs.define(slots=True)
class Batch:
    """What answering one batch of tool calls decided."""

    farewell: str | None = None
    ended: bool = False
    ended_by: str | None = None
    terminal: str | None = None
    terminal_by: str | None = None
    terminate: TerminateResponse | None = None
    terminate_by: str | None = None
    move: Move | None = None  # a Transition's: beats a terminal tool (docs/states.md)
    last_text: str | None = None
    output: Any = NO_OUTPUT
    exhausted: str | None = None  # the note when a tool used up its retries


def tool_message(call: ToolCall, content: str, *, error: bool = False,
                 metadata: Mapping[str, Any] | None = None) -> Message:
    meta = {**(metadata or {}), "error": True} if error else metadata
    return Message("tool", content, tool_call_id=call.id, name=call.name, metadata=meta)


def saved_metadata(invocation: Invocation, run: ToolRun) -> Mapping[str, Any] | None:
    """What a tool message keeps of a run beyond its text: a ``ToolResult``'s metadata, or
    the ``TerminateResponse`` of a tool that is not run again on resume (a resumed run ends
    the turn from it, see ``convo.requests.RunTools.replay``)."""
    value = run.value
    if run.error is not None or run.skipped is not None:
        return None
    if isinstance(value, ToolResult):
        return value.metadata
    if isinstance(value, TerminateResponse) and not invocation.tool.rerun_on_resume:
        return {TERMINATED: value.saved()}
    return None


def check_tools(tools: Sequence[Any]) -> dict[str, Tool]:
    by_name: dict[str, Tool] = {}
    for i, candidate in enumerate(tools):
        if not isinstance(candidate, Tool):
            raise DefinitionError(
                f"ToolingTemplate: tools[{i}] is {type(candidate).__name__} {candidate!r}, "
                "expected a Tool (subclass Tool, or decorate a function with @tool)"
            )
        candidate.schema()
        for name in (candidate.name, *candidate.aliases):
            other = by_name.setdefault(name, candidate)
            if other is not candidate:
                raise ToolDefinitionError(
                    f"ToolingTemplate: two tools are named {name!r}: {other!r} and "
                    f"{candidate!r} (tools[{i}])"
                )
    return by_name


def check_count(where: str, name: str, value: Any, least: int, *, none: str,
                hint: str = "") -> None:
    """An int >= ``least`` (or None when ``none`` says what None means), else the author's
    mistake, naming the parameter."""
    if value is None and none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        also = f" or None ({none})" if none else ""
        raise DefinitionError(f"{where}: {name} must be an int >= {least}{hint}{also}, "
                              f"got {value!r}")


def record(batch: Batch, invocation: Invocation, run: ToolRun) -> tuple[str, bool]:
    """The tool message text of one run, noting any termination on the batch."""
    runnable = invocation.tool
    tool = runnable.tool if isinstance(runnable, Bound) else runnable
    assert isinstance(tool, Tool)
    if isinstance(run.error, ReachedEndTemplateException):
        farewell = run.error.farewell_message
        if not batch.ended:
            batch.ended, batch.farewell, batch.ended_by = True, farewell, tool.name
        return json.dumps({"status": "success", "message": farewell}), False
    if run.skipped is not None:
        return f"Not run: {run.skipped}", True
    if isinstance(run.error, SavedToolError):
        return str(run.error), True
    if isinstance(run.error, ToolRetry):
        return f"Error: {run.error.message} (fix this and call {tool.name!r} again)", True
    if run.error is not None:
        exc = run.error
        return f"Error: tool {tool.name!r} failed: {type(exc).__name__}: {exc}", True
    value = run.value
    if isinstance(value, Move):
        if batch.move is not None:
            return (f"Error: ignored: {batch.move.by!r} was already called in this batch "
                    f"and moves to state {batch.move.to!r}; only one transition is allowed "
                    "per batch"), True
        batch.move = value
        return value.text, False
    try:
        content = value.text if isinstance(value, TerminateResponse) else to_text(value)
    except TypeError as exc:
        return f"Error: tool {tool.name!r}: {exc}", True
    if tool.terminal:
        batch.terminal, batch.terminal_by = content, tool.name
    elif isinstance(value, TerminateResponse) and batch.terminate is None:
        batch.terminate, batch.terminate_by = value, tool.name
    return content, False


def count(failures_by_tool: dict[str, int], tool: Tool | None, batch: Batch, content: str,
          error: bool) -> None:
    """Count failed calls in a row per tool; note a tool that used up its retries."""
    if tool is None:
        return
    failures = failures_by_tool[tool.name] = (failures_by_tool.get(tool.name, 0) + 1
                                              if error else 0)
    if tool.retries is not None and failures > tool.retries and batch.exhausted is None:
        times = "time" if failures == 1 else "times"
        batch.exhausted = (f"tool {tool.name!r} failed {failures} {times} in a row, more "
                           f"than its retries={tool.retries} allow; last: {content}")
