"""ExecuteToolTemplate: run a tool from the template itself, no model involved.

The call goes through the same owner as the agent turn's (``convo.tools._calls``: a
``RunTools`` request, its timeout, ``outcome`` for its text), so it is counted by the limits,
recorded and replayed like any tool call. A ``SubroutineTool`` runs its template inline.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from .._errors import DefinitionError, ReachedEndTemplateException, RunError
from .._messages import Message, ToolCall
from .._parts import shown
from .._requests import Flow, Invocation, RunTools, StoreToolRun
from .._session import Session
from ..tools._base import Bound, Tool, ToolResult, to_text
from ..tools._calls import ToolRun, outcome, tool_message
from ..tools._context import ToolContext
from ..tools._endings import EndConversation
from ._base import Template
from ._subroutine_tool import SubroutineTool, delegate

Arguments = Mapping[str, Any] | Callable[[Session], Mapping[str, Any]] | None


@attrs.define(slots=True, eq=False)
class ExecuteToolTemplate(Template):
    """Runs ``tool`` once, with ``arguments`` (a dict, a callable ``(session) -> dict``, or
    ``None``: the tool's arguments taken from ``session.state`` by name).

    Without ``store_as`` it appends an assistant message with one tool call and the tool
    message answering it; with ``store_as="key"`` the result (a string, or JSON values) goes
    into ``session.state["key"]`` and no message is added. Invalid arguments or a failing
    tool end the run with status ``error``, naming the template and the tool.
    """

    tool: Tool
    arguments: Arguments = attrs.field(default=None, kw_only=True)
    store_as: str | None = attrs.field(default=None, kw_only=True)

    def __attrs_post_init__(self) -> None:
        where = self.label()
        if not isinstance(self.tool, Tool):
            raise DefinitionError(f"{where}: tool is {type(self.tool).__name__} "
                                  f"{self.tool!r}, expected a Tool (a @tool function, say)")
        if not (self.arguments is None or isinstance(self.arguments, Mapping)
                or callable(self.arguments)):
            raise DefinitionError(f"{where}: arguments must be a dict, a callable (session) "
                                  f"-> dict or None, got {self.arguments!r}")
        if self.store_as is not None and (not isinstance(self.store_as, str)
                                          or not self.store_as):
            raise DefinitionError(f"{where}: store_as must be a non-empty str or None, "
                                  f"got {self.store_as!r}")

    def children(self) -> tuple[Template, ...]:
        return (self.tool.template,) if isinstance(self.tool, SubroutineTool) else ()

    def label(self) -> str:
        if self.template_id:
            return super().label()
        return f"ExecuteToolTemplate({getattr(self.tool, 'name', '?')})"

    def render(self, session: Session) -> Flow:
        tool, where = self.tool, self.label()
        call = ToolCall(f"call_{tool.name}_{len(session.messages)}", tool.name,
                        self._arguments(session, where))
        try:
            args = tool.arguments_of(call)
        except ValueError as exc:  # ToolArgumentError
            raise RunError(f"{where}: invalid arguments for tool {tool.name!r}: {exc}") from None
        context = ToolContext(session, call) if tool.takes_context else None
        invocation = Invocation(call, tool if context is None else Bound(tool, context), args)
        if self.store_as is None:
            yield Message("assistant", "", tool_calls=[call])
        if isinstance(tool, SubroutineTool):
            run: ToolRun = yield from delegate(session, invocation)
        else:
            request = RunTools((invocation,)) if self.store_as is None else \
                StoreToolRun((invocation,), store_as=self.store_as)
            [run] = yield request
        if context is not None:
            yield from context.events
        content, error, ending, metadata = outcome(invocation, run)
        if self.store_as is None:
            yield tool_message(call, content, error=error, metadata=metadata)
        elif not error:
            session.state[self.store_as] = _stored(run.value)
        if error and run.skipped is None:  # a skipped call: a limit ends the run next
            raise RunError(f"{where}: {shown(content).removeprefix('Error: ')}")
        if isinstance(ending, EndConversation):  # no turn to end: only the conversation
            raise ReachedEndTemplateException(ending.farewell)
        return session

    def _arguments(self, session: Session, where: str) -> dict[str, Any]:
        given, state = self.arguments, session.state
        if given is None:
            args: Any = {name: state[name] for name in self.tool.arguments if name in state}
        else:
            args = given(session) if callable(given) else given
        if not isinstance(args, Mapping):
            raise RunError(f"{where}: arguments(session) must return a dict, got "
                           f"{type(args).__name__} {args!r}")
        try:
            return dict(json.loads(json.dumps(dict(args))))  # what a model's call would carry
        except (TypeError, ValueError) as exc:
            raise RunError(f"{where}: the arguments for tool {self.tool.name!r} must be JSON "
                           f"values: {exc}") from None


def _stored(value: Any) -> Any:
    """A result as JSON values (what ``session.state`` holds, and a transcript restores)."""
    if isinstance(value, ToolResult):
        value = value.content
    return value if isinstance(value, str) else json.loads(to_text(value))
