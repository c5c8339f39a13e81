"""Sending within a ContextWindow, with summaries made once per cut (API.md §13).

``fit`` is what the runner does with a model call when a ``ContextWindow`` applies: it chooses
what to send (_context.py), asks for a summary of what is left out when the window says so,
and then makes the call with the chosen messages. It is a generator of requests, like a
template: the summary is an ordinary ``CallModel`` (``purpose="summary"``), so it is answered,
counted and limited like any model call, under ``run`` and ``arun`` alike.

The summary is kept in ``session.internal["context"]`` (``CONTEXT_KEY``; ``convo.internal``),
apart from the state a client or a tool writes, so nobody but convo can forge it::

    {"summary": "...", "upto": 40, "check": "user:1234:5678",
     "calls": 2, "usage": {"prompt_tokens": ..., ...}}

``upto``: the summary stands for the non-system messages before it; ``check``: a fingerprint
of the last of them, so a summary is reused only on the history it was made from; ``calls``
and ``usage``: every summary call the conversation made. The internal records are written to
the transcript and kept by served conversations, so a resumed or rebuilt conversation reuses
the summary instead of paying for it again. A new summary is made only when the tail no
longer fits; the new cut then leaves half the room free, so the calls that follow reuse it.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs

from ._context import ContextWindow, Index, estimate_message, estimate_text
from ._errors import ContextLengthError
from ._internal import CONTEXT, context_problem
from ._messages import Message
from ._parts import binaries, shown
from ._requests import CallModel
from ._session import NO_USAGE, Session, Usage
from .events import ContextTrimmed, Event, Replayed

if TYPE_CHECKING:
    from .models._base import Model

CONTEXT_KEY: Final = CONTEXT  # in session.internal

SUMMARY_PROMPT: Final = (
    "You summarise the earlier part of a conversation so that it can go on without it. "
    "Keep what later messages may need: facts, names, numbers, decisions, the user's goals "
    "and preferences, open questions, and the results of tool calls that still matter. "
    "Leave out greetings and repetition. Write in the conversation's language, in plain "
    "sentences, at most {words} words. Reply with the summary only."
)
SUMMARY_HEADER: Final = "Summary of the earlier conversation ({n} messages left out):\n"
_SUMMARY_SHARE: Final = 4  # a summary may take at most 1/4 of the window


def fingerprint(message: Message) -> str:
    text = message.text + "".join(p.digest or p.url or "" for p in binaries(message.content))
    return f"{message.role}:{len(text)}:{zlib.crc32(text.encode())}"


def saved_summary(session: Session, index: Index, messages: Sequence[Message]
                  ) -> dict[str, Any] | None:
    """The summary in ``session.internal``, if it was made from this history."""
    record: Any = session.internal.get(CONTEXT_KEY)
    if context_problem(record) is not None:
        return None
    upto = record.get("upto")
    if not isinstance(upto, int) or not 0 < upto < len(messages) or not index.valid(upto):
        return None
    if record.get("check") != fingerprint(messages[upto - 1]):
        return None
    return dict(record)


def replayed_summaries(internal: Mapping[str, Any]) -> Replayed | None:
    """What a resumed conversation's saved summary calls count as (``None``: there were none),
    so that its counts and limits cover them too (``internal``: its ``Session.internal``)."""
    record: Any = internal.get(CONTEXT_KEY)
    if context_problem(record) is not None or not record.get("calls"):
        return None
    return Replayed(model_calls=record["calls"], usage=Usage.from_dict(record.get("usage")))


def summary_message(text: str, left_out: int) -> Message:
    return Message("system", SUMMARY_HEADER.format(n=left_out) + text)


def _left_out(index: Index, cut: int) -> int:
    pinned = 1 if 0 <= index.user < cut else 0
    return index.count[cut] - pinned


def _as_line(message: Message, limit: int) -> str:
    parts = [shown(message.content)] if message.content else []
    parts += [f"[calls {c.name}({c.arguments_json()})]" for c in message.tool_calls]
    who = f"tool {message.name}" if message.role == "tool" and message.name else message.role
    text = " ".join(parts)
    return f"{who}: {text if len(text) <= limit else text[:limit] + '…'}"


def _chunks(messages: Sequence[Message], start: int, cut: int, room: int) -> list[str]:
    """The non-system messages in ``[start, cut)`` as lines, in pieces of about ``room``."""
    limit = room * 4
    pieces: list[str] = []
    lines: list[str] = []
    size = 0
    for message in messages[start:cut]:
        if message.role == "system":
            continue
        line = _as_line(message, limit)
        if lines and size + len(line) > limit:
            pieces.append("\n".join(lines))
            lines, size = [], 0
        lines.append(line)
        size += len(line) + 1
    if lines:
        pieces.append("\n".join(lines))
    return pieces


def _summarize(window: ContextWindow, messages: Sequence[Message], record: dict[str, Any] | None,
               cut: int, model: Model | None) -> Generator[CallModel, Any, dict[str, Any]]:
    """Summary calls for the messages before ``cut`` (one, or one per window-sized piece)."""
    words = max(20, window.max_tokens // _SUMMARY_SHARE * 3 // 4)
    prompt = Message("system", SUMMARY_PROMPT.format(words=words))
    text = record["summary"] if record else ""
    calls = record.get("calls", 0) if record else 0
    usage = Usage.from_dict(record.get("usage")) if record else Usage()
    start = record["upto"] if record else 0
    room = window.max_tokens - window.max_tokens // _SUMMARY_SHARE - estimate_message(prompt)
    for piece in _chunks(messages, start, cut, max(64, room)):
        earlier = f"Summary so far:\n{text}\n\n" if text else ""
        ask = Message("user", f"{earlier}Messages to add to the summary:\n{piece}")
        reply: Message = yield CallModel(window.summary_model or model, (), messages=(prompt, ask),
                                         purpose="summary")
        calls += 1
        usage = usage + (reply.usage or NO_USAGE)
        text = _clip(reply.text.strip(), _text_room(window))
    return {"summary": text, "upto": cut, "check": fingerprint(messages[cut - 1]),
            "calls": calls, "usage": usage.to_dict()}


def _text_room(window: ContextWindow) -> int:
    """Tokens a summary's text may take: its share of the window, less its header."""
    header = estimate_message(summary_message("", 10**6))
    return window.max_tokens // _SUMMARY_SHARE - header


def _clip(text: str, tokens: int) -> str:
    if estimate_text(text) <= tokens:
        return text
    size = tokens * 4
    while size > 0 and estimate_text(text[:size] + "…") > tokens:
        size = size * 3 // 4
    return text[:size] + "…"


def _choose(window: ContextWindow, index: Index, room: int, record: dict[str, Any] | None
            ) -> tuple[int, dict[str, Any] | None, bool]:
    """The cut, the summary to send, and whether a new summary must be made first."""
    keep = window.keep_last
    if record is not None:
        summary_tokens = estimate_message(summary_message(record["summary"], record["upto"]))
        cut = index.smallest_cut(room - summary_tokens, keep)
        if cut is not None and cut <= record["upto"]:
            return record["upto"], record, False
    elif index.smallest_cut(room, keep) == 0:
        return 0, None, False
    reserve = window.max_tokens // _SUMMARY_SHARE
    for share in () if _text_room(window) < 8 else \
            ((room - reserve) // 2, room - reserve):
        cut = index.smallest_cut(share, keep)
        if cut is not None and cut > 0 and (record is None or cut > record["upto"]):
            return cut, None, True
    # Not even a summary of the foreseen size fits beside the newest messages: none is made.
    smallest = index.smallest_cut(room, keep)
    return (index.last_group() if smallest is None else smallest), None, False


def _summarized(window: ContextWindow, session: Session, index: Index, room: int,
                smallest: int, model: Model | None
                ) -> Generator[CallModel, Any, tuple[int, Message | None]]:
    """The cut and the summary message to send, making a new summary when one is due."""
    messages = session.messages
    saved = saved_summary(session, index, messages)
    cut, record, make = _choose(window, index, room, saved)
    if make and cut > 0:
        record = yield from _summarize(window, messages, saved, cut, model)
        session.internal[CONTEXT_KEY] = record
    if record is None:
        return cut, None
    summary = summary_message(record["summary"], _left_out(index, cut))
    fits = index.smallest_cut(room - estimate_message(summary), window.keep_last)
    if fits is None:  # not even the newest messages fit beside it: leave it out
        return smallest, None
    if fits > cut:  # longer than foreseen (never with the default shares): cut further
        cut = fits
        summary = summary_message(record["summary"], _left_out(index, cut))
    return cut, summary


def _too_long(window: ContextWindow, index: Index, fixed: int, ratio: float
              ) -> ContextLengthError:
    """The error for a conversation whose newest messages alone do not fit."""
    need = round((index.cost(index.last_group()) + fixed) * ratio)
    return ContextLengthError(
        f"the conversation does not fit in ContextWindow(max_tokens={window.max_tokens}): "
        f"the newest messages alone need about {need} tokens (estimated, with "
        f"{round(fixed * ratio)} of system messages and tool schemas) but at most "
        f"{window.max_tokens} may be sent. Raise max_tokens, or send shorter messages"
    )


def fit(window: ContextWindow, session: Session, request: CallModel, model: Model | None,
        emit: Callable[[Event], None], *, reserve: int = 0) -> Generator[CallModel, Any, Message]:
    """Make the model call ``request`` within ``window``; returns the model's reply.

    ``reserve``: estimated tokens added to what is sent when the call is made (the budget
    note of ``Limits(tell_model=True)``), kept free. Raises ``ContextLengthError`` (before any
    call) when the newest messages alone do not fit.
    """
    # A subroutine's call carries its child's messages: the window trims those, but keeps no
    # summary for them (the internal summary is the session's own history's).
    own = request.messages is None
    messages = session.messages if request.messages is None else request.messages
    index = window.index(messages)
    ratio = window.ratio(model)
    fixed = index.system_tokens + window.tools_tokens(request.tools) + reserve
    room = int(window.max_tokens / ratio) - fixed
    cut = index.smallest_cut(room, window.keep_last)
    if cut is None:
        raise _too_long(window, index, fixed, ratio)
    summary = None
    if window.summarize and own:
        cut, summary = yield from _summarized(window, session, index, room, cut, model)
    if cut == 0 and summary is None:
        reply: Message = yield request
        window.observe(model, index.cost(0) + fixed, reply)
        return reply
    sent = index.sent(messages, cut, summary)
    kept = len(sent) - (summary is not None)
    emit(ContextTrimmed(dropped=len(messages) - kept, kept=kept, summarized=summary is not None))
    reply = yield attrs.evolve(request, messages=tuple(sent))
    estimated = index.cost(cut) + fixed + (estimate_message(summary) if summary else 0)
    window.observe(model, estimated, reply)
    return reply
