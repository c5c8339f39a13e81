"""The steps of a turn that guards decide (API.md §27): a template asks for its values to be
checked (``CheckGuards``) and acts on what the guards made of them, here, once for every
template that calls a model.

- ``checked_input``: a user message, before it is stored (the run's input guards);
- ``answered_input``: at a turn's start, the turn's own input guards on the user messages
  since the previous model turn, and whether a guard already answered them (the turn is over);
- ``checked_reply``: a model's reply, before it is stored or shown (output guards);
- ``guard_reply`` / ``blocked_reply``: a turn a guard ended (``terminated_by == "guard"``).

Each is asked for only when ``asks`` says a guard may look (the run's, read from the session,
or the turn's own): a run without guards makes no request and no step for them. A model's
reply is asked for only when ``checks_reply`` says so: a run whose output guards are all
plain functions checks a reply where it comes in (the pump), without a request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from .._messages import Message
from .._requests import CheckGuards, Flow
from .._session import RunStatus, Session, TurnResult
from ..events import TurnEnded
from ..guards._base import AT_CALL, AnyGuard, Checked, GuardEnded
from ..guards._marks import KEY, blocked, mark_of, unsent

GUARD = "guard"  # TurnResult.terminated_by of a turn a guard ended
NO_GUARDS: Final = frozenset[str]()  # what a session says of a run without guards


def own(guards: Sequence[AnyGuard], on: str) -> tuple[AnyGuard, ...]:
    return tuple(g for g in guards if g.on == on)


def asks(session: Session, on: str, guards: Sequence[AnyGuard] = ()) -> bool:
    """Whether a value on ``on`` is put to the guards: the turn has guards of its own, or the
    run's guards look there (or the session does not say: a flow pumped by hand)."""
    kinds = session._guards_on
    return kinds is None or on in kinds or bool(guards)


def checks_reply(session: Session, guards: Sequence[AnyGuard]) -> bool:
    """Whether a template puts a model's reply to the output guards (``checked_reply``): as
    ``asks``, except that the run's output guards are checked by the run where the reply
    comes in when the session says so (``AT_CALL``): then only a turn's own output guards
    are asked for (the run's go with them, first)."""
    kinds = session._guards_on
    if kinds is not None and AT_CALL in kinds:
        return bool(guards) and any(g.on == "output" for g in guards)
    return kinds is None or "output" in kinds or bool(guards)


def trip_mark(mark: Mapping[str, Any] | None) -> dict[str, Any]:
    """``{"name", "action", "reason"}`` of a mark (no verdicts, no original)."""
    mark = mark or {}
    return {k: mark[k] for k in ("name", "action", "reason") if k in mark}


def ended(reply: str, mark: Mapping[str, Any] | None, **fields: Any) -> Flow:
    """End the turn a guard decided: status ``completed`` (block) or ``guarded`` (end), then
    for ``end`` the run (``GuardEnded``)."""
    ends = (mark or {}).get("action") == "end"
    status = RunStatus.GUARDED if ends else RunStatus.COMPLETED
    yield TurnEnded(TurnResult(status=status, response=reply, terminated_by=GUARD,
                               note=(mark or {}).get("reason"), done=True, **fields))
    if ends:
        raise GuardEnded(reply)


def guard_reply(checked: Checked) -> Flow:
    """A blocked user message's answer: the guard's message as the assistant's reply, then
    the turn's end."""
    reply = checked.reply or ""
    mark = trip_mark(checked.mark)
    yield Message("assistant", reply, metadata={KEY: mark})
    yield from ended(reply, mark)


def checked_input(message: Message) -> Flow:
    """``message`` as the run's input guards leave it (returns it; a blocked one is answered
    by the guard's reply, and the turn ends)."""
    checked: Checked | None = yield CheckGuards("input", message)
    if checked is None or checked.message is None:
        yield message
        return message
    yield checked.message
    if checked.blocked:
        yield from guard_reply(checked)
    return checked.message


def answered_input(session: Session, guards: Sequence[AnyGuard]) -> Flow:
    """At a turn's start: its own input guards on the user messages since the previous model
    turn (what they redact or mark replaces the stored message); returns whether the turn is
    over (a guard answered the last user message)."""
    messages = session.messages
    if guards:
        start = len(messages)
        while start > 0 and messages[start - 1].role == "user":
            start -= 1
        for i in range(start, len(messages)):
            if blocked(messages[i]):
                continue  # a guard blocked it already
            checked: Checked | None = yield CheckGuards("input", messages[i], i, tuple(guards),
                                                        own_only=True)
            if checked is None or checked.message is None:
                continue
            messages[i] = checked.message
            if checked.blocked:
                yield from guard_reply(checked)
                return True
    return bool(messages) and messages[-1].role == "assistant" and unsent(messages[-1])


def checked_reply(reply: Message, guards: Sequence[AnyGuard]) -> Flow:
    """``reply`` as the output guards leave it (returns it), before it is stored or shown."""
    if not reply.text.strip():
        return reply
    checked: Checked | None = yield CheckGuards("output", reply, None, tuple(guards))
    return reply if checked is None or checked.message is None else checked.message


def blocked_reply(reply: Message, **fields: Any) -> Flow:
    """After a reply a guard blocked (already yielded): each of its calls is ``Blocked``, and
    the turn ends."""
    from ..tools._calls import tool_message

    mark = trip_mark(mark_of(reply))
    for call in reply.tool_calls:
        yield tool_message(call, f"Blocked: {mark.get('reason')}", metadata={KEY: mark})
    yield from ended(reply.text, mark, **fields)
