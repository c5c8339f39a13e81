"""ToolingTemplate: one agent turn, the model/tool loop that always ends, for a reason.

Per render (one turn; every counter starts at zero): call the model with the tools' schemas;
have the batch of tool calls it makes answered (``convo.templates._batch``: one tool message
per call, in call order, and the batch's ending) and end the turn as that ending says; a
reply without tool calls ends the turn, unless output is restricted, in which case a system
message asks for a tool (within the injection budget). The turn is bounded by
``max_iterations`` model calls and watched by the ``LoopGuard`` (here: it bounds this loop and
nothing else). This module is the loop only: a batch is ``convo.templates._batch``'s, a single
call ``convo.tools._calls``'s.

(Past 300 lines: the loop, and the ``LoopGuard`` that bounds it and nothing else, in one place.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs

from .._context import ContextWindow, check_window
from .._errors import DefinitionError, ReachedEndTemplateException, ToolDefinitionError
from .._messages import Message, ToolCall
from .._reply import Finish
from .._requests import CallModel, Flow, TakeSteered
from .._session import RunStatus, Session, TurnResult
from ..events import RestrictionInjected, TaskCompleted, TurnEnded
from ..guards._base import AT_CALL, AnyGuard, as_guards, check_names
from ..guards._marks import KEY as GUARD_KEY
from ..guards._marks import blocked
from ..guards._plan import NO_KINDS
from ..tools._base import Tool
from ..tools._endings import (
    Continue,
    EndConversation,
    Ending,
    FinalOutput,
    GuardEnd,
    HandOver,
    MoveState,
    RetriesSpent,
    TerminalReply,
    Terminate,
)
from ..tools._frontend import offered
from ..tools._output import NO_OUTPUT, OUTPUT_MESSAGE, OUTPUT_TOOL, Output
from ..tools._toolset import Toolset
from ..tools._transition import Moving
from ._base import Template
from ._batch import answer, refuse, screen
from ._checks import check_count, check_tools
from ._guarding import (
    answered_input,
    asks,
    blocked_reply,
    checked_reply,
    checks_reply,
    ended,
    own,
)
from ._handoff import handed_off
from ._subroutine_tool import SubroutineTool
from ._toolsets import TurnTools, fixed, toolsets_of, turn_tools, with_frontend

if TYPE_CHECKING:
    from ..models._base import Model

DEFAULT_RESTRICTION_MESSAGE: Final = (
    "Do not produce a final answer directly. Before finishing, call a tool. "
    "If no tool is needed, call the 'finish' tool."
)
MODES: Final = ("response", "task")
STEERED: Final = TakeSteered()


# -- the loop guard: what ends a runaway turn (repeats, empty or trivial replies, echoes) ----

Verdict = tuple[RunStatus, str]


@attrs.frozen(slots=True)
class LoopGuard:
    """Limits on one turn's replies; ``ToolingTemplate(loop_guard=None)`` switches it off.

    - the same reply text, or the same batch of tool calls, ``max_repeats`` times in a row
      → ``implicit_completion``;
    - ``max_empty`` empty or trivial (shorter than ``trivial_chars``) replies in a row →
      ``llm_empty_response_error`` when all were empty, else ``implicit_completion``;
    - with ``detect_echo``, a reply that only repeats the last tool result →
      ``implicit_completion``.
    """

    max_repeats: int = 3
    max_empty: int = 3
    trivial_chars: int = 10
    detect_echo: bool = True

    def watch(self) -> TurnWatch:
        """A fresh watcher for one turn."""
        return TurnWatch(self)


class TurnWatch:
    """The guard's counters for one turn."""

    __slots__ = ("all_empty", "empties", "guard", "last_key", "repeats")

    def __init__(self, guard: LoopGuard) -> None:
        self.guard = guard
        self.last_key: object = None
        self.repeats = 0
        self.empties = 0
        self.all_empty = True

    def verdict(self, reply: Message, text: str, last_tool_text: str | None) -> Verdict | None:
        """Why the turn must end after this reply (``text``: its text), or None."""
        guard = self.guard
        text = text.strip()
        if not reply.tool_calls and len(text) < guard.trivial_chars:
            self.last_key, self.repeats = None, 0
            self.empties += 1
            self.all_empty = self.all_empty and not text
            if guard.max_empty and self.empties >= guard.max_empty:
                if self.all_empty:
                    return (RunStatus.LLM_EMPTY_RESPONSE_ERROR,
                            f"{self.empties} empty replies in a row")
                return (RunStatus.IMPLICIT_COMPLETION,
                        f"{self.empties} empty or trivial replies in a row")
            return None
        self.empties, self.all_empty = 0, True
        # The text, or the calls (the same calls: the same names and arguments as JSON).
        key: object = reply.tool_calls or text
        last = self.last_key
        same = _same(key, last) if key.__class__ is tuple and last.__class__ is tuple else \
            key == last
        self.repeats = self.repeats + 1 if same else 1
        self.last_key = key
        if guard.max_repeats and self.repeats >= guard.max_repeats:
            what = "tool calls" if reply.tool_calls else "reply"
            return (RunStatus.IMPLICIT_COMPLETION,
                    f"the same {what} {self.repeats} times in a row")
        if (guard.detect_echo and not reply.tool_calls and last_tool_text
                and text == last_tool_text.strip()):
            return RunStatus.IMPLICIT_COMPLETION, "the reply only echoed the last tool result"
        return None


def _same(key: tuple[ToolCall, ...], last: tuple[ToolCall, ...]) -> bool:
    """Whether two batches of calls are the same; their arguments become JSON only when the
    names match (most replies differ from the last one sooner)."""
    if len(key) != len(last) or any(a.name != b.name for a, b in zip(key, last, strict=True)):
        return False
    return all(a.arguments_json() == b.arguments_json() for a, b in zip(key, last, strict=True))


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
    guards: tuple[AnyGuard, ...] = attrs.field(default=(), kw_only=True, converter=as_guards)
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
        self.guards = check_names(self.guards, where)
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
        self._ask = CallModel(self.model, self._own.schemas, context=self.context,
                              guards=self.guards)
        self._children = tuple(t.template for t in self.tools if isinstance(t, SubroutineTool))

    def children(self) -> tuple[Template, ...]:
        """The templates of its ``SubroutineTool``s (checked with the tree)."""
        return self._children

    # -- the turn ---------------------------------------------------------------------------

    def render(self, session: Session) -> Flow:
        # Why longer than 40 lines: the loop of §4, step by step, reads best in one place.
        tools = self._own if not self._toolsets else (yield from turn_tools(
            self.label(), self.tools, self._own, self._toolsets, self._output is not None))
        if session.internal:  # a served front end's own tools (AG-UI's frontend tools)
            tools = with_frontend(tools, offered(session.internal))
        turn = _Turn(self.loop_guard.watch() if self.loop_guard is not None else None, tools)
        ask = self._ask if tools is self._own else \
            CallModel(self.model, tools.schemas, context=self.context, guards=self.guards)
        # What the turn puts to guards, decided once per turn: in a run without guards (and
        # a turn without its own) nothing, and its loop pays one test per model call for them.
        kinds = session._guards_on
        guarded = False  # whether its replies or their calls are put to guards
        results = screened = None  # the guards on its tool results; what they said of calls
        if self.guards or kinds is not NO_KINDS:  # (NO_KINDS: the run has none)
            guards = self.guards
            if not guards and kinds is not None:  # the run's guards only
                # (``asks`` and ``checks_reply`` without a call)
                checks = "output" in kinds and AT_CALL not in kinds
                screens = "tool_call" in kinds
                results = guards if "tool_result" in kinds else None
                if "input" in kinds and (yield from answered_input(session, ())):
                    return session
            else:
                if asks(session, "input", guards) and (
                        yield from answered_input(session, own(guards, "input"))):
                    return session
                checks = checks_reply(session, guards)  # whether a reply is put to them
                screens = asks(session, "tool_call", guards)  # ... or its calls, before stored
                results = guards if asks(session, "tool_result", guards) else None
            guarded = checks or screens
        bound = self.max_iterations
        while bound is None or turn.iterations < bound:
            if turn.iterations:  # the safe point: messages sent while the turn ran (§26)
                steered: tuple[Message, ...] = yield STEERED
                yield from steered
            reply: Message = yield ask
            turn.iterations += 1
            if guarded:
                if checks:
                    reply = yield from checked_reply(reply, guards)
                screened = None
                if screens and reply.tool_calls and not (GUARD_KEY in reply.metadata
                                                         and blocked(reply)):
                    reply, screened = yield from screen(reply, turn.tools, self.mode,
                                                        self._output, guards)
            yield reply
            if reply.metadata:  # (a reply without facts or a guard's mark: no test more)
                if GUARD_KEY in reply.metadata and blocked(reply):
                    yield from blocked_reply(reply, iterations=turn.iterations)
                    return session
                if reply.finish is Finish.LENGTH:
                    turn.truncated = True
            text = reply.text
            if text.strip():
                turn.response = text
            verdict = None if turn.watch is None else turn.watch.verdict(reply, text,
                                                                         turn.last_tool_text)
            if reply.tool_calls:
                if verdict is not None:
                    yield from refuse(reply.tool_calls,
                                      f"Not run: {verdict[1]}; the loop guard ended the turn.")
                    yield from self._end(turn, verdict[0], note=f"loop guard: {verdict[1]}")
                    return session
                ending, turn.last_tool_text = yield from answer(
                    session, reply.tool_calls, turn.tools, self.mode, self._output,
                    turn.failures, results, screened)
                if ending.__class__ is Continue:
                    continue
                yield from self._close(session, turn, ending)
                return session
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

    def _close(self, session: Session, turn: _Turn, ending: Ending) -> Flow:
        """End the turn as the batch's ending says (the one place an ending is acted on; its
        precedence is ``convo.tools._endings.PRECEDENCE``)."""
        match ending:
            case GuardEnd(reply=reply, mark=mark):  # a tool_call/tool_result guard ended it
                yield Message("assistant", reply, metadata={GUARD_KEY: mark})
                yield from ended(reply, mark, iterations=turn.iterations)
            case EndConversation(farewell=farewell, by=by):
                if farewell:
                    yield Message("assistant", farewell)
                yield self._ended(turn, RunStatus.ENDED, response=farewell or turn.response,
                                  terminated_by=by, done=True)
                raise ReachedEndTemplateException(farewell)  # the signal, raised once
            case MoveState(move=move):  # beats a terminal tool, whose result stays in history
                yield self._ended(turn, RunStatus.COMPLETED, terminated_by=move.by, done=True)
                raise Moving(move)
            case HandOver(call=call, reason=reason):  # a person has it until they hand back
                yield from handed_off(session, call, reason)
                yield self._ended(turn, RunStatus.COMPLETED, terminated_by=call.name,
                                  done=True)
            case TerminalReply(text=text, by=by):  # a reply like any other: guards check it
                said = Message("assistant", text)
                if asks(session, "output", self.guards):
                    said = yield from checked_reply(said, self.guards)
                yield said
                if GUARD_KEY in said.metadata and blocked(said):
                    yield from blocked_reply(said, iterations=turn.iterations)
                    return
                yield self._ended(turn, RunStatus.COMPLETED, response=said.text,
                                  terminated_by=by, done=True)
            case Terminate(response=t, by=by):  # the one ending that may ask for a review
                yield self._ended(turn, t.status, terminated_by=by, note=t.note,
                                  summary=t.summary, finish_status=t.finish_status, done=True)
                if t.status is RunStatus.PENDING_REVIEW:
                    yield TaskCompleted(t.finish_status or "done", t.summary)
            case FinalOutput(output=output):
                yield self._ended(turn, RunStatus.COMPLETED, output=output,
                                  terminated_by=OUTPUT_TOOL, done=True)
            case RetriesSpent(note=note):
                yield self._ended(turn, RunStatus.ERROR, note=note)

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
