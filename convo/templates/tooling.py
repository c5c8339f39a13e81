"""ToolingTemplate: one agent turn, the model/tool loop that always ends, for a reason.

Per render (one turn; every counter starts at zero): call the model with the tools' schemas;
run the tool calls it makes (one tool message per call, in call order) and apply the
termination family; a reply without tool calls ends the turn, unless output is restricted,
in which case a system message asks for a tool (within the injection budget). The turn is
bounded by ``max_iterations`` model calls and watched by the ``LoopGuard``.

(Over 300 lines: the turn and the batch belong together; a tool call's own steps are in
``convo.tools.calls``.)
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs

from ..approval import Approval
from ..context import ContextWindow, check_window
from ..errors import (
    DefinitionError,
    ReachedEndTemplateException,
    ToolArgumentError,
    ToolDefinitionError,
)
from ..events import RestrictionInjected, TaskCompleted, ToolCallEnded, ToolCallStarted, TurnEnded
from ..messages import Message, ToolCall
from ..parts import Part, shown
from ..reply import Finish
from ..requests import Approve, CallModel, Flow, RunTools
from ..session import RunStatus, Session, TurnResult
from ..tools.base import Bound, Tool
from ..tools.calls import (
    Batch,
    Invocation,
    Invokable,
    ToolRun,
    count,
    outcome,
    saved_metadata,
    tool_message,
)
from ..tools.context import ToolContext
from ..tools.output import NO_OUTPUT, OUTPUT_MESSAGE, OUTPUT_TOOL, Output
from ..tools.toolset import Toolset
from ..tools.transition import Moving
from .base import Template
from .checks import check_count, check_tools
from .guard import LoopGuard, TurnWatch
from .handoff import handed_off
from .subroutine_tool import SubroutineTool, delegate
from .toolsets import TurnTools, fixed, toolsets_of, turn_tools

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
    tools: TurnTools
    iterations: int = 0
    injections: int = 0
    response: str | None = None
    last_tool_text: str | None = None
    failures: dict[str, int] = attrs.field(factory=dict)  # failed calls in a row, per tool
    truncated: bool = False


def _approvals(needing: Sequence[Invocation]) -> Flow:
    """Ask a person about the calls that need approval (one request, in call order); returns
    the tool message of each rejected call, by call id."""
    decisions: list[Approval] = yield Approve(tuple(inv.call for inv in needing),
                                              approvers=tuple(inv.tool.approver
                                                              for inv in needing))
    return {inv.call.id: decision.rejection
            for inv, decision in zip(needing, decisions, strict=True) if not decision.approved}


@attrs.define(slots=True, eq=False)
class ToolingTemplate(Template):
    """One agent turn: the model/tool loop (see docs/termination.md and docs/tools.md)."""

    tools: Sequence[Tool | Toolset] = attrs.field(converter=tuple)
    model: Model | None = attrs.field(default=None, kw_only=True)
    mode: str = attrs.field(default="response", kw_only=True)
    restrict_output: bool = attrs.field(default=False, kw_only=True)
    restriction_message: str = attrs.field(default=DEFAULT_RESTRICTION_MESSAGE, kw_only=True)
    restriction_max_injections: int = attrs.field(default=0, kw_only=True)
    max_iterations: int | None = attrs.field(default=25, kw_only=True)
    loop_guard: LoopGuard | None = attrs.field(factory=LoopGuard, kw_only=True)
    context: ContextWindow | None = attrs.field(default=None, kw_only=True,
                                                validator=check_window)
    output_type: Any = attrs.field(default=None, kw_only=True)
    _by_name: dict[str, Tool] = attrs.field(init=False, repr=False)
    _schemas: tuple[dict[str, Any], ...] = attrs.field(init=False, repr=False)
    _output: Output | None = attrs.field(init=False, repr=False)
    _own: TurnTools = attrs.field(init=False, repr=False)  # the tools without the toolsets'
    _toolsets: tuple[Toolset, ...] = attrs.field(init=False, repr=False)
    _children: tuple[Template, ...] = attrs.field(init=False, repr=False)
    _ask: CallModel = attrs.field(init=False, repr=False)  # the model call, without toolsets

    def __attrs_post_init__(self) -> None:
        where = self.label()
        if self.mode not in MODES:
            raise DefinitionError(f"{where}: mode must be 'response' or 'task', got {self.mode!r}")
        check_count(where, "max_iterations", self.max_iterations, 1, none="no limit")
        check_count(where, "restriction_max_injections", self.restriction_max_injections, 0,
                     none="", hint=" (0 = unlimited)")
        if self.loop_guard is not None and not isinstance(self.loop_guard, LoopGuard):
            raise DefinitionError(f"{where}: loop_guard must be a LoopGuard or None, "
                                  f"got {self.loop_guard!r}")
        self._by_name = check_tools(self.tools)
        own = [t for t in self.tools if isinstance(t, Tool)]
        for t in own:
            check_count(f"{where}: tool {t.name!r}", "retries", t.retries, 0, none="no budget")
        self._schemas = tuple(t.schema() for t in own)
        self._output = None
        if self.output_type is not None:
            if OUTPUT_TOOL in self._by_name:
                raise ToolDefinitionError(f"{where}: a tool is named {OUTPUT_TOOL!r}, the name "
                                          "of the final-output tool of output_type")
            self._output = Output(self.output_type, where)
            self._schemas = (*self._schemas, self._output.schema)
        self._own = fixed(self._by_name, self._schemas, self.tools, self._output is not None)
        self._toolsets = toolsets_of(self.tools)
        self._ask = CallModel(self.model, self._own.schemas, context=self.context)
        self._children = tuple(t.template for t in self.tools if isinstance(t, SubroutineTool))

    def children(self) -> tuple[Template, ...]:
        """The templates of its ``SubroutineTool``s (checked with the tree)."""
        return self._children

    # -- the turn ---------------------------------------------------------------------------

    def render(self, session: Session) -> Flow:
        # Why longer than 40 lines: the loop of §4, step by step, reads best in one place.
        tools = self._own if not self._toolsets else (yield from turn_tools(
            self.label(), self.tools, self._own, self._toolsets, self._output is not None))
        turn = _Turn(self.loop_guard.watch() if self.loop_guard is not None else None, tools)
        ask = self._ask if tools is self._own else \
            CallModel(self.model, tools.schemas, context=self.context)
        bound = self.max_iterations
        while bound is None or turn.iterations < bound:
            reply: Message = yield ask
            turn.iterations += 1
            yield reply
            if reply.finish is Finish.LENGTH:
                turn.truncated = True
            text = reply.text
            if text.strip():
                turn.response = text
            verdict = None if turn.watch is None else turn.watch.verdict(reply,
                                                                         turn.last_tool_text)
            if reply.tool_calls:
                if verdict is not None:
                    for call in reply.tool_calls:
                        yield tool_message(
                            call, f"Not run: {verdict[1]}; the loop guard ended the turn.",
                            error=True)
                    yield from self._end(turn, verdict[0], note=f"loop guard: {verdict[1]}")
                    return session
                batch: Batch = yield from self._answer(session, turn, reply.tool_calls)
                turn.last_tool_text = batch.last_text
                if batch.decides() and (yield from self._terminated(session, turn, batch)):
                    return session
                continue
            if self._output is not None:
                output = self._output.from_text(reply.text)
                if output is not NO_OUTPUT:
                    yield from self._end(turn, RunStatus.COMPLETED, output=output, done=True)
                    return session
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
            if not self.restrict_output and self._output is None:
                status = RunStatus.COMPLETED if self.mode == "response" else \
                    RunStatus.IMPLICIT_COMPLETION
                yield self._ended(turn, status, response=reply.content)
                return session
            if bound is not None and turn.iterations >= bound:
                break  # no model call would follow an injection
            turn.injections += 1
            message = OUTPUT_MESSAGE if self._output is not None else self.restriction_message
            yield Message("system", message)
            yield RestrictionInjected(message, turn.injections)
        limit = RunStatus.MAX_ITERATIONS if self.mode == "response" else \
            RunStatus.ITERATIONS_EXCEEDED
        yield from self._end(turn, limit)
        return session

    def _terminated(self, session: Session, turn: _Turn, batch: Batch) -> Flow:
        """Apply the termination family, by precedence; True when the turn is over."""
        if batch.ended:
            if batch.farewell:
                yield Message("assistant", batch.farewell)
            yield from self._end(turn, RunStatus.ENDED, response=batch.farewell or turn.response,
                                 terminated_by=batch.ended_by, done=True)
            raise ReachedEndTemplateException(batch.farewell)
        if batch.move is not None:  # beats a terminal tool, whose result stays in history
            yield from self._end(turn, RunStatus.COMPLETED, terminated_by=batch.move.by,
                                 done=True)
            raise Moving(batch.move)
        if batch.handoff is not None:  # a person takes over until they hand back
            call, handing = batch.handoff
            yield from handed_off(session, call, handing.reason)
            yield from self._end(turn, RunStatus.COMPLETED, terminated_by=call.name, done=True)
            return True
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
        if batch.output is not NO_OUTPUT:
            yield from self._end(turn, RunStatus.COMPLETED, output=batch.output,
                                 terminated_by=OUTPUT_TOOL, done=True)
            return True
        if batch.exhausted is not None:
            yield from self._end(turn, RunStatus.ERROR, note=batch.exhausted)
            return True
        return False

    def _end(self, turn: _Turn, status: RunStatus, **fields: Any) -> Flow:
        ended = self._ended(turn, status, **fields)
        yield ended
        if status is RunStatus.PENDING_REVIEW:
            result = ended.result
            yield TaskCompleted(result.finish_status or "done", result.summary)

    def _ended(self, turn: _Turn, status: RunStatus, **fields: Any) -> TurnEnded:
        """The turn's end (``_end`` without its ``TaskCompleted``, for the statuses that have
        none: a plain reply ends most turns so)."""
        if "output" in fields and self._output is not None:
            fields.setdefault("response", self._output.dump(fields["output"]))
        fields.setdefault("response", turn.response)
        return TurnEnded(TurnResult(status=status, iterations=turn.iterations,
                                    injections=turn.injections, truncated=turn.truncated,
                                    **fields))

    # -- one batch of tool calls ------------------------------------------------------------

    def _prepare(self, tools: TurnTools, call: ToolCall, terminal_by: str | None
                 ) -> tuple[Tool, dict[str, Any]]:
        """The tool and validated arguments of a call; ToolArgumentError says what is wrong."""
        tool = tools.by_name.get(call.name) or tools.stand_in(call)
        if tool is None:
            raise ToolArgumentError(tools.unknown(call.name))
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

    def _answer(self, session: Session, turn: _Turn, calls: Sequence[ToolCall]) -> Flow:
        """Run a batch; one tool message per call, in call order. Returns a ``Batch``."""
        # Why longer than 40 lines: prepare, approve, run and record one batch in one place, so
        # that the guarantee (one tool message per call, in call order) is visible at a glance.
        done: dict[int, tuple[str, bool]] = {}  # calls answered without running a tool
        invocations: list[Invocation] = []
        needing: list[Invocation] = []  # ... that need approval
        inline: list[Invocation] = []  # ... that run a subroutine
        contexts: dict[int, ToolContext] = {}
        terminal_by: str | None = None
        batch = Batch()
        for i, call in enumerate(calls):
            yield ToolCallStarted(call)
            if self._output is not None and call.name == OUTPUT_TOOL:
                done[i] = self._take_output(batch, call)
                continue
            try:
                tool, args = self._prepare(turn.tools, call, terminal_by)
            except ToolArgumentError as exc:
                done[i] = f"Error: {exc}", True
                continue
            if tool.terminal:
                terminal_by = tool.name
            runnable: Invokable = tool
            if tool.takes_context:
                contexts[i] = ToolContext(session, call, turn.failures.get(tool.name, 0))
                runnable = Bound(tool, contexts[i])
            invocation = Invocation(call, runnable, args)
            (inline if isinstance(tool, SubroutineTool) else invocations).append(invocation)
            if tool.requires_approval(args):
                needing.append(invocation)
        # A batch needing no approval (the most frequent) is not filtered again: this runs
        # for every batch, replayed ones too.
        rejected: dict[str, str] = (yield from _approvals(needing)) if needing else {}
        if rejected:
            for i, call in enumerate(calls):
                if call.id in rejected:
                    done[i] = rejected[call.id], False
            invocations = [inv for inv in invocations if inv.call.id not in rejected]
            inline = [inv for inv in inline if inv.call.id not in rejected]
        runs: list[ToolRun] = (yield RunTools(tuple(invocations))) if invocations else []
        ran = {inv.call.id: (inv, run) for inv, run in zip(invocations, runs, strict=True)}
        for inv in inline:  # a template cannot run inside a tool function: it runs here
            ran[inv.call.id] = inv, (yield from delegate(session, inv))
        for i, call in enumerate(calls):
            metadata: Mapping[str, Any] | None = None
            content: str | tuple[Part, ...]
            message: Message | None = None
            ran_ns = 0, 0  # when its tool ran, if one did
            if i in done:
                content, error = done[i]
                if rejected and call.id in rejected:
                    metadata = {"rejected": True}
            else:
                invocation, run = ran[call.id]
                content, error = outcome(batch, invocation, run)
                saved = run.saved
                if saved is not None and saved.content == content \
                        and error is bool(saved.metadata.get("error")):
                    message = saved  # replayed: the saved message again, its metadata too
                elif not error:
                    metadata = saved_metadata(invocation, run)
                ran_ns = run.started_ns, run.ended_ns
            if i in contexts:
                yield from contexts[i].events
            text = content if isinstance(content, str) else shown(content)
            count(turn.failures, turn.tools.by_name.get(call.name), batch, text, error)
            yield message if message is not None else \
                tool_message(call, content, error=error, metadata=metadata)
            yield ToolCallEnded(call, text, error, *ran_ns)
            batch.last_text = text
        return batch

    def _take_output(self, batch: Batch, call: ToolCall) -> tuple[str, bool]:
        assert self._output is not None
        try:
            output = self._output.from_call(call)
        except ToolArgumentError as exc:
            return f"Error: {exc}", True
        if batch.output is NO_OUTPUT:
            batch.output = output
        return "Final result received.", False
