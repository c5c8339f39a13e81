"""ToolingTemplate: one agent turn, the model/tool loop that always ends, for a reason.

Per render (one turn; every counter starts at zero): call the model with the tools' schemas;
run the tool calls it makes (one tool message per call, in call order) and apply the
termination family; a reply without tool calls ends the turn, unless output is restricted,
in which case a system message asks for a tool (within the injection budget). The turn is
bounded by ``max_iterations`` model calls and watched by the ``LoopGuard``.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs

from ..errors import (
    DefinitionError,
    ReachedEndTemplateException,
    ToolArgumentError,
    ToolDefinitionError,
)
from ..events import RestrictionInjected, TaskCompleted, ToolCallEnded, ToolCallStarted, TurnEnded
from ..messages import Message, ToolCall
from ..requests import CallModel, Flow, Invocation, RunTools, ToolRun
from ..session import RunStatus, Session, TurnResult
from ..tools.base import Tool, ToolResult, to_text
from ..tools.termination import TerminateResponse
from .base import Template
from .guard import LoopGuard, TurnWatch

if TYPE_CHECKING:
    from ..models.base import Model

logger = logging.getLogger("convo")

DEFAULT_RESTRICTION_MESSAGE: Final = (
    "Do not produce a final answer directly. Before finishing, call a tool. "
    "If no tool is needed, call the 'finish' tool."
)
MODES: Final = ("response", "task")
_FINISH_TOOL: Final = {"response": "finish_response", "task": "finish_task"}


@attrs.define(slots=True)
class _Turn:
    watch: TurnWatch | None
    iterations: int = 0
    injections: int = 0
    response: str | None = None
    last_tool_text: str | None = None


@attrs.define(slots=True)
class _Batch:
    """What answering one batch of tool calls decided."""

    farewell: str | None = None
    ended: bool = False
    ended_by: str | None = None
    terminal: str | None = None
    terminal_by: str | None = None
    terminate: TerminateResponse | None = None
    terminate_by: str | None = None
    last_text: str | None = None


def _tool_message(call: ToolCall, content: str, *, error: bool = False,
                  metadata: Mapping[str, Any] | None = None) -> Message:
    meta = {**(metadata or {}), "error": True} if error else metadata
    return Message("tool", content, tool_call_id=call.id, name=call.name, metadata=meta)


def _check_tools(tools: Sequence[Any]) -> dict[str, Tool]:
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


@attrs.define(slots=True, eq=False)
class ToolingTemplate(Template):
    """One agent turn: the model/tool loop (see docs/termination.md)."""

    tools: Sequence[Tool] = attrs.field(converter=tuple)
    model: Model | None = attrs.field(default=None, kw_only=True)
    mode: str = attrs.field(default="response", kw_only=True)
    restrict_output: bool = attrs.field(default=False, kw_only=True)
    restriction_message: str = attrs.field(default=DEFAULT_RESTRICTION_MESSAGE, kw_only=True)
    restriction_max_injections: int = attrs.field(default=0, kw_only=True)
    max_iterations: int = attrs.field(default=25, kw_only=True)
    loop_guard: LoopGuard | None = attrs.field(factory=LoopGuard, kw_only=True)
    _by_name: dict[str, Tool] = attrs.field(init=False, repr=False)
    _schemas: tuple[dict[str, Any], ...] = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        where = self.label()
        if self.mode not in MODES:
            raise DefinitionError(f"{where}: mode must be 'response' or 'task', got {self.mode!r}")
        if self.max_iterations < 1:
            raise DefinitionError(f"{where}: max_iterations must be >= 1, "
                                  f"got {self.max_iterations}")
        if self.restriction_max_injections < 0:
            raise DefinitionError(f"{where}: restriction_max_injections must be >= 0 "
                                  f"(0 = unlimited), got {self.restriction_max_injections}")
        self._by_name = _check_tools(self.tools)
        self._schemas = tuple(t.schema() for t in self.tools)

    # -- the turn ---------------------------------------------------------------------------

    def render(self, session: Session) -> Flow:
        turn = _Turn(self.loop_guard.watch() if self.loop_guard is not None else None)
        while turn.iterations < self.max_iterations:
            reply: Message = yield CallModel(self.model, self._schemas)
            turn.iterations += 1
            yield reply
            if reply.content.strip():
                turn.response = reply.content
            verdict = None if turn.watch is None else turn.watch.verdict(reply,
                                                                         turn.last_tool_text)
            if reply.tool_calls:
                if verdict is not None:
                    for call in reply.tool_calls:
                        yield _tool_message(
                            call, f"Not run: {verdict[1]}; the loop guard ended the turn.",
                            error=True)
                    yield from self._end(turn, verdict[0], note=f"loop guard: {verdict[1]}")
                    return session
                batch: _Batch = yield from self._answer(reply.tool_calls)
                turn.last_tool_text = batch.last_text
                if (yield from self._terminated(turn, batch)):
                    return session
                continue
            budget = self.restriction_max_injections
            if self.restrict_output and budget and turn.injections >= budget:
                # The budget ends the turn anyway: that, not the guard, is why it ended.
                yield from self._end(turn, RunStatus.COMPLETED, response=reply.content,
                                     restriction_exhausted=True)
                return session
            if verdict is not None:
                yield from self._end(turn, verdict[0], response=reply.content,
                                     note=f"loop guard: {verdict[1]}")
                return session
            if not self.restrict_output:
                status = RunStatus.COMPLETED if self.mode == "response" else \
                    RunStatus.IMPLICIT_COMPLETION
                yield from self._end(turn, status, response=reply.content)
                return session
            if turn.iterations >= self.max_iterations:
                break  # no model call would follow an injection
            turn.injections += 1
            yield Message("system", self.restriction_message)
            yield RestrictionInjected(self.restriction_message, turn.injections)
        limit = RunStatus.MAX_ITERATIONS if self.mode == "response" else \
            RunStatus.ITERATIONS_EXCEEDED
        yield from self._end(turn, limit)
        return session

    def _terminated(self, turn: _Turn, batch: _Batch) -> Flow:
        """Apply the termination family, by precedence; True when the turn is over."""
        if batch.ended:
            if batch.farewell:
                yield Message("assistant", batch.farewell)
            yield from self._end(turn, RunStatus.ENDED, response=batch.farewell or turn.response,
                                 terminated_by=batch.ended_by, done=True)
            raise ReachedEndTemplateException(batch.farewell)
        if batch.terminal is not None:
            yield Message("assistant", batch.terminal)
            yield from self._end(turn, RunStatus.COMPLETED, response=batch.terminal,
                                 terminated_by=batch.terminal_by, done=True)
            return True
        if batch.terminate is not None:
            t = batch.terminate
            yield from self._end(turn, t.status, terminated_by=batch.terminate_by, note=t.note,
                                 summary=t.summary, finish_status=t.finish_status, done=True)
            return True
        return False

    def _end(self, turn: _Turn, status: RunStatus, **fields: Any) -> Flow:
        fields.setdefault("response", turn.response)
        result = TurnResult(status=status, iterations=turn.iterations,
                            injections=turn.injections, **fields)
        yield TurnEnded(result)
        if status is RunStatus.PENDING_REVIEW:
            yield TaskCompleted(result.finish_status or "done", result.summary)

    # -- one batch of tool calls ------------------------------------------------------------

    def _prepare(self, call: ToolCall, terminal_by: str | None) -> tuple[Tool, dict[str, Any]]:
        """The tool and validated arguments of a call; ToolArgumentError says what is wrong."""
        tool = self._by_name.get(call.name)
        if tool is None:
            names = ", ".join(t.name for t in self.tools) or "none"
            raise ToolArgumentError(f"there is no tool named {call.name!r}; "
                                    f"available tools: {names}")
        if tool.finish_mode is not None and tool.finish_mode != self.mode:
            raise ToolArgumentError(
                f"{tool.name!r} does not finish a turn in {self.mode} mode; "
                f"call {_FINISH_TOOL[self.mode]!r} to finish"
            )
        if tool.terminal and terminal_by is not None:
            raise ToolArgumentError(
                f"not run: {terminal_by!r} was already called in this batch and ends the "
                "turn; only one terminal tool call is allowed per batch"
            )
        if call.name != tool.name:
            message = f"the tool name {call.name!r} is deprecated; use {tool.name!r}"
            logger.warning(message)
            try:
                warnings.warn(message, DeprecationWarning, stacklevel=2)
            except DeprecationWarning:
                pass  # warnings-as-errors must not end a run over the model's choice of name
        return tool, tool.arguments_of(call)

    def _answer(self, calls: Sequence[ToolCall]) -> Flow:
        """Run a batch; one tool message per call, in call order. Returns a ``_Batch``."""
        problems: dict[int, str] = {}
        invocations: list[Invocation] = []
        terminal_by: str | None = None
        for i, call in enumerate(calls):
            yield ToolCallStarted(call)
            try:
                tool, args = self._prepare(call, terminal_by)
            except ToolArgumentError as exc:
                problems[i] = f"Error: {exc}"
                continue
            if tool.terminal:
                terminal_by = tool.name
            invocations.append(Invocation(call, tool, args))
        runs: list[ToolRun] = (yield RunTools(tuple(invocations))) if invocations else []
        batch = _Batch()
        pending = iter(zip(invocations, runs, strict=True))
        for i, call in enumerate(calls):
            metadata = None
            if i in problems:
                content, error = problems[i], True
            else:
                invocation, run = next(pending)
                content, error = self._record(batch, invocation, run)
                if not error and isinstance(run.value, ToolResult):
                    metadata = run.value.metadata
            yield _tool_message(call, content, error=error, metadata=metadata)
            yield ToolCallEnded(call, content, error)
            batch.last_text = content
        return batch

    @staticmethod
    def _record(batch: _Batch, invocation: Invocation, run: ToolRun) -> tuple[str, bool]:
        """The tool message text of one run, noting any termination on the batch."""
        tool = invocation.tool
        assert isinstance(tool, Tool)
        if isinstance(run.error, ReachedEndTemplateException):
            farewell = run.error.farewell_message
            if not batch.ended:
                batch.ended, batch.farewell, batch.ended_by = True, farewell, tool.name
            return json.dumps({"status": "success", "message": farewell}), False
        if run.error is not None:
            exc = run.error
            return f"Error: tool {tool.name!r} failed: {type(exc).__name__}: {exc}", True
        value = run.value
        try:
            content = value.text if isinstance(value, TerminateResponse) else to_text(value)
        except TypeError as exc:
            return f"Error: tool {tool.name!r}: {exc}", True
        if tool.terminal:
            batch.terminal, batch.terminal_by = content, tool.name
        elif isinstance(value, TerminateResponse) and batch.terminate is None:
            batch.terminate, batch.terminate_by = value, tool.name
        return content, False
