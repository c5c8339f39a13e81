"""Control flow: in order, in a loop, on a condition, and out of a loop."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from .._errors import RunError
from .._requests import Flow
from .._session import Session
from ._base import Template

Condition = Callable[[Session], bool]


class _LeaveLoop(Exception):
    """Raised by BreakTemplate, caught by the nearest enclosing LoopTemplate."""


@attrs.define(slots=True, eq=False)
class LinearTemplate(Template):
    """Renders its children in order, once."""

    templates: Sequence[Template] = attrs.field(converter=tuple)

    def children(self) -> tuple[Template, ...]:
        return tuple(self.templates)

    def render(self, session: Session) -> Flow:
        for template in self.templates:
            yield from template.render(session)
        return session


@attrs.define(slots=True, eq=False)
class LoopTemplate(Template):
    """Repeats its children.

    ``exit_condition(session)`` is checked after each complete pass; ``exit_loop_count=N``
    stops after N passes; a ``BreakTemplate`` inside leaves at once.
    """

    templates: Sequence[Template] = attrs.field(converter=tuple)
    exit_condition: Condition | None = attrs.field(default=None, kw_only=True)
    exit_loop_count: int | None = attrs.field(default=None, kw_only=True)

    def __attrs_post_init__(self) -> None:
        if self.exit_loop_count is not None and self.exit_loop_count < 0:
            raise ValueError(f"{self.label()}: exit_loop_count must be >= 0, "
                             f"got {self.exit_loop_count}")

    def children(self) -> tuple[Template, ...]:
        return tuple(self.templates)

    def render(self, session: Session) -> Flow:
        passes = 0
        try:
            while self.exit_loop_count is None or passes < self.exit_loop_count:
                # The last message too, not just the count: a pass may drop messages and add
                # as many (a chat's /undo or /retry), which is progress.
                before, last = len(session.messages), session.last_message
                for template in self.templates:
                    yield from template.render(session)
                passes += 1
                if self.exit_condition is not None:
                    if self.exit_condition(session):
                        break
                elif self.exit_loop_count is None and len(session.messages) == before \
                        and session.last_message is last:
                    raise RunError(
                        f"{self.label()} would loop forever: a whole pass added no message, and "
                        "it has no exit_condition or exit_loop_count"
                    )
        except _LeaveLoop:
            pass
        return session


@attrs.define(slots=True, eq=False)
class IfTemplate(Template):
    """``condition(session)`` picks a branch; with no ``false_template`` nothing happens."""

    condition: Condition
    true_template: Template
    false_template: Template | None = None

    def children(self) -> tuple[Template, ...]:
        if self.false_template is None:
            return (self.true_template,)
        return (self.true_template, self.false_template)

    def render(self, session: Session) -> Flow:
        branch = self.true_template if self.condition(session) else self.false_template
        if branch is not None:
            yield from branch.render(session)
        return session


@attrs.define(slots=True, eq=False)
class BreakTemplate(Template):
    """Leaves the nearest enclosing ``LoopTemplate``, and only that one."""

    def render(self, session: Session) -> Flow:
        raise _LeaveLoop()
        yield  # a generator, like every template
