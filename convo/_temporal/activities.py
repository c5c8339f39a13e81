"""The activities of a conversation's workflow: the store, and every model call, tool call and
hook (and a ``ModelGuard`` judge's call, by value: ``judge``), and the making of a branch
(``branch``: the served branch code's replay and writes, run here so that the HTTP process
rebuilds nothing).

The transcript goes by reference: an activity is given the conversation's id and what the
workflow added since its last write (each message once), writes that, then rebuilds the
conversation from the store as a served rebuild does (``convo.serve._engine``: replayed to the
first request the store does not answer) and answers that request live. So the request is the
template's own (its messages, tools, context window and guards, as in one process), the
workflow's history holds each message once, and an activity that runs again (its worker was
lost) finds what was stored and answers the same request under the same call ids.

Model and tool activities heartbeat (``HEARTBEAT_EVERY_S``): a worker killed mid-call is
noticed after the heartbeat timeout, and another worker runs the activity again. Failures are
not retried by Temporal (``ApplicationError``, non-retryable): a model error pauses the
conversation for a ``retry``, as in §9 of the served API.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable
from typing import Any, Final, TypeVar

import attrs
from temporalio import activity
from temporalio.exceptions import ApplicationError

from .._errors import ModelError
from .._internal import CONTEXT
from .._messages import Message, ToolCall
from .._reply import Usage
from .._requests import CallModel, Request, RunHooks, RunTools
from .._run.cancel import Scope, cut
from .._run.replay import Replay
from .._run.stack import kind
from .._session import Session
from ..guards._base import GuardContext
from ..serve._branches import made, not_undone, turn_runs
from ..serve._engine import Engine
from ..serve._live import Live
from ..serve._problems import Refused
from ..serve._stores.base import Queues, Stored
from ..templates._tree import toolsets
from ..tools._toolset import alist_toolsets
from . import wire as wire
from .bots import Bot, judges
from .checks import checks
from .deltas import Publisher, channel

HEARTBEAT_EVERY_S: Final = 1.0
T = TypeVar("T")


async def heartbeating(work: Awaitable[T]) -> T:
    """``work`` awaited while this activity heartbeats."""
    async def beat() -> None:
        while True:
            activity.heartbeat()
            await asyncio.sleep(HEARTBEAT_EVERY_S)

    beating = asyncio.create_task(beat())
    try:
        return await work
    finally:
        beating.cancel()


class Activities:
    """The activities of one bot's worker (bound methods: give them to the ``Worker``)."""

    def __init__(self, bot: Bot) -> None:
        self.bot = bot
        self.store = bot.store
        # Rebuilds only: nothing is kept between activities (another worker may run the next).
        self.engine = _Rebuilds(bot.runner, bot.store, cache_size=1)
        self.channel = channel(bot.store)  # where a streamed reply's text goes
        self.judges = judges(bot.runner)
        self.checks = checks(bot.runner)

    @activity.defn(name="convo.create")
    async def create(self, data: dict[str, Any]) -> None:
        """The conversation's row, unless it is there (the HTTP front made it, or a run of
        this activity that was lost did)."""
        cid = data["conversation_id"]
        if await self.store.load(cid, messages=False) is None:
            await self.store.create(cid, data.get("state") or {}, owner=data["owner"])

    @activity.defn(name="convo.load")
    async def load(self, data: dict[str, Any]) -> dict[str, Any]:
        """The whole stored conversation (a workflow continuing as new rebuilds from it)."""
        stored = await self.store.load(data["conversation_id"])
        if stored is None:
            raise ApplicationError(f"no conversation {data['conversation_id']!r} in the store",
                                   type="NotFound", non_retryable=True)
        return wire.stored_json(stored)

    @activity.defn(name="convo.write")
    async def write(self, data: dict[str, Any]) -> None:
        await self._write(data)

    @activity.defn(name="convo.queued")
    async def queued(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        """The conversation's queue (API.md §26), in order, once the workflow's writes since
        its last activity are written (a message a turn took is gone from it)."""
        await self._write(data)
        queues = self.store
        if not isinstance(queues, Queues):
            return []
        return [wire.queued_json(q) for q in await queues.queued(data["conversation_id"])]

    @activity.defn(name="convo.model")
    async def model(self, data: dict[str, Any]) -> dict[str, Any]:
        """The reply; the calls it took and their usage (a context window may summarize
        first), for the workflow's run to count, and the summary it made (``context``: the
        record ``convo._summary`` keeps in ``Session.internal``), for the workflow to keep and
        store as the default engine does (the next call reuses it); with ``stream``, its text
        published as it comes (``deltas.py``) and the id the reply is to be stored under."""
        live = await self._at(data, CallModel)
        state = live.run.state
        calls, usage = state.model_calls, state.usage
        summary = live.session.internal.get(CONTEXT)
        publisher = None
        if data.get("stream"):
            publisher = live.sink = Publisher(self.channel, data["conversation_id"])
        try:
            if publisher is None:
                reply = await self._cancellable(live)
            else:
                async with publisher.running():
                    reply = await self._cancellable(live)
        except ModelError as exc:
            raise ApplicationError(str(exc), type="ModelError", non_retryable=True) from exc
        answer = {"message": reply.to_dict(), "reply_id": live.reply_id,
                  "model_calls": state.model_calls - calls,
                  "usage": _spent(usage, state.usage).to_dict()}
        made = live.session.internal.get(CONTEXT)
        if made is not None and made != summary:  # a context window summarized first
            answer["context"] = made
        return answer

    @activity.defn(name="convo.judge")
    async def judge(self, data: dict[str, Any]) -> str:
        """A ``ModelGuard``'s judge (``judge``: its place among the bot's ``judges``) asked
        ``messages``: its reply's text. A failure is the model's (its type's name, its
        message), not retried: the guard reads it as a failed verdict."""
        guard = self.judges[int(data["judge"])]
        messages = [Message.from_dict(m) for m in data["messages"]]
        try:
            reply = await heartbeating(guard.model.acomplete(messages))
        except Exception as exc:
            raise ApplicationError(str(exc), type=type(exc).__name__,
                                   non_retryable=True) from exc
        return str(reply.text)

    @activity.defn(name="convo.branch")
    async def branch(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        """The branch of ``of`` before ``before`` made (``convo.serve._branches.made``:
        replayed, stored under ``branch_id``, given ``of``'s id when ``kept_as`` is given;
        no ``branch_id``: a dry run); its ``not_undone``. Refused (the original's turn runs, a
        bad index, no such conversation) with the served problem's type, not retried. A run of
        this activity that was lost may have made it already: a swapped one is not made again;
        a half-made one is made anew."""
        of, before = data["of"], int(data["before"])
        branch_id, kept_as = data.get("branch_id"), data.get("kept_as")
        try:
            if kept_as is not None and await self.store.load(kept_as, messages=False):
                kept = await self.store.load(kept_as)  # (made: the original moved there)
                assert kept is not None
                return not_undone(kept.messages, before, kept.subroutines)
            if branch_id is not None and await self.store.load(branch_id, messages=False):
                await self.store.delete(branch_id)
            row = await self.store.load(of, messages=False)
            if row is not None and row.status == "running":
                raise turn_runs(of)
            return await made(self.engine, of, before, branch_id=branch_id, kept_as=kept_as)
        except Refused as exc:
            raise ApplicationError(str(exc), type=type(exc).__name__,
                                   non_retryable=True) from None

    @activity.defn(name="convo.guard")
    async def guard(self, data: dict[str, Any]) -> dict[str, Any]:
        """An ``async def`` guard check (``guard``: its place among the bot's ``checks``) on
        ``value``, once the workflow's writes are written, with the conversation as the store
        holds it (``ctx.session``), ``scope`` and ``call``: ``{"result": what it returned}``.
        A check that raises is the failure (its type's name, its message), not retried: the
        guard trips on it, as in one process."""
        stored = await self._written_then_loaded(data)
        session = Session(list(stored.messages), dict(stored.state),
                          internal=dict(stored.internal), parent=stored.parent)
        call = data.get("call")
        ctx = GuardContext(session, session.state, tuple(data.get("scope") or ()),
                           None if call is None else ToolCall.from_dict(call))
        try:
            result = self.checks[int(data["guard"])].check(data["value"], ctx)
            if inspect.isawaitable(result):
                result = await heartbeating(result)
        except Exception as exc:
            raise ApplicationError(str(exc), type=type(exc).__name__,
                                   non_retryable=True) from exc
        return {"result": result}

    @activity.defn(name="convo.tools")
    async def tools(self, data: dict[str, Any]) -> dict[str, Any]:
        """The calls ``calls`` of the batch the conversation is at (all of it without them; a
        front end runs its own tools' calls)."""
        live = await self._at(data, RunTools)
        before = json.dumps(live.session.state, sort_keys=True, default=str)
        pending: Any = live.pending  # (a RunTools: ``_at`` checked its kind)
        if data.get("calls") is not None:
            wanted = set(data["calls"])
            pending = attrs.evolve(pending, invocations=tuple(
                i for i in pending.invocations if i.call.id in wanted))
        runs = await heartbeating(live.run.answerer.aanswer(pending))
        return {"runs": wire.runs_json(runs), "state": _changed(live, before)}

    @activity.defn(name="convo.list_tools")
    async def list_tools(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        """The tools of MCP servers, named by their place among the template's toolsets:
        for each, ``{"tools": [[remote name, description, parameters, listed late]...],
        "error"}``."""
        tree = toolsets(self.bot.runner.template)
        listed = await alist_toolsets([tree[i] for i in data["toolsets"]])
        return [{"tools": [[t.remote_name, t.description, t.parameters, t.listed_late]
                           for t in one.tools], "error": one.error} for one in listed]

    @activity.defn(name="convo.hooks")
    async def hooks(self, data: dict[str, Any]) -> dict[str, Any]:
        """The hooks the workflow is at: ``after`` hooks ran since the conversation's last
        message (the rebuild takes those as run, and stops at the next)."""
        live = await self._at(data, RunHooks, replaying=_hooks_after(int(data.get("after", 0))))
        before = json.dumps(live.session.state, sort_keys=True, default=str)
        await heartbeating(live.run.answerer.aanswer(live.pending))
        return {"state": _changed(live, before)}

    async def _cancellable(self, live: Live) -> Any:
        """The model call, heartbeating; once the workflow cancels this activity (a served
        cancel), the call is cut off and its reply is what it streamed so far, marked
        (``convo._run.cancel``)."""
        scopes: list[Scope] = []
        self.engine.scopes[live.id] = scopes
        call = asyncio.ensure_future(live.run.answerer.aanswer(live.pending))
        try:
            return await heartbeating(asyncio.shield(call))
        except asyncio.CancelledError:
            if not activity.is_cancelled():  # (the worker stops: another runs it again)
                call.cancel()
                raise
            cut(scopes)
            return await call
        finally:
            self.engine.scopes.pop(live.id, None)

    async def _write(self, data: dict[str, Any]) -> None:
        """The workflow's writes since its last activity; what a lost run of this activity
        wrote already is not written again (messages are written at their indexes). The
        retracts the workflow made (``retracts``: reply ids) are published first."""
        cid = data["conversation_id"]
        retracts = data.get("retracts")
        if retracts:  # (before the replacement is stored: the client hears it first)
            await Publisher(self.channel, cid).retract(retracts)
        changes = [wire.change_from(c) for c in data.get("changes", ())]
        if not changes:
            return
        stored = await self.store.load(cid, messages=False)
        if stored is None:
            raise ApplicationError(f"no conversation {cid!r} in the store", type="NotFound",
                                   non_retryable=True)
        length = stored.length
        for change in changes:
            fresh = tuple((i, m) for i, m in change.messages if i >= length)
            if len(fresh) != len(change.messages):
                change = attrs.evolve(change, messages=fresh)
            await self.store.write(cid, change)
            length += len(fresh)

    async def _written_then_loaded(self, data: dict[str, Any]) -> Stored:
        """The workflow's writes written, then its conversation as the store holds it (a
        non-retryable ``NotFound`` when it is gone)."""
        await self._write(data)
        cid = data["conversation_id"]
        stored = await self.store.load(cid)
        if stored is None:
            raise ApplicationError(f"no conversation {cid!r} in the store", type="NotFound",
                                   non_retryable=True)
        return stored

    async def _at(self, data: dict[str, Any], wanted: type[Request[Any]],
                  replaying: type[Replay] = Replay) -> Live:
        """The conversation rebuilt from the store, paused at the request the workflow is at
        (of the kind ``wanted``)."""
        stored = await self._written_then_loaded(data)
        cid = stored.id
        live = await self.engine._rebuilt(stored, replaying=replaying)
        self.engine._cache.pop(cid, None)
        pending = live.pending
        if pending is None or kind(pending.__class__) is not wanted:
            at = "its end" if pending is None else type(pending).__name__
            raise ApplicationError(
                f"conversation {cid!r}: the workflow is at a {wanted.__name__} but the store "
                f"rebuilds it to {at} (another process wrote to it, or the template changed)",
                type="Diverged", non_retryable=True)
        return live


def _hooks_after(ran: int) -> type[Replay]:
    """A replay that takes the first ``ran`` hooks after the last stored message as run (a
    replay takes every hook before a message it holds as run: their changes are stored) and
    stops at the next, which the activity runs."""
    class HooksReplay(Replay):
        trailing = 0

        def saved_run_hooks(self, request: RunHooks) -> Any:
            root = self.frames[0]
            if len(self.frames) == 1 and root.at >= len(root.messages) and not root.live:
                if self.trailing >= ran:
                    return self.missed()
                self.trailing += 1
            return super().saved_run_hooks(request)

    return HooksReplay


class _Rebuilds(Engine):
    """The served engine as the activities use it: rebuilds, whose model call a cancel of
    the activity cuts (``scopes``: by conversation, while its call runs)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.scopes: dict[str, list[Scope]] = {}

    def _scopes(self, conversation_id: str) -> list[Scope] | None:
        return self.scopes.get(conversation_id)

    def _watch(self, conversation_id: str) -> None:
        """(A rebuild's queue is the workflow's to take, never an activity's.)"""


def _spent(before: Usage, after: Usage) -> Usage:
    """What was used between the two totals."""
    return Usage(**{f.name: getattr(after, f.name) - getattr(before, f.name)
                    for f in attrs.fields(Usage)})


def _changed(live: Live, before: str) -> dict[str, Any] | None:
    """The state after the activity, if it changed (the workflow takes it over)."""
    state = live.session.state
    return None if json.dumps(state, sort_keys=True, default=str) == before else dict(state)
