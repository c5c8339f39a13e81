"""A served branch (API.md §28): a new conversation from a stored one's messages before an
index, built by ``Runner.abranch`` (the one replay: nothing called), stored, then rebuilt and
paused where it waits as any stored conversation is; before a model's reply, that model call
is made at once (a ``retry`` of the new conversation: on failure it waits for another).

Every face that branches calls ``branch`` (the native route) or ``regenerate`` (the AI SDK's
``regenerate-message``: the branch takes the conversation's id); ``preview`` is the native
route's dry run (``not_undone`` without the branch: what the chat page lists before the user
confirms). It sits beside the engine, not in it, so that the engine's imports stay one floor
lower.

The original is read under its turn's lease (a branch while its turn runs is refused) and
never written. An engine whose turns run elsewhere (``Elsewhere``: the Temporal engine, whose
HTTP processes rebuild nothing) makes the branch there too: ``made`` is what its workers run.

``not_undone`` lists the tool calls of the original at or after ``before`` that ran (their
effects stay): every tool message's call but those whose tool was not
invoked (bad arguments, an unknown tool, a limit: ``NOT_RUN``; rejected; stopped by a cancel
before it ran), in stored order; a pending approval has no tool message, so it is not there.
The calls made inside a subroutine (a ``SubroutineTemplate``'s child, a ``SubroutineTool``'s
call) that started after ``before``'s message was made are listed too, the same way, where the
child started (before the conversation's message at its ``index``: a ``SubroutineTool``'s own
call, whose message is written when its child is done, after them), and so are those of the
subroutines inside it, where each started in its parent; the child's inherited messages are
its parent's, not listed again, nor is a call a parent kept of its child (``keep="all"``).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

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
    of the subroutines that started after ``before``'s message was made (and of the ones
    inside them, at any depth), each call once."""
    listed: list[dict[str, Any]] = []
    _list(messages, before, [run for run in subroutines if run.index > before], listed)
    return listed


def _list(messages: Sequence[Message], start: int, runs: Sequence[SubroutineRun],
          listed: list[dict[str, Any]]) -> None:
    """Add to ``listed`` the calls that ran of ``messages[start:]`` (one session's), each
    subroutine's of ``runs`` where it started (before the message at its ``index``); the
    messages a subroutine's parent kept of it (``keep="all"``) are its, listed with it. A
    tool message answers the latest call of its id before it (a child's call ids are its
    own: the ones its parent kept may be the parent's too)."""
    at: dict[int, list[SubroutineRun]] = {}
    for run in runs:
        at.setdefault(run.index, []).append(run)
    calls: dict[str, ToolCall] = {}
    copies: set[int] = set()
    for index in range(max(len(messages), max(at, default=0) + 1)):
        for run in at.get(index, ()):
            _list(run.messages, run.inherited, run.subroutines, listed)
            copies.update(_kept(messages, index, run.messages[run.inherited:]))
        if index >= len(messages):
            continue
        message = messages[index]
        if message.role == "assistant":
            calls.update((call.id, call) for call in message.tool_calls)
        elif index >= start and index not in copies:
            _ran(message, calls, listed)


def _kept(messages: Sequence[Message], index: int, own: Sequence[Message]) -> Iterator[int]:
    """The indexes of the tool messages that the parent (``messages``) kept of a child's
    ``own`` messages: as many of them as the parent holds from ``index`` on (``keep="all"``
    appends them all there; the others keep no tool message)."""
    for at, message in enumerate(own, index):
        if at >= len(messages) or not _same(messages[at], message):
            return
        if message.role == "tool":
            yield at


def _same(a: Message, b: Message) -> bool:
    """The same message but for what a store or the run adds (its id, metadata)."""
    return a.role == b.role and a.content == b.content and a.tool_calls == b.tool_calls \
        and a.tool_call_id == b.tool_call_id and a.name == b.name


def _ran(message: Message, calls: dict[str, ToolCall], listed: list[dict[str, Any]]) -> None:
    """Add the call (from ``calls``) that ``message`` answers to ``listed``, if it is a tool
    message whose tool was invoked."""
    if message.role != "tool" or message.rejected \
            or message.metadata.get(NOT_RUN) or message.content == TOOL_STOPPED:
        return
    call = calls.get(message.tool_call_id or "")
    if call is not None:
        listed.append({"id": call.id, "name": call.name, "arguments": call.arguments})


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


@runtime_checkable
class Elsewhere(Protocol):
    """An engine whose branches are made where its turns run, not in the HTTP process (the
    Temporal engine: by its workers, which run ``made``). ``branch_elsewhere`` makes the branch
    of ``conversation_id`` before ``before`` under ``branch_id`` (``None``: a dry run, nothing
    stored), given ``conversation_id`` when ``kept_as`` names where the original goes (the
    AI SDK's regenerate), with the checks and problems of ``made`` (409 while the original's
    turn runs); it answers the branch's ``not_undone``, and the branch waits, rebuilt where its
    turns run, for its first request."""

    async def branch_elsewhere(self, conversation_id: str, before: int, *,
                               branch_id: str | None, kept_as: str | None = None
                               ) -> list[dict[str, Any]]: ...


async def made(engine: Engine, conversation_id: str, before: int, *,
               branch_id: str | None = None, kept_as: str | None = None
               ) -> list[dict[str, Any]]:
    """The branch of ``conversation_id`` before ``before`` made (the original's turn held by
    the caller): built by the one replay, stored under ``branch_id`` (``None``: a dry run,
    nothing stored) and, when ``kept_as`` names where the original goes, given
    ``conversation_id`` (``Renaming.swap``, the AI SDK's regenerate). Its ``not_undone``."""
    stored, session, unsaid = await _build(engine, conversation_id, before)
    calls = not_undone(stored.messages, before, stored.subroutines)
    if branch_id is None:
        return calls
    await _store(engine, branch_id, stored, session, unsaid,
                 {"id": kept_as or conversation_id, "before": before})
    if kept_as is not None:
        store = engine.store
        assert isinstance(store, Renaming)  # (``regenerate`` checked)
        if not await store.swap(conversation_id, branch_id, kept_as):  # (deleted meanwhile)
            await store.delete(branch_id)
            raise NotFound(f"no conversation {conversation_id!r}")
    return calls


async def _store(engine: Engine, branch_id: str, stored: Stored, session: Session,
                 unsaid: list[int], parent: dict[str, Any]) -> None:
    internal = dict(session.internal) | ({UNSAID: unsaid} if unsaid else {})
    await engine.store.create(branch_id, session.state, owner=stored.owner, parent=parent)
    await engine.store.write(branch_id, Change(
        messages=tuple(enumerate(stored.messages[:parent["before"]])),
        subroutines=tuple(enumerate(session.subroutines)), internal=internal,
        approvals={k: a.to_dict() for k, a in session.approvals.items()}, status="waiting"))


def turn_runs(conversation_id: str) -> Conflict:
    """The 409 of a branch while the original's turn runs."""
    return Conflict(f"a turn is running in conversation {conversation_id!r}: branch it once "
                    "the turn is over")


async def _made_by_engine(engine: Engine, conversation_id: str, before: int,
                          branch_id: str | None) -> list[dict[str, Any]]:
    """``made`` where the engine makes branches (``Elsewhere``: a Temporal workflow), else
    here under the original's lease (409 while its turn runs); ``branch_id`` ``None``: a dry
    run, nothing stored. Its ``not_undone``."""
    if isinstance(engine, Elsewhere):
        return await engine.branch_elsewhere(conversation_id, before, branch_id=branch_id)
    async with engine.turns.hold(conversation_id) as turn:
        if turn is None:
            raise turn_runs(conversation_id)
        return await made(engine, conversation_id, before, branch_id=branch_id)


async def preview(engine: Engine, conversation_id: str, before: int) -> dict[str, Any]:
    """What ``branch`` would answer of its ``not_undone``, without making the branch (a dry
    run: the chat page's list before the user confirms): the same checks (409 while a turn
    runs, 400 for a bad ``before``), the same replay; nothing stored."""
    calls = await _made_by_engine(engine, conversation_id, before, None)
    return {"before": before, "not_undone": calls}


async def branch(engine: Engine, conversation_id: str, before: int, sink: Sink | None
                 ) -> tuple[int, dict[str, Any]]:
    """Branch ``conversation_id`` before ``before``: 201 and the new conversation (with
    ``parent``, ``not_undone`` and ``added``), or 502 when the model call it made failed."""
    branch_id = secrets.token_urlsafe(16)
    calls = await _made_by_engine(engine, conversation_id, before, branch_id)
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
    kept_as, branch_id = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
    if isinstance(engine, Elsewhere):
        await engine.branch_elsewhere(conversation_id, before, branch_id=branch_id,
                                      kept_as=kept_as)
    else:
        await made(engine, conversation_id, before, branch_id=branch_id, kept_as=kept_as)
        engine.forget(conversation_id)
    return await engine.live(conversation_id)
