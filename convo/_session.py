"""Session, TurnResult, Outcome, RunStatus: the state of a conversation and why it ended (and
``Usage``, from ``convo._reply``, what it cost).

A session round-trips exactly through ``to_dict``/``from_dict`` and ``to_json``/``from_json``;
the dict carries ``format`` and ``version`` so a transcript written by one version of convo is
read by the next. Version 2 keeps convo's own records in ``internal`` (``convo.internal``);
a version-1 dict had them in ``state``, and they are moved out when it is read.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

import attrs

from ._approval import Approval
from ._internal import checked, from_legacy_state
from ._jsonvalues import state_problem
from ._messages import Message
from ._reply import NO_USAGE as NO_USAGE
from ._reply import UNREPORTED as UNREPORTED
from ._reply import Usage as Usage

FORMAT: Final = "convo.session"
FORMAT_VERSION: Final = 2


class RunStatus(enum.StrEnum):
    """Why a turn or a run ended."""

    COMPLETED = "completed"
    ENDED = "ended"
    PENDING_REVIEW = "pending_review"
    MAX_ITERATIONS = "max_iterations"
    ITERATIONS_EXCEEDED = "iterations_exceeded"
    STOPPED = "stopped"
    ERROR = "error"
    LLM_EMPTY_RESPONSE_ERROR = "llm_empty_response_error"
    IMPLICIT_COMPLETION = "implicit_completion"
    MAX_MESSAGES = "max_messages"
    USAGE_LIMIT = "usage_limit"
    GUARDED = "guarded"

    def __str__(self) -> str:
        return self.value


def _status(value: Any) -> RunStatus:
    # A RunStatus stays as it is (the enum's call costs two calls; this runs per turn).
    return value if value.__class__ is RunStatus else RunStatus(value)


@attrs.frozen(slots=True, kw_only=True)
class TurnResult:
    """How one agent turn (one render of a ``ToolingTemplate``) ended."""

    status: RunStatus = attrs.field(converter=_status)
    response: str | None = None
    terminated_by: str | None = None
    note: str | None = None
    summary: str | None = None
    finish_status: str | None = None
    iterations: int = 0
    injections: int = 0
    restriction_exhausted: bool = False
    done: bool = False
    #: The validated object of a turn with ``output_type`` (read back from JSON: plain data).
    output: Any = None
    truncated: bool = False  # a reply in the turn was cut off at the model's token limit

    def to_dict(self) -> dict[str, Any]:
        d = attrs.asdict(self, recurse=False)
        d["status"] = self.status.value
        if self.output is None:
            del d["output"]  # only typed turns carry it
        else:
            from pydantic_core import to_jsonable_python

            d["output"] = to_jsonable_python(self.output)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TurnResult:
        return cls(**d)


@attrs.frozen(slots=True, kw_only=True)
class Outcome:
    """Why a run ended, and what it cost."""

    status: RunStatus = attrs.field(converter=_status)
    farewell: str | None = None
    error: str | None = None
    turn: TurnResult | None = None
    messages: int = 0
    model_calls: int = 0
    usage: Usage = NO_USAGE
    elapsed_s: float = attrs.field(default=0.0, eq=False)  # timing is not identity
    limit: str | None = None  # the Limits field that ended the run (status usage_limit)

    def describe(self) -> str:
        """One line: the status and why."""
        why = {
            RunStatus.ENDED: f"the conversation was ended ({self.farewell!r})"
            if self.farewell else "the conversation was ended",
            RunStatus.STOPPED: "the user quit or the run was cancelled",
            RunStatus.MAX_MESSAGES: "the runner's max_messages bound was reached",
            RunStatus.ERROR: f"an error: {self.error}" if self.error
            else f"the last turn failed: {self.turn.note}" if self.turn and self.turn.note
            else "an error",
            RunStatus.USAGE_LIMIT: f"the {self.limit} limit was reached",
        }.get(self.status)
        if why is None and self.turn is not None:
            why = self._turn_ending(self.turn)
        if why is None:
            why = "the conversation ran to its end"
        counts = (f"{self.messages} message{'s' * (self.messages != 1)}, "
                  f"{self.model_calls} model call{'s' * (self.model_calls != 1)}")
        return f"{self.status.value}: {why} ({counts})"

    def _turn_ending(self, turn: TurnResult) -> str | None:
        """Why the last agent turn ended, when that ended the run: in plain words."""
        if turn.terminated_by == "guard":
            return f"a guard ended it ({turn.note})" if turn.note else "a guard ended it"
        if turn.terminated_by:
            return f"the model called {turn.terminated_by!r}"
        if turn.note and turn.note.startswith("loop guard: "):
            return f"the loop guard ended the turn ({turn.note.removeprefix('loop guard: ')})"
        return {
            RunStatus.MAX_ITERATIONS: f"the agent turn reached its max_iterations "
                                      f"({turn.iterations} model calls)",
            RunStatus.ITERATIONS_EXCEEDED: f"the task reached its max_iterations "
                                           f"({turn.iterations} model calls) unfinished",
            RunStatus.IMPLICIT_COMPLETION: "the model answered without calling a finish tool",
            RunStatus.LLM_EMPTY_RESPONSE_ERROR: "the model's replies were empty",
        }.get(self.status)

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "farewell": self.farewell,
            "error": self.error,
            "turn": self.turn.to_dict() if self.turn else None,
            "messages": self.messages,
            "model_calls": self.model_calls,
            "usage": self.usage.to_dict(),
            "elapsed_s": self.elapsed_s,
            "limit": self.limit,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Outcome:
        d = dict(d)
        turn = d.pop("turn", None)
        usage = d.pop("usage", None)
        return cls(
            turn=TurnResult.from_dict(turn) if turn else None,
            usage=Usage.from_dict(usage),
            **d,
        )


def read_parent(value: Any, where: str) -> dict[str, Any] | None:
    """A ``parent`` record as read from ``where`` (``None``: none, or not one: a malformed
    record costs the link, never the conversation)."""
    if value is None:
        return None
    if isinstance(value, dict) and isinstance(value.get("before"), int) \
            and isinstance(value.get("id"), str | None):
        return {"id": value["id"], "before": value["before"]}
    import warnings

    warnings.warn(f"{where}: convo ignored its parent record {value!r} (expected "
                  '{"id": text or null, "before": an index})', UserWarning, stacklevel=3)
    return None


def _as_tuple(messages: Iterable[Message]) -> tuple[Message, ...]:
    return tuple(messages)


def _as_runs(runs: Iterable[SubroutineRun]) -> tuple[SubroutineRun, ...]:
    return tuple(runs)


@attrs.frozen(slots=True, kw_only=True)
class SubroutineRun:
    """The child session of one ``SubroutineTemplate`` run: all its messages, the first
    ``inherited`` of them copied from the parent, which had ``index`` messages then; and the
    records of the subroutines run inside it (``subroutines``, their ``index`` counted in
    this child's ``messages``), as ``Session.subroutines`` holds the conversation's."""

    label: str
    index: int
    inherited: int
    messages: tuple[Message, ...] = attrs.field(converter=_as_tuple)
    subroutines: tuple[SubroutineRun, ...] = attrs.field(default=(), converter=_as_runs)

    @property
    def size(self) -> int:
        """How many messages the record holds, those of the subroutines inside it included."""
        return len(self.messages) + sum(run.size for run in self.subroutines)

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "index": self.index, "inherited": self.inherited,
                "messages": [m.to_dict() for m in self.messages]} | (
            {"subroutines": [r.to_dict() for r in self.subroutines]} if self.subroutines
            else {})

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SubroutineRun:
        return cls(label=d["label"], index=d["index"], inherited=d["inherited"],
                   messages=[Message.from_dict(m) for m in d["messages"]],
                   subroutines=[cls.from_dict(r) for r in d.get("subroutines") or ()])


def _to_list(messages: Iterable[Message] | None) -> list[Message]:
    return list(messages or ())  # a copy: a run never changes the caller's list


def _to_dict(state: Mapping[str, Any] | None) -> dict[str, Any]:
    return dict(state or {})  # a copy: a run never changes the caller's dict


# No __weakref__ slot (as Message): a server keeps many idle sessions, each with its own empty
# containers already (state, approvals, internal...), and 8 bytes each add up.
@attrs.define(slots=True, eq=True, weakref_slot=False)
class Session:
    """A conversation: its messages, the variables templates see, its turns and its outcome."""

    messages: list[Message] = attrs.field(factory=list, converter=_to_list)
    state: dict[str, Any] = attrs.field(factory=dict, converter=_to_dict)
    turns: list[TurnResult] = attrs.field(factory=list, kw_only=True)
    outcome: Outcome | None = attrs.field(default=None, kw_only=True)
    #: Decisions on tool calls that needed approval, by call id (a resumed run reuses them).
    approvals: dict[str, Approval] = attrs.field(factory=dict, kw_only=True)
    #: The child sessions of the SubroutineTemplates run so far (see docs/states.md).
    subroutines: list[SubroutineRun] = attrs.field(factory=list, kw_only=True)
    #: convo's own records (context summary, state-machine position; ``convo.internal``):
    #: kept apart from ``state``, which clients, tools and templates write.
    internal: dict[str, Any] = attrs.field(factory=dict, kw_only=True, converter=_to_dict)
    #: The conversation this one was branched from (``Runner.branch``): ``{"id", "before"}``,
    #: ``id`` the served conversation's id, a transcript's path or ``None``; else ``None``.
    parent: dict[str, Any] | None = attrs.field(default=None, kw_only=True)
    #: Messages handed to a run by ``Runner.steer`` and not yet taken (API.md §26): the run
    #: takes them at its next safe point (before its next model call) or ``AskUser``; kept
    #: in transcripts when a run stopped early with some not taken.
    queued: list[Message] = attrs.field(factory=list, kw_only=True, eq=False)
    # Where the guards of the run on this session look (``"input"``, ``"output"``...), set by
    # the run (``RunState``); ``None``: not known, every check is asked for. Never written,
    # compared or copied: a template reads it so that a run without guards pays nothing.
    _guards_on: frozenset[str] | None = attrs.field(default=None, init=False, eq=False,
                                                    repr=False)

    def append(self, message: Message) -> None:
        self.messages.append(message)

    @property
    def last_message(self) -> Message | None:
        return self.messages[-1] if self.messages else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "messages": [m.to_dict() for m in self.messages],
            "state": self.state,
            "turns": [t.to_dict() for t in self.turns],
            "outcome": self.outcome.to_dict() if self.outcome else None,
            "approvals": {k: a.to_dict() for k, a in self.approvals.items()},
        } | ({"subroutines": [r.to_dict() for r in self.subroutines]} if self.subroutines
             else {}) | ({"internal": self.internal} if self.internal else {}) \
            | ({"parent": self.parent} if self.parent is not None else {}) \
            | ({"queued": [m.to_dict() for m in self.queued]} if self.queued else {})

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Session:
        if d.get("format", FORMAT) != FORMAT:
            raise ValueError(f"not a convo session: format is {d.get('format')!r}, "
                             f"expected {FORMAT!r}")
        version = d.get("version", FORMAT_VERSION)
        if not isinstance(version, int) or version > FORMAT_VERSION:
            raise ValueError(
                f"session format version {version!r} is newer than this convo reads "
                f"(up to {FORMAT_VERSION}); upgrade convo"
            )
        outcome = d.get("outcome")
        state = d.get("state") or {}
        if version < 2:  # convo's records were in the state then
            state, internal = from_legacy_state(state, "a version-1 session")
        else:
            internal = checked(d.get("internal") or {}, "a session")
        return cls(
            [Message.from_dict(m) for m in d.get("messages") or ()],
            state,
            turns=[TurnResult.from_dict(t) for t in d.get("turns") or ()],
            outcome=Outcome.from_dict(outcome) if outcome else None,
            approvals={k: Approval.from_dict(a) for k, a in (d.get("approvals") or {}).items()},
            subroutines=[SubroutineRun.from_dict(r) for r in d.get("subroutines") or ()],
            internal=internal,
            parent=read_parent(d.get("parent"), "a session"),
            queued=[Message.from_dict(m) for m in d.get("queued") or ()],
        )

    def to_json(self, **dumps_kw: Any) -> str:
        try:
            return json.dumps(self.to_dict(), ensure_ascii=False, **dumps_kw)
        except TypeError as exc:
            said = state_problem(self.state) or f"{exc} (session.state must hold JSON values)"
            raise TypeError(f"session cannot be written as JSON: {said}") from exc

    @classmethod
    def from_json(cls, text: str) -> Session:
        return cls.from_dict(json.loads(text))
