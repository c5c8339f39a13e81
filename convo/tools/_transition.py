"""``Transition``: the tool a model calls to move a ``StateMachineTemplate`` to another state.

Calling it returns a ``Move``; the ``ToolingTemplate`` that ran it ends its turn and raises
``Moving``, which the nearest enclosing machine catches (see docs/states.md). The tool is pure:
a resumed conversation runs it again to replay the move.
"""

from __future__ import annotations

import re
from typing import Any, Final

import attrs

from .._errors import DefinitionError, RunError
from ._base import Tool, ToolArgument

_TOOL_NAME: Final = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@attrs.frozen(slots=True)
class Move:
    """A request to move to state ``to``, made by ``by`` (a tool name or a template label)."""

    to: str
    reason: str | None = None
    by: str | None = None

    @property
    def text(self) -> str:
        """The transition tool's message in the history."""
        said = f" Reason: {self.reason}" if self.reason else ""
        return f"Moving to state {self.to!r}.{said}"


class Moving(RunError):
    """The control signal of a move, caught by the nearest enclosing ``StateMachineTemplate``.

    Only when there is none (a tree that skipped validation) does it reach the runner, and
    then its message says so: the run ends with status ``error``.
    """

    def __init__(self, move: Move) -> None:
        super().__init__(f"{move.by or 'a transition'} moved to state {move.to!r} outside "
                         "any StateMachineTemplate")
        self.move = move


class Transition(Tool):
    """A tool the model calls to move to state ``to`` (default name ``go_to_<to>``).

    ``description`` tells the model when to move; the optional ``reason`` argument lets it say
    why (it is kept in the tool's message).
    """

    arguments = {  # noqa: RUF012
        "reason": ToolArgument("reason", "Why you are moving on (optional)", str,
                               required=False),
    }
    #: Pure: a resumed conversation runs it again, which replays the move.
    rerun_on_resume = True

    def __init__(self, to: str, description: str, *, name: str | None = None) -> None:
        if not isinstance(to, str) or not to:
            raise DefinitionError(f"Transition: `to` must be a state name (a non-empty str), "
                                  f"got {to!r}")
        tool_name = f"go_to_{to}" if name is None else name
        if not isinstance(tool_name, str) or not _TOOL_NAME.match(tool_name):
            hint = " (pass name=... with letters, digits, _ or -)" if name is None else ""
            raise DefinitionError(f"Transition to {to!r}: the tool name {tool_name!r} is not a "
                                  f"valid tool name{hint}")
        self.to = to
        self.name = tool_name
        self.description = description

    def _execute(self, args: dict[str, Any]) -> Move:
        return Move(self.to, args.get("reason") or None, self.name)

    def __repr__(self) -> str:
        return f"<Transition {self.name!r} to {self.to!r}>"
