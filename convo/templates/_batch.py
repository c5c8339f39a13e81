"""One batch of tool calls, in call order: prepare → approve → run → tool messages → ending.

The agent turn (``ToolingTemplate``) hands each reply's tool calls here (``answer``; or
``refuse``, when its loop guard ended the turn: each call gets its error, none runs). Each call is
*prepared* (its tool, its validated arguments; the mode's finish tool; one terminal call per
batch), the calls that need it are *approved* (one ``Approve``, in call order), the rest
*run* (one ``RunTools``; a ``SubroutineTool``'s template inline, since a template cannot run
inside a tool function), then every call gets exactly one *tool message*, in call order (the
history stays valid for the API), and the batch gives its *ending*: the strongest of what its
calls asked for (``convo.tools._endings``; one transition per batch, the retry budgets). A
single call's run and how it is read are ``convo.tools._calls``'s.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from .._approval import Approval
from .._errors import ToolArgumentError
from .._messages import Message, ToolCall
from .._parts import Part, shown
from .._reply import REJECTED_KEY
from .._requests import Approve, CheckGuards, Flow, RunTools
from .._session import Session
from ..events import ToolCallEnded, ToolCallStarted
from ..guards._base import AnyGuard, Checked
from ..guards._marks import KEY as GUARD_KEY
from ..guards._marks import WITHHELD, mark_of, with_text
from ..tools._base import Bound, Tool
from ..tools._calls import Invocation, Invokable, ToolRun, outcome, tool_message
from ..tools._context import ToolContext
from ..tools._endings import (
    CONTINUE,
    Ending,
    FinalOutput,
    GuardEnd,
    MoveState,
    RetriesSpent,
    stronger,
)
from ..tools._output import OUTPUT_TOOL, Output
from ..tools._transition import Move
from ._guarding import trip_mark
from ._subroutine_tool import SubroutineTool, delegate
from ._toolsets import TurnTools

logger = logging.getLogger("convo")

FINISH_TOOL: Final = {"response": "finish_response", "task": "finish_task"}
"""The finish tool of each mode of a ``ToolingTemplate``."""

NOT_RUN: Final = "not_run"
"""The metadata key of a tool message whose tool was not invoked (bad arguments, an unknown
tool, a limit reached): what a branch says stays done leaves it out (``not_undone``)."""

Answered = tuple[Ending, str | None]
"""What a batch gives the turn: its ending, and the text of its last tool message."""


def screen(reply: Message, tools: TurnTools, mode: str, output: Output | None,
           guards: Sequence[AnyGuard]) -> Flow:
    """Put a reply's calls to the ``tool_call`` guards before the reply is stored: returns the
    reply as they leave it (a redacted call's arguments replace the model's: no copy of them
    is stored, shown or sent on) and each checked call's result by its place (``Screened``,
    which ``answer`` acts on). Calls are prepared as ``answer`` prepares them, in call order;
    a guard that ends stops the screening there, as it stops the batch."""
    screened: dict[int, Checked | None] = {}
    terminal_by: str | None = None
    calls = list(reply.tool_calls)
    guards = tuple(guards)
    mark = mark_of(reply) or {}
    stored = mark.get(WITHHELD) or ()  # a replayed reply's calls whose arguments were withheld
    withheld: list[str] = []
    tool: Tool | None
    for i, call in enumerate(reply.tool_calls):
        if output is not None and call.name == OUTPUT_TOOL:
            continue
        if call.id in stored:  # blocked when it came: the stored verdict answers (a replay)
            tool, args = None, dict(call.arguments)
        else:
            try:
                tool, args = prepare(tools, call, mode, terminal_by)
            except ToolArgumentError:
                continue
        checked: Checked | None = yield CheckGuards("tool_call", None, args, guards, call=call)
        screened[i] = checked
        if checked is not None and checked.blocked:
            # A guard judged these arguments: they are not stored, shown or sent on (the
            # tool message says why it was blocked).
            calls[i] = ToolCall(call.id, call.name, {})
            withheld.append(call.id)
            if checked.ends:
                break
            continue
        if tool is not None and tool.terminal:
            terminal_by = tool.name
        if checked is not None and any(t.action == "redact" for t in checked.trips):
            calls[i] = ToolCall(call.id, call.name, checked.value)
    if withheld:
        metadata = {**reply.metadata, GUARD_KEY: {**mark, WITHHELD: withheld}}
        reply = attrs.evolve(reply, tool_calls=tuple(calls), metadata=metadata)
    elif calls != list(reply.tool_calls):
        reply = attrs.evolve(reply, tool_calls=tuple(calls))
    return reply, screened


Screened = Mapping[int, Checked | None]
"""What the ``tool_call`` guards made of a batch's calls (``screen``), by their place."""


def answer(session: Session, calls: Sequence[ToolCall], tools: TurnTools, mode: str,
           output: Output | None, failures: dict[str, int],
           guards: tuple[AnyGuard, ...] | None = None, screened: Screened | None = None
           ) -> Flow:
    """Answer one batch (``failures``: the turn's failed calls in a row, per tool; ``guards``:
    the turn's own when guards check its tool results (the turn's or the run's: decided once
    per turn, ``None`` when none do); ``screened``: what the ``tool_call`` guards said of its
    calls, put to them by ``screen`` before the reply was stored); returns ``Answered``."""
    # Why longer than 40 lines: prepare, approve, run and record one batch in one place, so
    # that the guarantee (one tool message per call, in call order) is visible at a glance.
    done: dict[int, tuple[str, bool]] = {}  # calls answered without running a tool
    invocations: list[Invocation] = []
    needing: list[Invocation] = []  # ... that need approval
    inline: list[Invocation] = []  # ... that run a subroutine
    contexts: dict[int, ToolContext] = {}
    terminal_by: str | None = None
    ending: Ending = CONTINUE
    # metadata["guard"] of a call's tool message: only what the ``tool_call`` guards screened
    marks: dict[int, Mapping[str, Any]] = {}
    stop: Checked | None = None  # a tool_call guard that ends the run stops the batch
    for i, call in enumerate(calls):
        yield ToolCallStarted(call)
        if output is not None and call.name == OUTPUT_TOOL:
            done[i], taken = _output(output, call)
            ending = stronger(ending, taken)
            continue
        checked = None if screened is None else screened.get(i)
        if checked is not None and checked.blocked:  # (its arguments were withheld: not read)
            marks[i] = checked.mark or {}
            done[i] = f"Blocked: {marks[i].get('reason')}", False
            if checked.ends:
                stop = checked
                break
            continue
        try:
            tool, args = prepare(tools, call, mode, terminal_by)
        except ToolArgumentError as exc:
            done[i] = f"Error: {exc}", True
            continue
        if checked is not None:
            marks[i] = checked.mark or {}
            args = checked.value
        if tool.terminal:
            terminal_by = tool.name
        runnable: Invokable = tool
        if tool.takes_context:
            contexts[i] = ToolContext(session, call, failures.get(tool.name, 0))
            runnable = Bound(tool, contexts[i])
        invocation = Invocation(call, runnable, args)
        (inline if isinstance(tool, SubroutineTool) else invocations).append(invocation)
        if tool.requires_approval(args):
            needing.append(invocation)
    if stop is not None:  # nothing of the batch runs
        mark = trip_mark(stop.mark)
        for i in range(len(calls)):
            done[i], marks[i] = (f"Blocked: {mark.get('reason')}", False), mark
        invocations, needing, inline = [], [], []
        ending = GuardEnd(stop.reply or "", mark)
    # A batch needing no approval (the most frequent) is not filtered again: this runs for
    # every batch, replayed ones too.
    rejected: dict[str, str] = {}
    if needing:
        decisions: list[Approval] = yield Approve(
            tuple(inv.call for inv in needing),
            approvers=tuple(inv.tool.approver for inv in needing))
        rejected = {inv.call.id: decision.rejection
                    for inv, decision in zip(needing, decisions, strict=True)
                    if not decision.approved}
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
    move: Move | None = None  # the batch's transition: one per batch
    text: str | None = None
    for i, call in enumerate(calls):
        metadata: Mapping[str, Any] | None = None
        content: str | tuple[Part, ...]
        message: Message | None = None
        ran_ns = 0, 0  # when its tool ran, if one did
        if i in done:  # no tool was invoked: its effects are none (``NOT_RUN``)
            content, error = done[i]
            metadata = {REJECTED_KEY: True} if rejected and call.id in rejected else \
                {NOT_RUN: True}
            if i in marks:
                metadata = {**metadata, GUARD_KEY: marks[i]}
        else:
            invocation, run = ran[call.id]
            content, error, asked, metadata = outcome(invocation, run)
            if run.skipped is not None:  # a limit, or an unknown tool: not invoked
                metadata = {**(metadata or {}), NOT_RUN: True}
            if asked is not CONTINUE:
                if asked.__class__ is MoveState:
                    if move is None:
                        move = asked.move
                    else:
                        content, error, asked, metadata = _second_move(move), True, CONTINUE, None
                # (Anything beats going on: the precedence is asked only between two endings.)
                ending = asked if ending is CONTINUE else stronger(ending, asked)
            if i in marks:
                metadata = {**(metadata or {}), GUARD_KEY: marks[i]}
            if guards is not None:
                content, metadata, guarded = yield from _result(call, content, metadata, guards)
                if guarded is not None:
                    ending = stronger(ending, guarded)
            saved = run.saved
            if saved is not None and saved.content == content \
                    and error is saved.error:
                message = saved  # replayed: the saved message again, its metadata too
            ran_ns = run.started_ns, run.ended_ns
        if i in contexts:
            yield from contexts[i].events
        text = content if isinstance(content, str) else shown(content)
        if error or failures:  # (a turn without failures has nothing to count)
            spent = count(failures, tools.by_name.get(call.name), text, error)
            if spent is not None:
                ending = stronger(ending, spent)
        yield message if message is not None else \
            tool_message(call, content, error=error, metadata=metadata)
        yield ToolCallEnded(call, text, error, *ran_ns)
    return ending, text


def refuse(calls: Sequence[ToolCall], why: str) -> Flow:
    """Answer a batch without running any of it (the loop guard ended the turn): each call's
    tool message, in call order, is the error ``why``."""
    for call in calls:
        yield tool_message(call, why, error=True)


def _result(call: ToolCall, content: str | tuple[Part, ...],
            metadata: Mapping[str, Any] | None, guards: tuple[AnyGuard, ...]) -> Flow:
    """A tool result as its guards leave it: ``(content, metadata, GuardEnd | None)``; a
    blocked one is ``Blocked: <reason>`` to the model, its original kept in its metadata."""
    text = content if isinstance(content, str) else shown(content)
    checked: Checked | None = yield CheckGuards("tool_result", None, text, guards, call=call)
    if checked is None:
        return content, metadata, None
    mark = dict(checked.mark or {})
    if checked.blocked:
        reason = mark.get("reason")
        mark["original"] = text
        return f"Blocked: {reason}", {**(metadata or {}), GUARD_KEY: mark}, \
            GuardEnd(checked.reply or "", trip_mark(mark)) if checked.ends else None
    if mark.get("action") == "redact":
        content = with_text(content, checked.value)
    return content, {**(metadata or {}), GUARD_KEY: mark}, None


def prepare(tools: TurnTools, call: ToolCall, mode: str, terminal_by: str | None
            ) -> tuple[Tool, dict[str, Any]]:
    """The tool and validated arguments of a call; ToolArgumentError says what is wrong."""
    tool = tools.by_name.get(call.name) or tools.stand_in(call)
    if tool is None:
        raise ToolArgumentError(tools.unknown(call.name))
    if tool.finish_mode is not None and tool.finish_mode != mode:
        raise ToolArgumentError(
            f"{tool.name!r} does not finish a turn in {mode} mode; "
            f"call {FINISH_TOOL[mode]!r} to finish"
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


def _output(output: Output, call: ToolCall) -> tuple[tuple[str, bool], Ending]:
    """A ``final_result`` call: its tool message, and the output it gives."""
    try:
        value = output.from_call(call)
    except ToolArgumentError as exc:
        return (f"Error: {exc}", True), CONTINUE
    return ("Final result received.", False), FinalOutput(value)


def _second_move(first: Move) -> str:
    return (f"Error: ignored: {first.by!r} was already called in this batch and moves to "
            f"state {first.to!r}; only one transition is allowed per batch")


def count(failures_by_tool: dict[str, int], tool: Tool | None, content: str,
          error: bool) -> RetriesSpent | None:
    """Count failed calls in a row per tool; a tool that used up its retries ends the turn."""
    if tool is None:
        return None
    failures = failures_by_tool[tool.name] = (failures_by_tool.get(tool.name, 0) + 1
                                              if error else 0)
    if tool.retries is None or failures <= tool.retries:
        return None
    times = "time" if failures == 1 else "times"
    return RetriesSpent(f"tool {tool.name!r} failed {failures} {times} in a row, more than "
                        f"its retries={tool.retries} allow; last: {content}")
