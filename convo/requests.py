"""What templates yield to the runner (STYLE habit 1: templates are sans-IO generators).

A template's generator yields three kinds of things:

- a ``Message``: the runner appends it to the session (and emits ``MessageAdded``);
- an ``Event``: the runner hands it to ``on_event`` (``TurnEnded`` also lands on
  ``session.turns``);
- a ``Request`` below: the runner does the I/O and ``send()``s the answer back.

Each request says, in one place, how it is answered: ``handler`` names the method of the
run (``convo.driving.Run``) that answers it live (``a`` + handler under ``arun``), ``pauses``
says that a person answers it (a served conversation waits there), and ``replay`` answers it
from a saved conversation when one is resumed. A new request type is one class here and one
pair of handlers in ``driving.py``.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol, TypeAlias

import attrs

from .approval import Approval
from .events import Event
from .messages import Message, ToolCall
from .tools.base import SavedToolError
from .tools.termination import TERMINATED, TerminateResponse

if TYPE_CHECKING:
    from .context import ContextWindow
    from .models.base import Model

NOTHING: Final = object()
"""What ``Request.replay`` returns when the saved conversation does not answer the request."""


@attrs.define(slots=True)
class Saved:
    """A saved conversation being replayed: its messages, the position reached, and the
    decisions on tool calls that needed approval."""

    messages: tuple[Message, ...]
    approvals: Mapping[str, Approval] = attrs.field(factory=dict)
    at: int = 0

    @property
    def next(self) -> Message | None:
        return self.messages[self.at] if self.at < len(self.messages) else None


class Request:
    """Base class of what a template may ask the runner for."""

    handler: ClassVar[str]
    pauses: ClassVar[bool] = False

    def replay(self, saved: Saved) -> Any:
        """The answer the saved conversation gives, or ``NOTHING``. Only the request is
        answered here: the messages the template then yields are checked one by one."""
        return NOTHING


@attrs.frozen(slots=True)
class AskUser(Request):
    """Ask the user interface; answered with the user's text."""

    handler: ClassVar[str] = "ask_user"
    pauses: ClassVar[bool] = True

    instruction: str | None = None
    default: str | None = None

    def replay(self, saved: Saved) -> Any:
        nxt = saved.next
        return nxt.content if nxt is not None and nxt.role == "user" else NOTHING


@attrs.frozen(slots=True)
class CallModel(Request):
    """Call a model with the session's messages; answered with one assistant ``Message``.

    ``model=None`` means the runner's model; ``messages=None`` the session's (a
    ``SubroutineTemplate`` sends its child session's; a ``ContextWindow`` what it chose).
    ``context``: the template's ``ContextWindow`` (else the runner's applies). ``purpose``:
    ``"reply"``, or ``"summary"`` for a window's summary call (not streamed to the user).
    """

    handler: ClassVar[str] = "call_model"

    model: Model | None = None
    tools: Sequence[Mapping[str, Any]] = ()
    messages: Sequence[Message] | None = None
    context: ContextWindow | None = attrs.field(default=None, kw_only=True)
    purpose: str = attrs.field(default="reply", kw_only=True)

    def replay(self, saved: Saved) -> Any:
        if self.messages is not None:  # a child's call: its own replay answers it
            return NOTHING
        nxt = saved.next
        return nxt if nxt is not None and nxt.role == "assistant" else NOTHING


class Invokable(Protocol):
    """What a tool looks like to the runner."""

    @property
    def is_async(self) -> bool: ...

    @property
    def timeout(self) -> float | None: ...

    @property
    def rerun_on_resume(self) -> bool: ...

    def requires_approval(self, args: dict[str, Any]) -> bool: ...

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
    """What running one invocation gave: a value, the exception it raised, or why it was not
    run (``skipped``: a limit was reached)."""

    value: Any = None
    error: BaseException | None = None
    skipped: str | None = None


@attrs.frozen(slots=True)
class RunTools(Request):
    """Run these tools; answered with one ``ToolRun`` per invocation, in the same order.

    The async runner runs async tools concurrently; results keep call order either way.
    """

    handler: ClassVar[str] = "run_tools"

    invocations: tuple[Invocation, ...]

    def replay(self, saved: Saved) -> Any:
        results: dict[str | None, Message] = {}
        messages = saved.messages
        for i in range(saved.at, len(messages)):  # no copy of the rest: this runs per batch
            if messages[i].role != "tool":
                break
            results[messages[i].tool_call_id] = messages[i]
        if not all(inv.call.id in results for inv in self.invocations):
            return NOTHING
        return [rerun(inv) if inv.tool.rerun_on_resume
                else _saved_run(results[inv.call.id]) for inv in self.invocations]


def _saved_run(message: Message) -> ToolRun:
    # A saved failure stays a failure (it counts against the tool's retries again).
    if message.metadata.get("error"):
        return ToolRun(error=SavedToolError(message.content))
    # A tool that ended the turn (a Ctrl-C cancelled it, say) ends it again, with its status.
    terminated = message.metadata.get(TERMINATED)
    if isinstance(terminated, dict):
        return ToolRun(TerminateResponse.from_saved(message.content, terminated))
    return ToolRun(message.content)


def rerun(invocation: Invocation) -> ToolRun:
    """Run a tool again on resume: a tool marked ``rerun_on_resume`` (convo's termination
    tools) is pure, and what it returns (a TerminateResponse with its status, the end of the
    conversation) is more than its saved text says."""
    try:
        return ToolRun(invocation.tool.invoke(invocation.args))
    except Exception as exc:
        return ToolRun(error=exc)


@attrs.frozen(slots=True)
class Approve(Request):
    """Ask a person to approve these tool calls (in call order); answered with one
    ``Approval`` per call."""

    handler: ClassVar[str] = "approve"
    pauses: ClassVar[bool] = True

    calls: tuple[ToolCall, ...]

    def replay(self, saved: Saved) -> Any:
        if all(call.id in saved.approvals for call in self.calls):
            return [saved.approvals[call.id] for call in self.calls]
        return NOTHING


Step: TypeAlias = Message | Event | Request
Flow: TypeAlias = Generator[Step, Any, Any]
