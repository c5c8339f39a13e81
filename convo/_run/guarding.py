"""Answering ``CheckGuards`` live: the run's guards and the turn's own on one value, the events
of what tripped, and what a streaming front end is shown of the reply they checked.

A reply's reasoning (the readable text of ``metadata["reasoning"]``) is put to the same guards
as its text: it cannot be changed (its provider wants it back as it sent it), so when a guard
trips on it, it is withheld from every front end (never said; retracted when it was shown; left
out of the message's public view, ``convo.guards._marks.public``), marked on the message
(``metadata["guard"]["reasoning_withheld"]``) and kept, as stored, for the provider.

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
from .._parts import text_of
from .._reply import REASONING_KEY, reasoning_text
from .._requests import CallModel, CheckGuards
from ..events import GuardTripped, ReasoningDelta, ReplyRetracted, TextDelta
from ..guards._base import Checked, GuardContext, acheck, check
from ..guards._marks import KEY, REASONING_WITHHELD, applied
from .stack import NOTHING
from .state import RunState


def inline(state: RunState, request: CheckGuards) -> Checked | object | None:
    """``request`` answered here and now when every guard it puts its value to is a plain
    function (the pump's), else ``NOTHING`` (the answerers answer it)."""
    on = request.on
    own = request.guards
    if (on in state.plan.judged_on and not request.own_only) or (
            own and not all(g.inline for g in own if g.on == on)):
        return NOTHING
    return answer(state, request)


def at_call(state: RunState, request: CallModel, reply: Message) -> Message:
    """A model's reply as the run's output guards leave it (the plan's ``reply_guards``: all plain
    functions), checked by the pump as it comes in, for a template that checks its replies
    (``request.guards`` is not ``None``) without output guards of its own (those ask with
    ``CheckGuards``, the run's guards first); a reply without text or reasoning is not
    checked. (Runs for every model call of a guarded run: no call that a reply without
    reasoning, or one without text, does not need.)"""
    own = request.guards
    if own is None or request.purpose != "reply" or (own and any(g.on == "output" for g in own)):
        return reply
    content = reply.content  # (``reply.text``, without the property's call)
    text = content if content.__class__ is str else text_of(content)
    # Its reasoning, checked too: nothing to work out for a reply without (the common case).
    thought = _thought(state, reply) if state.reasoning or REASONING_KEY in reply.metadata \
        else ""
    blank = not text or text.isspace()
    if blank and not thought:
        return reply
    session = state.session
    plan = state.plan
    guards = plan.reply_guards
    assert guards is not None
    # (no context made for checks that read none: the built-ins')
    ctx = GuardContext(session, session.state) if plan.reply_context else None
    checked = None if blank else check(guards, text, ctx)
    withheld = bool(thought) and _tripped(check(guards, thought, ctx))
    if checked is None and not withheld and state.on_event is None:  # passed, nothing held:
        state.held_text = None  # the most common case
        return reply
    kept = _checked(state, CheckGuards("output", reply), checked, withheld)
    return reply if kept is None or kept.message is None else kept.message


def _guards(state: RunState, request: CheckGuards, swap: Callable[[Any], Any] | None = None
            ) -> tuple[list[Any], Any, GuardContext]:
    on = request.on
    guards = [g for g in request.guards if g.on == on] if request.guards else []
    if not request.own_only:
        guards = [*state.plan.on.get(on, ()), *guards]
    if swap is not None:
        guards = [swap(g) for g in guards]
    value = request.message.text if request.message is not None else request.value
    session = state.session
    return guards, value, GuardContext(session, session.state, request.scope, request.call)


def _thought(state: RunState, reply: Message | None) -> str:
    """What a front end would be shown of a reply's reasoning (its items' readable text, or
    what was streamed of it when its items have none)."""
    if reply is None:
        return ""
    return (reasoning_text(reply.metadata) if reply.metadata else "") or "".join(
        state.reasoning)


def _tripped(checked: Checked | None) -> bool:
    return checked is not None and bool(checked.trips)


def answer(state: RunState, request: CheckGuards) -> Checked | None:
    """``request`` answered here and now, blocking."""
    guards, value, ctx = _guards(state, request)
    thought = _thought(state, request.message) if request.on == "output" and guards else ""
    withheld = bool(thought) and _tripped(check(guards, thought, ctx))
    return _checked(state, request, check(guards, value, ctx) if guards else None, withheld)


async def aanswer(state: RunState, request: CheckGuards,
                  swap: Callable[[Any], Any] | None = None) -> Checked | None:
    """``request`` answered on the running loop (async checks and judges awaited there);
    ``swap``: each guard as it is to run (a Temporal workflow's judges call an activity)."""
    guards, value, ctx = _guards(state, request, swap)
    thought = _thought(state, request.message) if request.on == "output" and guards else ""
    withheld = bool(thought) and _tripped(await acheck(guards, thought, ctx))
    return _checked(state, request, await acheck(guards, value, ctx) if guards else None,
                    withheld)


def _checked(state: RunState, request: CheckGuards, checked: Checked | None,
             withheld: bool = False) -> Checked | None:
    """Say what tripped; show (or take back) the streamed reply; the message to keep
    (``withheld``: a guard tripped on its reasoning, marked on it)."""
    if checked is not None:
        if checked.blocked:
            state.guarded = True  # from now on what it blocked is kept from the model
        for trip in checked.trips:
            state.emit(GuardTripped(trip.name, request.on, trip.action, trip.reason))
    if request.on == "output":
        if state.on_event is not None:
            _shown(state, checked, withheld)
        else:  # nobody listens: nothing was held
            state.held_text = None
    message = request.message
    if message is None or (checked is None and not withheld):
        return checked
    if checked is None:  # the text passed, its reasoning did not
        checked, kept = Checked(value=message.text), message
    else:
        kept = applied(message, checked, request.on)
    if withheld:
        metadata = dict(kept.metadata)
        metadata[KEY] = {**(metadata.get(KEY) or {}), REASONING_WITHHELD: True}
        kept = attrs.evolve(kept, metadata=metadata)
    return attrs.evolve(checked, message=kept)


def _shown(state: RunState, checked: Checked | None, withheld: bool) -> None:
    """A held reply is sent once its guards pass (redacted: as one delta), its reasoning first
    unless a guard withheld it (or the reply's text was blocked); a live one that a guard
    changed, or whose shown reasoning it withheld, is retracted (``ReplyRetracted``)."""
    held, state.held_text = state.held_text, None
    reasoning, state.reasoning = state.reasoning, []
    emit = state.on_event
    assert emit is not None
    changed = checked is not None and bool(checked.trips)
    if held is not None:
        if not withheld and not (checked is not None and checked.blocked):
            for text in reasoning:
                emit(ReasoningDelta(text))
        if not changed:
            for text in held:
                emit(TextDelta(text))
        elif checked is not None and not checked.blocked and held:
            emit(TextDelta(checked.value))
    elif (changed and state.partial) or (withheld and reasoning):
        emit(ReplyRetracted(len(state.session.messages)))
