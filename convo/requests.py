"""What templates yield to the runner (STYLE habit 1: templates are sans-IO generators).

A template's generator yields three kinds of things:

- a ``Message``: the runner appends it to the session (and emits ``MessageAdded``);
- an ``Event``: the runner hands it to ``on_event`` (``TurnEnded`` also lands on
  ``session.turns``);
- a request below: the runner does the I/O and ``send()``s the answer back.

The same generators run under ``Runner.run`` and ``Runner.arun`` and in tests.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

import attrs

from .events import Event
from .messages import Message, ToolCall

if TYPE_CHECKING:
    from .context import ContextWindow
    from .models.base import Model


@attrs.frozen(slots=True)
class AskUser:
    """Ask the user interface; answered with the user's text."""

    instruction: str | None = None
    default: str | None = None


@attrs.frozen(slots=True)
class CallModel:
    """Call a model with the session's messages; answered with one assistant ``Message``.

    ``model=None`` means the runner's model. ``context``: the template's ``ContextWindow``
    (else the runner's applies). ``messages``: send these instead of the session's (the
    runner sets it when a window trims the history). ``purpose``: ``"reply"``, or
    ``"summary"`` for a window's summary call (its text is not streamed to the user).
    """

    model: Model | None = None
    tools: Sequence[Mapping[str, Any]] = ()
    context: ContextWindow | None = attrs.field(default=None, kw_only=True)
    messages: Sequence[Message] | None = attrs.field(default=None, kw_only=True)
    purpose: str = attrs.field(default="reply", kw_only=True)


class Invokable(Protocol):
    """What a tool looks like to the runner."""

    @property
    def is_async(self) -> bool: ...

    @property
    def timeout(self) -> float | None: ...

    def invoke(self, args: dict[str, Any]) -> Any: ...

    async def ainvoke(self, args: dict[str, Any]) -> Any: ...


@attrs.frozen(slots=True)
class Invocation:
    """One validated tool call, ready to run."""

    call: ToolCall
    tool: Invokable
    args: dict[str, Any]


@attrs.frozen(slots=True)
class ToolRun:
    """What running one invocation gave: a value, or the exception it raised."""

    value: Any = None
    error: BaseException | None = None


@attrs.frozen(slots=True)
class RunTools:
    """Run these tools; answered with one ``ToolRun`` per invocation, in the same order.

    The async runner runs async tools concurrently; results keep call order either way.
    """

    invocations: tuple[Invocation, ...]


Request: TypeAlias = AskUser | CallModel | RunTools
Step: TypeAlias = Message | Event | Request
Flow: TypeAlias = Generator[Step, Any, Any]
