"""A branch: a new conversation from a saved one's messages before an index, rebuilt by the one
replay (``convo._run.replay``) to the point where that message was made, with nothing called.

``cut(saved, before)`` checks ``before`` and makes the prefix to replay: the messages before it,
the state as it was when ``before``'s message was made (the saved state with every change
recorded after it undone, newest first: ``convo._internal.STATE_UNDO``, kept for every writer
of the state), and convo's own records that still hold for it. ``Runner.branch`` replays that
prefix with ``Holding`` behind the replay, so the first request the prefix does not answer
pauses the run instead of reaching a model, a tool or a person; ``reached`` checks that the
replay stopped where ``before``'s message was made (a user's message: asked of the user; an
assistant's: a model's reply), and ``made`` is the branch's session, with that state exactly
(``kept``: what the replay's templates wrote again is not kept, since a tool's, a hook's or a
stored run's value they may have overwritten is not made again). The branch's counts and
limits then cover only its own messages: its resume replays only them.

A conversation recorded before convo kept these records has none: its branch starts from its
last saved state with the templates replayed over it (as a resume does), so what its tools,
hooks and ``store_as`` runs changed after ``before`` stays, and a key a template wrote only
after ``before`` keeps its last value.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any, Final

from .._internal import CONTEXT, MACHINE, STATE_UNDO, recorded, rewound
from .._messages import Message
from .._requests import AskUser, CallModel, HandOff, ListTools, Request
from .._session import Session, SubroutineRun
from .answerer import Pause
from .stack import Forwarding

AUTHOR: Final = "author"  # an assistant message's metadata key when a person wrote it
HANDOFFS: Final = "handoffs"  # convo.tools._handoff's record in Session.internal
UNSAID: Final = "unsaid"  # convo.serve._live's record in Session.internal
WHERE: Final = "a branch starts before a user message or a model's reply"


class Holding(Forwarding):
    """Behind a branch's replay: every request that reaches it pauses the run (no model, tool,
    person or hook is asked); a turn's ``ListTools``, not a step of the conversation, is
    answered."""

    __slots__ = ()

    def answer(self, request: Request[Any]) -> Any:
        if isinstance(request, ListTools):
            return self.inner.answer(request)
        raise Pause(request)

    async def aanswer(self, request: Request[Any]) -> Any:
        if isinstance(request, ListTools):
            return await self.inner.aanswer(request)
        raise Pause(request)


def described(message: Message) -> str:
    """What a message is, in a few words, for an error naming an index."""
    if message.role == "tool":
        return f"a tool message (the result of {message.name!r})"
    if message.role == "assistant" and message.metadata.get(AUTHOR) is not None:
        return "an operator's message"
    return f"a {message.role} message"


def check(messages: list[Message], before: Any) -> Message:
    """The message at ``before``, if a branch may start before it; else ``ValueError``."""
    if isinstance(before, bool) or not isinstance(before, int):
        raise TypeError(f"before must be the index of a message (an int), got "
                        f"{type(before).__name__} {before!r}")
    count = len(messages)
    if not 0 <= before < count:
        has = f"0 to {count - 1}" if count else "none"
        raise ValueError(f"before={before} is outside the conversation's messages "
                         f"({count} message{'s' * (count != 1)}: indexes {has})")
    message = messages[before]
    if message.role not in ("user", "assistant") or described(message) != \
            f"a {message.role} message":
        raise ValueError(f"before={before} is {described(message)}; {WHERE}")
    return message


def cut(saved: Session, before: int) -> Session:
    """The prefix of ``saved`` a branch replays (``before`` checked first); its
    ``internal[STATE_UNDO]``: the changes made before ``before``'s message since the one
    before it, still to come."""
    messages = saved.messages
    check(messages, before)
    state = rewound(saved.state, saved.internal, messages, before + 1)
    prefix = messages[:before]
    subroutines = [run for run in saved.subroutines if run.index <= before]
    calls = {call.id for m in prefix for call in m.tool_calls} | {
        call.id for run in subroutines for m in _messages(run) for call in m.tool_calls}
    internal = _internal(saved, calls)
    undo = messages[before].metadata.get(STATE_UNDO)
    if undo is not None:
        internal[STATE_UNDO] = undo
    return Session(prefix, state, approvals={k: a for k, a in saved.approvals.items()
                                             if k in calls},
                   subroutines=subroutines, internal=internal)


def _messages(run: SubroutineRun) -> Iterator[Message]:
    """The messages of a subroutine's record, those of the subroutines inside it included."""
    yield from run.messages
    for inner in run.subroutines:
        yield from _messages(inner)


def _internal(saved: Session, calls: set[str]) -> dict[str, Any]:
    """convo's own records that hold for the prefix: the summary (made from messages that may
    be cut, its calls the original's), the state machine's position (the replay sets it),
    where a served conversation dropped empty replies (the server keeps its own) and the
    changes since its last message are left out; the handoffs of calls in the prefix are
    kept."""
    internal = {k: v for k, v in saved.internal.items()
                if k not in (CONTEXT, MACHINE, UNSAID, STATE_UNDO)}
    handoffs = internal.get(HANDOFFS)
    if isinstance(handoffs, dict):
        internal[HANDOFFS] = {k: v for k, v in handoffs.items() if k in calls}
        if not internal[HANDOFFS]:
            del internal[HANDOFFS]
    return internal


def reached(session: Session, saved: Session, before: int, pause: Pause | None) -> None:
    """Check that the replay of the prefix stopped where ``before``'s message was made: the
    user asked (a user's message), or the model called for a reply (an assistant's)."""
    message = saved.messages[before]
    request = None if pause is None else pause.request
    if message.role == "user":
        made = isinstance(request, AskUser | HandOff)
    else:
        made = isinstance(request, CallModel) and request.purpose == "reply"
    if made and len(session.messages) == before:
        return
    if message.role == "assistant":
        raise ValueError(f"before={before} is an assistant message the template wrote itself "
                         f"(a scripted or farewell message), not a model's reply; {WHERE}")
    raise ValueError(f"before={before} is a user message the template did not ask for (the "
                     f"template, replayed, went another way before it); {WHERE}")


def kept(prefix: Session, saved: Session) -> tuple[dict[str, Any], Any] | None:
    """The state a branch of ``saved`` has, exactly, and its record of the changes still to
    come (copies, taken before the replay runs); ``None`` for a conversation without records,
    whose branch keeps what the replay makes."""
    if not recorded(saved.internal, saved.messages):
        return None
    return copy.deepcopy(prefix.state), copy.deepcopy(prefix.internal.get(STATE_UNDO))


def made(session: Session, state: tuple[dict[str, Any], Any] | None,
         parent: dict[str, Any]) -> Session:
    """The branch: what the replay rebuilt (a copy: the run it came from is closed after),
    with ``state`` (``kept``) when it is known exactly."""
    internal = copy.deepcopy(session.internal)
    internal.pop(STATE_UNDO, None)
    values = copy.deepcopy(session.state)
    if state is not None:
        values, undo = state
        if undo is not None:
            internal[STATE_UNDO] = undo
    return Session(list(session.messages), values,
                   turns=list(session.turns), approvals=dict(session.approvals),
                   subroutines=list(session.subroutines), internal=internal, parent=parent)
