"""ToolContext: what a tool that asks for it sees of the conversation it runs in."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from .._messages import ToolCall
    from .._session import Session
    from ..events import Event


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
