"""SubroutineTool: a whole template offered to the model as one tool.

The model calls ``research(input="…")``; the call runs the template on a session of its own,
exactly as a ``SubroutineTemplate`` runs its child (``child_run``: ``SubroutineStarted`` /
``SubroutineEnded`` frame it, its messages go up as ``ChildMessage``s, its record lands on
``session.subroutines``, a replay follows it), and the tool message is the child's reply.

A template cannot run inside a blocking tool function (its model calls, its tools, a person
approving a call inside it are all requests the runner answers), so a ``SubroutineTool`` is
never invoked like other tools: the agent turn (``ToolingTemplate``) and
``ExecuteToolTemplate`` see it and run ``delegate`` inline in their own flow instead of
putting it in a ``RunTools`` request. See docs/tools.md.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .._errors import DefinitionError
from .._messages import Message
from .._requests import Flow, Invocation
from .._session import Session
from ..tools._base import Tool, ToolArgument, checked_approver
from ..tools._calls import ToolRun
from ._base import Template
from ._subroutine import _check_inherit, _check_keep, child_run, inherited, kept

if TYPE_CHECKING:
    from ..models._base import Model
    from ..tools._base import NeedsApproval

ARGUMENTS = {
    "input": ToolArgument("input", "The request for this tool, in plain words.", str),
    "system_message": ToolArgument(
        "system_message", "Optional instructions for how to handle the request.", str,
        required=False),
}


class SubroutineTool(Tool):
    """``template`` as a tool with arguments ``input`` and optional ``system_message``.

    A call runs ``template`` on its own session: ``inherit`` of the parent's messages
    (``"none"``, ``"system"``, ``"all"`` or the last N), then ``system_message`` as a system
    message if given, then ``input`` as a user message. The tool message is the child's last
    assistant message's text (``keep="last"``), the text of every message it added after the
    input (``"all"``, one per paragraph) or empty (``"none"``). ``model``: the child's model
    (default: the runner's). Ending the conversation inside the child ends the child only.
    """

    arguments = ARGUMENTS

    def __init__(self, template: Template, *, name: str, description: str,
                 inherit: str | int = "none", keep: str = "last", model: Model | None = None,
                 needs_approval: NeedsApproval = False, approver: str = "user") -> None:
        super().__init__(needs_approval=needs_approval,
                         approver=checked_approver(name, approver))
        if not isinstance(template, Template):
            raise DefinitionError(f"SubroutineTool {name!r}: template is "
                                  f"{type(template).__name__} {template!r}, expected a "
                                  "Template")
        if not isinstance(name, str) or not name:
            raise DefinitionError(f"SubroutineTool: name must be a non-empty str, got {name!r}")
        try:  # the checks of SubroutineTemplate, with this tool named
            _check_inherit(self, None, inherit)  # type: ignore[arg-type]
            _check_keep(self, None, keep)  # type: ignore[arg-type]
        except DefinitionError as exc:
            raise DefinitionError(str(exc).replace("SubroutineTemplate",
                                                   f"SubroutineTool {name!r}")) from None
        self.template = template
        self.name = name
        self.description = description
        self.inherit = inherit
        self.keep = keep
        self.model = model

    @property
    def label(self) -> str:
        """The name of its runs (``SubroutineRun.label``, ``MessageAdded.scope``)."""
        return f"SubroutineTool({self.name})"

    def _execute(self, args: dict[str, Any]) -> Any:
        raise TypeError(f"SubroutineTool {self.name!r} runs a template: it is called by a "
                        "ToolingTemplate or an ExecuteToolTemplate, not invoked as a function")


def delegate(session: Session, invocation: Invocation) -> Flow:
    """Run one call of a ``SubroutineTool`` inline; returns its ``ToolRun`` (the reply's
    text). A failure of the child (a model error, say) is a failure of the run."""
    started = time.time_ns()
    tool = invocation.tool
    assert isinstance(tool, SubroutineTool)
    args = invocation.args
    start = inherited(_answered(session.messages), tool.inherit)
    opening = [Message("system", args["system_message"])] if args.get("system_message") \
        else []
    opening.append(Message("user", args["input"]))
    child = yield from child_run(tool.label, tool.template, session, start, tool.model, opening)
    added = kept(child.messages[len(start) + len(opening):], tool.keep)
    return ToolRun("\n\n".join(m.text for m in added if m.text), started_ns=started,
                   ended_ns=time.time_ns())


def _answered(messages: list[Message]) -> list[Message]:
    """The parent's messages without the assistant message whose calls are being answered
    (the child would start with calls it cannot answer)."""
    end = len(messages)
    while end and messages[end - 1].role == "tool":
        end -= 1
    if end and messages[end - 1].role == "assistant" and messages[end - 1].tool_calls:
        return messages[:end - 1]
    return messages
