"""ToolContext: what a tool that asks for it sees of the conversation it runs in, and the record
of what its tools changed in ``state`` (``STATE_UNDO``), kept with their tool messages so that a
branch (``Runner.branch``) knows the state as it was before them."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import attrs

if TYPE_CHECKING:
    from ..events import Event
    from ..messages import ToolCall
    from ..session import Session


@attrs.define(slots=True, eq=False)
class ToolContext:
    """Given to a tool whose first parameter is typed ``ToolContext`` (never shown to the model).

    ``state`` is ``session.state``: what a tool writes there is recorded in transcripts and
    restored on resume, so a tool never needs a global. ``emit(event)`` hands an ``Event`` to
    the runner's ``on_event`` (delivered when the tool's batch of calls has run, in call
    order, before the tool messages). ``retry`` counts this tool's failed calls in a row.
    """

    session: Session
    call: ToolCall
    retry: int = 0
    events: list[Event] = attrs.field(factory=list, repr=False)

    @property
    def state(self) -> dict[str, Any]:
        return self.session.state

    @property
    def call_id(self) -> str:
        return self.call.id

    @property
    def tool_name(self) -> str:
        return self.call.name

    def emit(self, event: Event) -> None:
        from ..events import Event

        if not isinstance(event, Event):
            raise TypeError(f"ToolContext.emit takes an Event (subclass convo.Event), got "
                            f"{type(event).__name__} {event!r}")
        self.events.append(event)


STATE_UNDO: Final = "state_undo"
"""The metadata key of a tool message that records what its batch's tools changed in
``session.state``, as what undoes it: ``{"set": {key: value before}, "delete": [keys added]}``
(on the batch's first tool message of a tool that takes a ``ToolContext``)."""


def before_tools(state: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``state`` as it is before a batch's tools run (deep: a tool may change a list
    in place)."""
    return copy.deepcopy(dict(state))


def state_undo(was: Mapping[str, Any], now: Mapping[str, Any]) -> dict[str, Any] | None:
    """What undoes the change from ``was`` to ``now`` (``None``: nothing changed)."""
    changed = {key: value for key, value in was.items() if key not in now or now[key] != value}
    added = [key for key in now if key not in was]
    if not changed and not added:
        return None
    return {"set": copy.deepcopy(changed), "delete": added}


def undo_state(state: dict[str, Any], undo: Any) -> None:
    """Apply one ``STATE_UNDO`` record to ``state`` (a malformed one changes nothing)."""
    if not isinstance(undo, dict):
        return
    restore, added = undo.get("set"), undo.get("delete")
    for key in added if isinstance(added, list) else ():
        if isinstance(key, str):
            state.pop(key, None)
    if isinstance(restore, dict):
        state.update(copy.deepcopy(restore))
