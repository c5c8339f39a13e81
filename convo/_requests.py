"""What templates yield to the runner (STYLE habit 1: templates are sans-IO generators).

A template's generator yields three kinds of things:

- a ``Message``: the runner appends it to the session (and emits ``MessageAdded``); a
  ``ChildMessage`` is a subroutine's message, appended to the subroutine's own session;
- an ``Event``: the runner hands it to ``on_event`` (``TurnEnded`` also lands on
  ``session.turns``); events only notify, they are never answered;
- a ``Request`` below: the runner has it answered and ``send()``s the answer back.

A ``Request[A]`` is answered with an ``A``: the one driver (``convo._run.driver``) hands it to
an answerer (``convo._run.answerer``: live; ``convo._run.replay``: from a saved conversation),
which dispatches on the request's type. A new kind of request is a class here and a case in
each answerer.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeVar

import attrs

from ._approval import Approval
from ._errors import ConvoError, ReachedEndTemplateException, RunError
from ._messages import Message, ToolCall
from ._parts import Content
from ._session import Session
from .events import Event
from .tools._calls import Invocation, ToolRun
from .tools._toolset import Listed, Toolset

if TYPE_CHECKING:
    from ._context import ContextWindow
    from .guards._base import AnyGuard
    from .models._base import Model

__all__ = ["Approve", "AskUser", "CallModel", "CheckGuards", "ChildMessage", "Flow", "HandOff",
           "Invocation", "ListTools", "Listed", "Request", "RunHooks", "RunTools", "Step",
           "StoreToolRun", "TakeSteered", "ToolRun"]

A = TypeVar("A")


class Request(Generic[A]):
    """Base class of what a template may ask the runner for; answered with an ``A``."""

    __slots__ = ()


@attrs.frozen(slots=True)
class AskUser(Request[Content]):
    """Ask the user interface; answered with the user's text, or parts (text with images or
    files attached). A person answers it: a served conversation waits here."""

    instruction: str | None = None
    default: str | None = None


@attrs.frozen(slots=True)
class TakeSteered(Request[tuple[Message, ...]]):
    """A turn's safe point (API.md §26): before a model call that follows tool results (or a
    restriction), the turn takes the user messages handed to it while it ran (``Runner.steer``,
    a served ``steer``); answered with them, in order (``()``: none). The template adds each
    as an ordinary user message, so the next model call sees it. A replay answers with the
    user messages saved at this point."""


@attrs.frozen(slots=True)
class CallModel(Request[Message]):
    """Call a model with the session's messages; answered with one assistant ``Message``.

    ``model=None`` means the runner's model; ``messages=None`` the session's (a
    ``SubroutineTemplate`` sends its child session's; a ``ContextWindow`` what it chose).
    ``context``: the template's ``ContextWindow`` (else the runner's applies). ``purpose``:
    ``"reply"``, or ``"summary"`` for a window's summary call (not streamed to the user).
    ``guards``: the turn's own guards when the template checks the reply (``CheckGuards``
    follows it; its output guards may hold the streamed text), ``None`` when it does not.
    """

    model: Model | None = None
    tools: Sequence[Mapping[str, Any]] = ()
    messages: Sequence[Message] | None = None
    context: ContextWindow | None = attrs.field(default=None, kw_only=True)
    purpose: str = attrs.field(default="reply", kw_only=True)
    guards: tuple[AnyGuard, ...] | None = attrs.field(default=None, kw_only=True)


@attrs.frozen(slots=True)
class CheckGuards(Request[Any]):
    """Check a value with the run's guards on ``on`` and the turn's own (``guards``); answered
    with ``None`` when nothing changed, else a ``convo.guards._base.Checked``. ``message``: the
    user message or reply checked (input, output); ``value``: a tool call's arguments or a
    tool result's text; ``call``: its ``ToolCall``. ``own_only``: the turn's guards only (a
    turn checking user messages the run's guards checked already; ``value`` is their index).
    A replay answers from what was stored: no guard runs twice for a stored value."""

    on: str
    message: Message | None = None
    value: Any = None
    guards: tuple[AnyGuard, ...] = ()
    call: ToolCall | None = attrs.field(default=None, kw_only=True)
    scope: tuple[str, ...] = attrs.field(default=(), kw_only=True)
    own_only: bool = attrs.field(default=False, kw_only=True)


@attrs.frozen(slots=True)
class RunTools(Request[list[ToolRun]]):
    """Run these tools; answered with one ``ToolRun`` per invocation, in the same order.

    The async runner runs async tools concurrently; results keep call order either way.
    """

    invocations: tuple[Invocation, ...]


@attrs.frozen(slots=True)
class StoreToolRun(RunTools):
    """``RunTools`` for an ``ExecuteToolTemplate(store_as=key)``, whose result goes into
    ``session.state[key]`` and leaves no tool message: a replay answers it from the saved
    state (the tool is not run again); everything else answers it as ``RunTools``."""

    store_as: str = attrs.field(kw_only=True)


@attrs.frozen(slots=True)
class ListTools(Request[list[Listed]]):
    """List the tools of these toolsets (a turn asks at its start); answered with one
    ``Listed`` per toolset, in the same order: its tools, or why they could not be listed.

    Not a step of the conversation: nothing is saved of it, and a replay or a paused served
    conversation has it answered live (a toolset caches its own list)."""

    toolsets: tuple[Toolset, ...]


@attrs.frozen(slots=True)
class Approve(Request[list[Approval]]):
    """Ask a person to approve these tool calls (in call order); answered with one
    ``Approval`` per call. A served conversation waits here.

    ``approvers``: who decides each call (``"user"`` or ``"operator"``, the tool's
    ``approver``), in call order; empty means the user decides every one."""

    calls: tuple[ToolCall, ...]
    approvers: tuple[str, ...] = attrs.field(default=(), kw_only=True)

    def approver(self, index: int) -> str:
        """Who decides ``calls[index]``."""
        return self.approvers[index] if self.approvers else "user"

    @property
    def needs_operator(self) -> bool:
        """Whether an operator must decide some call (a user cannot decide them all)."""
        return "operator" in self.approvers


@attrs.frozen(slots=True)
class HandOff(Request[Message | None]):
    """The conversation is handed to a person (the ``handoff`` tool's ``call``, with its
    ``reason``); answered with the next message said while handed off (the user's, or an
    operator's: an assistant message with ``metadata["author"]``), or ``None`` when the
    person hands it back. ``said``: how many messages this handoff has had so far. The
    template asks again after each message; a served conversation waits here."""

    call: ToolCall
    reason: str | None = None
    said: int = 0


@attrs.frozen(slots=True)
class RunHooks(Request[None]):
    """Run a template's ``before`` or ``after`` hooks on ``session`` (``where`` names them).

    The live answerer runs them (``run()``); a replay answers without running them, since the
    saved state already holds what they changed (hooks are recorded like a tool's result)."""

    hooks: tuple[Callable[[Session], None], ...]
    session: Session = attrs.field(eq=False, repr=False)
    where: str

    def run(self) -> None:
        for hook in self.hooks:
            try:
                hook(self.session)
            except (ConvoError, ReachedEndTemplateException):
                raise
            except Exception as exc:
                name = getattr(hook, "__qualname__", None) or repr(hook)
                raise RunError(f"{self.where} hook {name} failed: {type(exc).__name__}: "
                               f"{exc}") from exc


@attrs.frozen(slots=True)
class ChildMessage:
    """A message a ``SubroutineTemplate``'s child adds to its own ``session``; ``scope`` names
    the subroutines it is inside, outermost first (``MessageAdded.scope``)."""

    message: Message
    session: Session = attrs.field(eq=False, repr=False)
    scope: tuple[str, ...]


Step: TypeAlias = Message | ChildMessage | Event | Request[Any]
Flow: TypeAlias = Generator[Step, Any, Any]
