"""How a batch of tool calls ends the turn: one small sum type, its precedence written once.

A call's run is read (``convo.tools._calls.outcome``) into the ending it asks for; the batch
(``convo.templates._batch``) keeps the strongest (``stronger``); the agent turn
(``ToolingTemplate``) acts on it in one place. Like pydantic-graph's ``End``, an ending is a
value: ending the conversation and moving a state machine travel as values up to the turn,
which raises the control signal once (see docs/termination.md, "Precedence in one batch").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, TypeAlias

import attrs

if TYPE_CHECKING:
    from .._messages import ToolCall
    from ._base import TerminateResponse
    from ._transition import Move


@attrs.frozen(slots=True)
class GuardEnd:
    """A guard with ``action="end"`` tripped on a tool call or result: its message is the
    reply, and the run ends ``guarded`` (``mark``: the guard's ``metadata["guard"]``)."""

    reply: str
    mark: Mapping[str, Any] = attrs.field(hash=False)


@attrs.frozen(slots=True)
class EndConversation:
    """End the whole conversation (``end_conversation``, or a tool raising
    ``ReachedEndTemplateException``), with the farewell appended when there is one."""

    farewell: str | None
    by: str


@attrs.frozen(slots=True)
class MoveState:
    """Move the enclosing ``StateMachineTemplate`` (a ``Transition``)."""

    move: Move


@attrs.frozen(slots=True)
class HandOver:
    """A person takes the conversation until they hand it back (``handoff``)."""

    call: ToolCall
    reason: str | None


@attrs.frozen(slots=True)
class TerminalReply:
    """A terminal tool's output is the turn's reply, verbatim."""

    text: str
    by: str


@attrs.frozen(slots=True)
class Terminate:
    """A ``TerminateResponse`` (the finish tools) ends the turn with its status."""

    response: TerminateResponse
    by: str


@attrs.frozen(slots=True)
class FinalOutput:
    """``final_result`` of an ``output_type`` gave the turn's output."""

    output: Any


@attrs.frozen(slots=True)
class RetriesSpent:
    """A tool failed more often in a row than its ``retries`` allow: the turn ends, an error."""

    note: str


@attrs.frozen(slots=True)
class Continue:
    """Nothing ends the turn: the model is called again."""


Ending: TypeAlias = (GuardEnd | EndConversation | MoveState | HandOver | TerminalReply | Terminate
                     | FinalOutput | RetriesSpent | Continue)

CONTINUE: Final = Continue()

PRECEDENCE: Final = (GuardEnd, EndConversation, MoveState, HandOver, TerminalReply, Terminate,
                     FinalOutput, RetriesSpent, Continue)
"""The strongest first (docs/termination.md's table): within one rank the first call wins."""

_RANK: Final[dict[type, int]] = {kind: rank for rank, kind in enumerate(PRECEDENCE)}


def stronger(current: Ending, new: Ending) -> Ending:
    """The ending that wins: ``new`` only when it outranks ``current``."""
    return new if _RANK[new.__class__] < _RANK[current.__class__] else current
