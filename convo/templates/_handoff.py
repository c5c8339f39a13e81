"""A turn handed to a person (``HandoffTool``): what it yields until it is handed back."""

from __future__ import annotations

from typing import Any

from .._errors import RunError
from .._messages import Message, ToolCall
from .._requests import Flow, HandOff
from .._session import Session
from ..tools._handoff import HANDOFFS


def handed_off(session: Session, call: ToolCall, reason: str | None) -> Flow:
    """Ask ``HandOff`` until the person hands back, yielding each message said meanwhile (so
    it is in the history, recorded and stored as it is said); then note in
    ``session.internal`` how many there were (a replay reads it to know the handoff ended)."""
    said = 0
    while True:
        message: Any = yield HandOff(call, reason, said)
        if message is None:
            break
        if not isinstance(message, Message) or message.role not in ("user", "assistant") \
                or message.tool_calls:
            raise RunError(f"a handoff is answered with a user or assistant Message without "
                           f"tool calls, or None to hand back; got {message!r}")
        yield message
        said += 1
    record = session.internal.get(HANDOFFS)
    session.internal[HANDOFFS] = {**(record if isinstance(record, dict) else {}),
                                  call.id: said}
    return said
