"""What a replay answers a ``CheckGuards`` with: the result stored with the value it checked.

A guard's verdict is stored with the message it judged (``metadata["guard"]``, API.md §27), so
a resumed or rebuilt run reads it back here instead of running the guard again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._messages import Message
from .._requests import CheckGuards
from ..guards._base import BLOCKED, Checked, Trip
from ..guards._marks import mark_of


def recorded_input(messages: Sequence[Message], at: int, request: CheckGuards,
                   guards: Sequence[Any]) -> Checked | None:
    """The stored user message, marks and all (and the guard's stored reply to it); a turn
    checking a message already in the session names its index (``own_only``)."""
    if request.own_only and isinstance(request.value, int):
        at = request.value
    if at >= len(messages) or messages[at].role != "user":
        return None
    saved = messages[at]
    mark = mark_of(saved)
    if mark is None:
        return None
    reply = None
    if mark.get("action") in BLOCKED:
        reply = next((m.text for m in messages[at + 1:] if m.role == "assistant"), None)
    return Checked(value=saved.text, mark=mark, reply=reply, message=saved)


def recorded_call(messages: Sequence[Message], at: int, request: CheckGuards
                  ) -> Checked | None:
    """A tool call a guard blocked is blocked again (its stored tool message says so); a tool
    result is replayed as stored. (A call is checked before its reply is stored: ``at`` is
    the stored reply's place, its tool messages follow it.)"""
    if request.on != "tool_call" or request.call is None:
        return None
    if at < len(messages) and messages[at].role == "assistant":
        at += 1
    for i in range(at, len(messages)):
        message = messages[i]
        if message.role != "tool":
            break
        if message.tool_call_id == request.call.id:
            mark = mark_of(message)
            if mark is None or mark.get("action") not in BLOCKED or "original" in mark:
                return None
            trip = Trip(str(mark.get("name")), str(mark.get("action")), str(mark.get("reason")))
            return Checked(value=request.value, mark=trip.mark(), trips=())
    return None
