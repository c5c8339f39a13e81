"""Answering ``CheckGuards`` live: the run's guards and the turn's own on one value, the events
of what tripped, and what a streaming front end is shown of the reply they checked.

Written once for the two places that answer a check live: the pump (``convo._run.driver``),
which answers a check whose guards are all plain functions inside itself (``inline``: no trip
through the answerers, no ``await``), and the live answerer (``convo._run.answerer``), which
answers the rest (a ``ModelGuard``'s judge, an ``async def`` check), blocking or on the loop. A
replay answers before either, from what was stored (``convo._run.recorded``): no guard runs
twice for a stored value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from .._messages import Message
from .._requests import CallModel, CheckGuards
from ..events import GuardTripped, ReplyRetracted, TextDelta
from ..guards._base import Checked, GuardContext, acheck, check
from ..guards._marks import applied
from .stack import NOTHING
from .state import RunState


def inline(state: RunState, request: CheckGuards) -> Checked | object | None:
    """``request`` answered here and now when every guard it puts its value to is a plain
    function (the pump's), else ``NOTHING`` (the answerers answer it)."""
    on = request.on
    own = request.guards
    if (on in state.judged_on and not request.own_only) or (
            own and not all(g.inline for g in own if g.on == on)):
        return NOTHING
    return answer(state, request)


def at_call(state: RunState, request: CallModel, reply: Message) -> Message:
    """A model's reply as the run's output guards leave it (``RunState.reply_guards``: all plain
    functions), checked by the pump as it comes in, for a template that checks its replies
    (``request.guards`` is not ``None``) without output guards of its own (those ask with
    ``CheckGuards``, the run's guards first); a reply without text is not checked."""
    own = request.guards
    if own is None or request.purpose != "reply" or (own and any(g.on == "output" for g in own)):
        return reply
    text = reply.text
    if not text.strip():
        return reply
    session = state.session
    assert state.reply_guards is not None
    checked = check(state.reply_guards, text, GuardContext(session, session.state))
    if checked is None and state.on_event is None:  # passed, and nothing was held: the most
        state.held_text = None
        return reply
    kept = _checked(state, CheckGuards("output", reply), checked)
    return reply if kept is None or kept.message is None else kept.message


def _guards(state: RunState, request: CheckGuards, swap: Callable[[Any], Any] | None = None
            ) -> tuple[list[Any], Any, GuardContext]:
    on = request.on
    guards = [g for g in request.guards if g.on == on] if request.guards else []
    if not request.own_only:
        guards = [*state.guards_on.get(on, ()), *guards]
    if swap is not None:
        guards = [swap(g) for g in guards]
    value = request.message.text if request.message is not None else request.value
    session = state.session
    return guards, value, GuardContext(session, session.state, request.scope, request.call)


def answer(state: RunState, request: CheckGuards) -> Checked | None:
    """``request`` answered here and now, blocking."""
    guards, value, ctx = _guards(state, request)
    return _checked(state, request, check(guards, value, ctx) if guards else None)


async def aanswer(state: RunState, request: CheckGuards,
                  swap: Callable[[Any], Any] | None = None) -> Checked | None:
    """``request`` answered on the running loop (async checks and judges awaited there);
    ``swap``: each guard as it is to run (a Temporal workflow's judges call an activity)."""
    guards, value, ctx = _guards(state, request, swap)
    return _checked(state, request, await acheck(guards, value, ctx) if guards else None)


def _checked(state: RunState, request: CheckGuards, checked: Checked | None
             ) -> Checked | None:
    """Say what tripped; show (or take back) the streamed reply; the message to keep."""
    if checked is not None:
        if checked.blocked:
            state.guarded = True  # from now on what it blocked is kept from the model
        for trip in checked.trips:
            state.emit(GuardTripped(trip.name, request.on, trip.action, trip.reason))
    if request.on == "output":
        if state.on_event is not None:
            _shown(state, checked)
        else:  # nobody listens: nothing was held
            state.held_text = None
    if checked is None or request.message is None:
        return checked
    return attrs.evolve(checked, message=applied(request.message, checked, request.on))


def _shown(state: RunState, checked: Checked | None) -> None:
    """A held reply is sent once its guards pass (redacted: as one delta); a live one that a
    guard changed is retracted (``ReplyRetracted``)."""
    held, state.held_text = state.held_text, None
    emit = state.on_event
    assert emit is not None
    changed = checked is not None and bool(checked.trips)
    if held is not None:
        if not changed:
            for text in held:
                emit(TextDelta(text))
        elif checked is not None and not checked.blocked and held:
            emit(TextDelta(checked.value))
    elif changed and state.partial:
        emit(ReplyRetracted(len(state.session.messages)))
