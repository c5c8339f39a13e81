"""States: a conversation that moves between templates, each with its own prompt and tools.

``StateMachineTemplate`` renders the start state's template; a ``Transition`` tool called by
the model, or a ``GotoTemplate`` rendered by code, cuts the current state short (its loops
included) and the machine renders the target's template. A state that ends without moving
ends the machine, and the tree goes on. See docs/states.md.

The current state is kept in ``session.internal[STATE_KEY]`` (``"machine"``; convo._internal),
apart from the state a client or a tool writes, so nobody but the machine moves it; Jinja sees
it as ``{{ _convo_state }}``, conditions as ``current_state(session)``, and transcripts record
it. A resumed conversation replays its saved moves and so goes on in the state it was in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import attrs

from .._errors import DefinitionError, RunError
from .._internal import MACHINE
from .._requests import Flow
from .._session import Session
from ..events import StateEntered
from ..tools._transition import Move, Moving
from ._base import Template

STATE_KEY: Final = MACHINE  # in session.internal
_ABSENT: Final = object()


def current_state(session: Session) -> str | None:
    """The state the innermost running ``StateMachineTemplate`` is in (``None``: no machine
    runs)."""
    name = session.internal.get(STATE_KEY)
    return name if isinstance(name, str) else None


def _check_states(states: Mapping[str, Template]) -> dict[str, Template]:
    if not isinstance(states, Mapping):
        raise DefinitionError(f"StateMachineTemplate: states must be a mapping of state names "
                              f"to templates, got {type(states).__name__}")
    checked: dict[str, Template] = {}
    for name, template in states.items():
        if not isinstance(name, str) or not name:
            raise DefinitionError(f"StateMachineTemplate: state names must be non-empty "
                                  f"strings, got {name!r}")
        if not isinstance(template, Template):
            raise DefinitionError(f"StateMachineTemplate: states[{name!r}] is "
                                  f"{type(template).__name__} {template!r}, expected a Template")
        checked[name] = template
    if not checked:
        raise DefinitionError("StateMachineTemplate: states is empty; give at least one state")
    return checked


@attrs.define(slots=True, eq=False)
class StateMachineTemplate(Template):
    """Renders ``states[start]``, then each state a transition names, until a state ends
    without one. More than ``max_transitions`` moves end the run with status ``error``."""

    states: Mapping[str, Template] = attrs.field(converter=_check_states)
    start: str = attrs.field(kw_only=True)
    max_transitions: int = attrs.field(default=100, kw_only=True)

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.max_transitions, int) or self.max_transitions < 0:
            raise DefinitionError(f"{self.label()}: max_transitions must be an int >= 0, "
                                  f"got {self.max_transitions!r}")

    def children(self) -> tuple[Template, ...]:
        return tuple(self.states.values())

    def render(self, session: Session) -> Flow:
        outer = session.internal.get(STATE_KEY, _ABSENT)
        current, previous, moves = self.start, None, 0
        while True:
            session.internal[STATE_KEY] = current
            yield StateEntered(current, previous)
            try:
                yield from self.states[current].render(session)
            except Moving as moving:
                moves += 1
                self._check_move(moving.move, current, moves)
                previous, current = current, moving.move.to
                continue
            break
        # The machine is over: an enclosing machine's state is current again.
        if outer is _ABSENT:
            session.internal.pop(STATE_KEY, None)
        else:
            session.internal[STATE_KEY] = outer
        return session

    def _check_move(self, move: Move, current: str, moves: int) -> None:
        if move.to not in self.states:
            raise RunError(f"{self.label()}: {move.by or 'a transition'} in state {current!r} "
                           f"moves to unknown state {move.to!r}; states: "
                           f"{', '.join(map(repr, self.states))}")
        if moves > self.max_transitions:
            raise RunError(f"{self.label()}: more than max_transitions={self.max_transitions} "
                           f"transitions (move {moves}: {current!r} -> {move.to!r} by "
                           f"{move.by or 'a transition'}); raise max_transitions if the "
                           "conversation really needs more")


@attrs.define(slots=True, eq=False)
class GotoTemplate(Template):
    """Moves the enclosing ``StateMachineTemplate`` to state ``to``, from code."""

    to: str

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.to, str) or not self.to:
            raise DefinitionError(f"GotoTemplate: `to` must be a state name (a non-empty str), "
                                  f"got {self.to!r}")

    def label(self) -> str:
        return Template.label(self) if self.template_id else f"GotoTemplate({self.to!r})"

    def render(self, session: Session) -> Flow:
        raise Moving(Move(self.to, by=self.label()))
        yield  # a generator, like every template

