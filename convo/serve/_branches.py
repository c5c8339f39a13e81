"""A served branch (API.md §28): a new conversation from a stored one's messages before an
index, built by ``Runner.abranch`` (the one replay: nothing called), stored, then rebuilt and
paused where it waits as any stored conversation is; before a model's reply, that model call
is made at once (a ``retry`` of the new conversation: on failure it waits for another).

Every face that branches calls ``branch`` (the native route) or ``regenerate`` (the AI SDK's
``regenerate-message``: the branch takes the conversation's id); it sits beside the engine,
not in it, so that the engine's imports stay one floor lower.

The original is read under its turn's lease (a branch while its turn runs is refused) and
never written. ``not_undone`` lists the tool calls of the original at or after ``before``
that ran (their effects stay): every tool message's call but those whose tool was not
invoked (bad arguments, an unknown tool, a limit: ``NOT_RUN``; rejected; stopped by a cancel
before it ran), in stored order; a pending approval has no tool message, so it is not there.
The calls made inside a subroutine (a ``SubroutineTemplate``'s child, a ``SubroutineTool``'s
call) that started after ``before``'s message was made are listed too, the same way, where the
child started (before the conversation's message at its ``index``: a ``SubroutineTool``'s own
call, whose message is written when its child is done, after them); the child's inherited
messages are the conversation's, not listed again.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._approval import Approval
from .._messages import Message, ToolCall
from .._requests import CallModel
from .._run import branch as branching
from .._session import Session, SubroutineRun
from ..templates._batch import NOT_RUN
from ._events import Sink
from ._live import UNSAID, Live, with_unsaid
from ._problems import Conflict, Invalid, NotFound, Unsupported
from ._stores.base import Change, Renaming, Stored
from ._turns import TOOL_STOPPED

if TYPE_CHECKING:
    from ._engine import Engine


def not_undone(messages: Sequence[Message], before: int,
               subroutines: Sequence[SubroutineRun] = ()) -> list[dict[str, Any]]:
    """The calls at or after ``before`` whose tool was invoked, in stored order, with those
    of the subroutines that started after ``before``'s message was made."""
    children: dict[int, list[SubroutineRun]] = {}
    for run in subroutines:
        if run.index > before:
            children.setdefault(run.index, []).append(run)
    calls = _calls(messages)
    listed: list[dict[str, Any]] = []
    for index in range(before, max(len(messages), max(children, default=0) + 1)):
        for run in children.get(index, ()):
            own = run.messages[run.inherited:]
            listed += _ran(own, _calls(own))
        if index < len(messages) and messages[index].role == "tool":
            listed += _ran(messages[index:index + 1], calls)
    return listed


def _calls(messages: Sequence[Message]) -> dict[str, ToolCall]:
    return {call.id: call for m in messages if m.role == "assistant" for call in m.tool_calls}


def _ran(messages: Sequence[Message], calls: dict[str, ToolCall]) -> list[dict[str, Any]]:
    """The calls (from ``calls``) answered by the tool messages of ``messages`` whose tool was
    invoked."""
    listed: list[dict[str, Any]] = []
    for message in messages:
        if message.role != "tool" or message.rejected \
                or message.metadata.get(NOT_RUN) or message.content == TOOL_STOPPED:
            continue
        call = calls.get(message.tool_call_id or "")
        if call is not None:
            listed.append({"id": call.id, "name": call.name, "arguments": call.arguments})
    return listed


async def _build(engine: Engine, conversation_id: str, before: int
                 ) -> tuple[Stored, Session, list[int]]:
    """The branch of ``conversation_id`` before ``before`` (its lease held by the caller):
    the original as stored, the branch's session, and the unsaid records it keeps."""
    stored = await engine.store.load(conversation_id)
    if stored is None:
        raise NotFound(f"no conversation {conversation_id!r}")
    try:
        branching.check(stored.messages, before)
    except ValueError as exc:
        raise Invalid(str(exc)) from None
    messages, _ = with_unsaid(stored.messages, stored.internal)
    unsaid = [at for at in stored.internal.get(UNSAID) or () if at <= before] \
        if len(messages) > len(stored.messages) else []
    at = before + len(unsaid)  # its index among the messages replayed
    saved = Session(messages, stored.state, approvals={
        k: Approval.from_dict(a) for k, a in stored.approvals.items()},
                    subroutines=stored.subroutines, internal=stored.internal)
    try:
        session = await engine.runner.abranch(saved, before=at)
    except ValueError as exc:
        raise Invalid(str(exc).replace(f"before={at} ", f"before={before} ", 1)) from None
    return stored, session, unsaid


async def _store(engine: Engine, branch_id: str, stored: Stored, session: Session,
                 unsaid: list[int], parent: dict[str, Any]) -> None:
    internal = dict(session.internal) | ({UNSAID: unsaid} if unsaid else {})
    await engine.store.create(branch_id, session.state, owner=stored.owner, parent=parent)
    await engine.store.write(branch_id, Change(
        messages=tuple(enumerate(stored.messages[:parent["before"]])),
        subroutines=tuple(enumerate(session.subroutines)), internal=internal,
        approvals={k: a.to_dict() for k, a in session.approvals.items()}, status="waiting"))


async def branch(engine: Engine, conversation_id: str, before: int, sink: Sink | None
                 ) -> tuple[int, dict[str, Any]]:
    """Branch ``conversation_id`` before ``before``: 201 and the new conversation (with
    ``parent``, ``not_undone`` and ``added``), or 502 when the model call it made failed."""
    async with engine.turns.hold(conversation_id) as turn:
        if turn is None:
            raise Conflict(f"a turn is running in conversation {conversation_id!r}: branch it "
                           "once the turn is over")
        stored, session, unsaid = await _build(engine, conversation_id, before)
        calls = not_undone(stored.messages, before, stored.subroutines)
    branch_id = secrets.token_urlsafe(16)
    await _store(engine, branch_id, stored, session, unsaid,
                 {"id": conversation_id, "before": before})
    async with engine.turn(branch_id) as live:
        if isinstance(live.pending, CallModel):  # a reply to make again: at once
            code, body = await engine.retry(live, sink)
        else:
            await engine.settle(live)
            code, body = 200, live.view(live.committed)
    return (201 if code == 200 else code), {**body, "not_undone": calls}


async def regenerate(engine: Engine, conversation_id: str, before: int) -> Live:
    """Branch ``conversation_id`` before ``before`` under the same id (the AI SDK's
    regenerate, API.md §24): the original moves to a new id, which the branch's ``parent``
    names, and the branch takes ``conversation_id`` (``Renaming.swap``). The caller holds the
    conversation's lease, which the branch keeps: it is given paused where it waits (before
    that reply: a model call to make, ``engine.retry``)."""
    store = engine.store
    if not isinstance(store, Renaming):
        raise Unsupported(f"this server's store ({type(store).__name__}) does not give a "
                          "conversation's id to a branch of it: it implements no Renaming "
                          "(convo.serve._stores); start a new chat to try again")
    stored, session, unsaid = await _build(engine, conversation_id, before)
    kept_as, branch_id = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
    await _store(engine, branch_id, stored, session, unsaid, {"id": kept_as, "before": before})
    if not await store.swap(conversation_id, branch_id, kept_as):  # (deleted meanwhile)
        await store.delete(branch_id)
        raise NotFound(f"no conversation {conversation_id!r}")
    engine.forget(conversation_id)
    return await engine.live(conversation_id)
