"""What a guard's verdict makes of a message: the marked, redacted or replaced message, and
which marked messages are never sent to a model.

``metadata["guard"]`` (API.md §27): ``{"name", "action", "reason"}`` on a message a guard
blocked or redacted (``"original"`` too on the replacement of a blocked reply or tool result,
kept only in transcripts and stores), and ``"verdicts"`` (a ``ModelGuard``'s, by name) on a
message a model judged; ``"withheld"`` on a reply whose calls a ``tool_call`` guard blocked;
``"reasoning_withheld"`` on a reply whose reasoning an output guard tripped on (its
``metadata["reasoning"]`` is kept for its provider, never shown: ``public``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from .._messages import Message
from .._parts import Part, Text
from .._reply import REASONING_KEY
from ._base import BLOCKED, Checked

KEY: Final = "guard"
# On a reply: the ids of its calls a ``tool_call`` guard blocked, whose arguments are withheld
# (stored, shown and sent on as ``{}``); a replay asks for their stored verdicts by id.
WITHHELD: Final = "withheld"
# On a reply: an output guard tripped on its reasoning, which no front end is shown.
REASONING_WITHHELD: Final = "reasoning_withheld"
_KEPT: Final = ("usage", "finish_reason")  # what a replaced reply keeps of the model's words


def with_text(content: str | tuple[Part, ...], text: str) -> str | tuple[Part, ...]:
    """``content`` with its text replaced by ``text`` (a parts message keeps its other parts;
    its text parts become one)."""
    if isinstance(content, str):
        return text
    rest = [part for part in content if not isinstance(part, Text)]
    return (Text(text), *rest)


def applied(message: Message, checked: Checked, on: str) -> Message:
    """The message to keep for ``message`` (a user message or a reply) after ``checked``."""
    mark = dict(checked.mark or {})
    metadata = dict(message.metadata)
    if on == "output" and checked.blocked:
        kept = {k: v for k, v in metadata.items() if k in _KEPT}
        kept[KEY] = {**mark, "original": message.text}
        return Message("assistant", checked.reply or "", tool_calls=message.tool_calls,
                       metadata=kept)
    metadata[KEY] = mark
    content = message.content
    if mark.get("action") == "redact" or (not checked.blocked and checked.value != message.text
                                          and isinstance(checked.value, str)):
        content = with_text(content, checked.value)
    return Message(message.role, content, tool_calls=message.tool_calls,
                   tool_call_id=message.tool_call_id, name=message.name, metadata=metadata)


def mark_of(message: Message) -> Mapping[str, Any] | None:
    """The message's ``metadata["guard"]``, if a guard marked it."""
    mark = message.metadata.get(KEY)
    return mark if isinstance(mark, Mapping) else None


def blocked(message: Message) -> bool:
    """Whether a guard blocked or ended on this message."""
    mark = mark_of(message)
    return mark is not None and mark.get("action") in BLOCKED


def unsent(message: Message) -> bool:
    """A message never sent to a model: a user message a guard blocked, and the guard's
    reply to it (a blocked reply's replacement is sent: it has its ``original``)."""
    if message.role not in ("user", "assistant") or KEY not in message.metadata:
        return False
    mark = mark_of(message)
    return mark is not None and mark.get("action") in BLOCKED and "original" not in mark \
        and not message.tool_calls


def sendable(messages: Sequence[Message]) -> Sequence[Message]:
    """``messages`` without those never sent to a model."""
    if not any(KEY in m.metadata for m in messages):
        return messages
    return [m for m in messages if not unsent(m)]


def public(message: Message) -> dict[str, Any]:
    """``message.to_dict()`` as users see it: without the original of a blocked reply or tool
    result (kept for transcripts, stores and operators), nor the reasoning a guard withheld
    (kept for the provider)."""
    d = message.to_dict()
    if KEY in message.metadata:
        mark = mark_of(message)
        if mark is not None and "original" in mark:
            d["metadata"] = {**d["metadata"],
                             KEY: {k: v for k, v in mark.items() if k != "original"}}
        if mark is not None and mark.get(REASONING_WITHHELD):
            d["metadata"] = {k: v for k, v in d["metadata"].items() if k != REASONING_KEY}
    return d
