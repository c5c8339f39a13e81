"""Served conversations: each is a paused template generator, driven a turn at a time.

A conversation waiting for a person is a run of the one driver (``convo._run.driver``) paused
at a request: the ``Served`` answerer, made for each drive in front of the run's stack, pauses
at the requests a person answers (``AskUser``, ``Approve``) and at a model call that failed
(waiting for ``retry``).
Paused conversations are kept in a bounded LRU cache; on a miss (another worker, a restart, an
eviction) the conversation is rebuilt from the store by replaying it (``Runner.start(saved=)``):
no tool or model is called again for what is stored, subroutines included (their records are
stored with each step, the child a conversation waits inside as it stands). A rebuild pauses at
the first request the store does not answer: a model call or tool calls whose results were not
stored (the turn was cut off) wait for ``retry``, which makes them again with the same call
ids. Every message is committed to the store before a client sees it; one turn at a time per
conversation, across workers: a turn holds a lease renewed on a timer (``convo.serve._turns``),
which a cancel or a delete, here or in another worker, asks to stop.

(Over 300 lines: a served conversation's life — create, turn, message, retry, approvals,
cancel, rebuild — each short; HTTP is ``http/``'s, the store writes ``live.py``'s, the leases
``turns.py``'s.)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import operator
import secrets
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping
from typing import Any, Final, TypeVar

import attrs

from .._approval import Approval
from .._errors import ModelError
from .._messages import Message, with_id
from .._parts import Content
from .._requests import (
    Approve,
    AskUser,
    CallModel,
    HandOff,
    ListTools,
    Request,
    RunHooks,
    RunTools,
    TakeSteered,
)
from .._run.answerer import Pause
from .._run.cancel import CANCELLED, Cancellable, Scope, stopped
from .._run.driver import adrive
from .._run.replay import HistoryReplay, Replay
from .._run.stack import Forwarding, kind
from .._runner import Runner
from .._session import Session
from ..tools._calls import ToolRun
from ..tools._frontend import FRONTEND_TOOLS, FrontendTool
from ._events import Paused, Retract, Sink, WaitingFor, committed
from ._live import Live, client_calls, new_message_id, stored_view, with_unsaid
from ._problems import Busy, Conflict, Forbidden, Full, Invalid, NotFollowed, NotFound, Refused
from ._stores.base import (
    DEFAULT_OWNER,
    LEASE_S,
    Creating,
    Queued,
    Queues,
    Stored,
    StoreError,
    TurnStore,
)
from ._turns import POLL_S, TOOL_STOPPED, Cancel, Turns

logger = logging.getLogger("convo.serve")
T = TypeVar("T")
#: How many messages a conversation's queue holds at most (``--max-queued``, API.md §26).
MAX_QUEUED: Final = 16
#: What a message sent while a turn runs may ask for (API.md §26); the first is the default.
WHILE_BUSY: Final = ("reject", "queue", "interrupt", "steer")


class Served(Forwarding):
    """A served conversation's answerer for one drive, in front of its run's stack (the replay
    of a rebuild, the cancel, the live answerer): a person's requests pause the run (answered
    by the next HTTP request); a failed model call pauses it for a retry; a handoff waits for
    operators (``convo.serve._http.operators``); while ``rebuilding``, so does every request the
    store did not answer (but a turn's ``ListTools``, which is not a step of the conversation:
    always answered). Once the turn's ``cancel`` is set, later model calls are not made (an
    empty cancelled reply) and later tools not run (``convo.serve._turns``). ``commit`` writes
    what the run added so far: awaited before any request is answered (a model call, tools),
    so each step is in the store before the next starts; at a pause, the turn's last write
    says it with where the conversation waits, one write for both. A write that fails is no
    failure of the run: the run pauses, and the engine raises it (``failed``)."""

    __slots__ = ("cancel", "commit", "failed", "live", "rebuilding", "steered")

    def __init__(self, inner: Any, *, commit: Callable[[], Awaitable[None]] | None = None,
                 cancel: Cancel | None = None, rebuilding: bool = False, live: Live | None = None,
                 steered: Callable[[Live], Awaitable[tuple[Message, ...]]] | None = None
                 ) -> None:
        super().__init__(inner)
        self.commit = commit
        self.cancel = cancel
        self.rebuilding = rebuilding
        self.live = live  # the conversation: its queue, as this worker knows it
        self.steered = steered  # the messages steered to the turn (API.md §26)
        self.failed: BaseException | None = None

    async def atake_steered(self, request: TakeSteered) -> tuple[Message, ...]:
        live = self.live  # (nothing steered, the common case: no call made)
        if live is None or not live.queued or not live.queued[0].steer \
                or self.steered is None or self.rebuilding or self.stopping:
            return ()
        return await self.steered(live)

    async def aask_user(self, request: AskUser) -> Content:
        raise Pause(request)

    async def aapprove(self, request: Approve) -> list[Approval]:
        raise Pause(request)

    async def ahand_off(self, request: HandOff) -> Message | None:
        raise Pause(request)

    async def alist_tools(self, request: ListTools) -> Any:
        await self._committed(request)  # a turn's tools, not a step: answered even now
        return await self.inner.aanswer(request)

    async def acall_model(self, request: CallModel) -> Message:
        await self._step(request)
        if self.stopping:
            return Message("assistant", "", metadata={CANCELLED: True})
        try:  # (its method, not ``aanswer``'s dispatch: a request of this kind, every turn)
            return await self.inner.acall_model(request)  # type: ignore[no-any-return]
        except ModelError as exc:
            raise Pause(request, str(exc)) from exc

    async def arun_tools(self, request: RunTools) -> list[ToolRun]:
        await self._step(request)
        if client_calls(request):  # a frontend tool's: its client runs it (``tool_results``)
            raise Pause(request)
        if self.stopping:
            return [stopped(TOOL_STOPPED, "the turn was cancelled") for _ in request.invocations]
        return await self._live(request)  # type: ignore[no-any-return]

    async def arun_hooks(self, request: RunHooks) -> None:
        await self._step(request)
        if not self.stopping:
            await self._live(request)

    @property
    def stopping(self) -> bool:
        return self.cancel is not None and self.cancel.is_set()

    async def _committed(self, request: Request[Any]) -> None:
        if self.commit is not None:
            try:
                await self.commit()
            except BaseException as exc:  # (a store error, a cancel) not the template's
                self.failed = exc
                raise Pause(request) from exc

    async def _step(self, request: Request[Any]) -> None:
        """Before a step: what came before it committed; none while rebuilding."""
        await self._committed(request)
        if self.rebuilding:
            raise Pause(request, INTERRUPTED)

    async def _live(self, request: Request[Any]) -> Any:
        try:
            return await self.inner.aanswer(request)
        except ModelError as exc:
            raise Pause(request, str(exc)) from exc


INTERRUPTED = "the turn was cut off before it ended: retry to go on"


_CONFLICTS: Final = {
    "approval": "an approval is pending: answer it with POST /api/conversations/{id}/approvals "
                "before {what}",
    "retry": "the turn did not finish: POST /api/conversations/{id}/retry before {what}",
    "operator": "the conversation is handed to a person: an operator answers it until POST "
                "/api/conversations/{id}/handback, not {what}"}
"""Why a request cannot be answered yet, by what the conversation waits for instead."""


_WANTS: Final[dict[type[Request[Any]], str]] = {
    AskUser: "a user message", CallModel: "the bot's reply (an assistant message)",
    Approve: "a decision on a tool call (an approval)",
    HandOff: "an operator (the conversation was handed to a person)"}


def _wants(request: Request[Any] | None) -> str:
    """What a conversation paused at ``request`` waits for, in words."""
    if request is None:
        return "nothing more (the conversation has ended)"
    return _WANTS.get(kind(request.__class__), "its tools to run")


_ID: Final = operator.attrgetter("id")


def _keep_ids(replayed: list[Message], stored: list[Message]) -> None:
    """Give the replayed messages the ids they were stored under (a template makes its own
    messages anew when it is replayed; they are equal to the stored ones but for the id).
    The replay took the stored one where it followed it (``Replay.keep_ids``): ids are
    compared first, without a step per message."""
    if not any(map(operator.ne, map(_ID, replayed), map(_ID, stored))):
        return
    for index, (again, was) in enumerate(zip(replayed, stored, strict=False)):
        if again.id != was.id and again == was:
            replayed[index] = with_id(again, was.id)


def _kind(waiting_for: dict[str, Any] | None) -> Any:
    return None if waiting_for is None else waiting_for.get("type")


def _current(cached: Live, stored: Stored) -> bool:
    """Whether the paused conversation in the cache is the one ``stored`` describes (a
    hand-back in another worker adds no message, only changes where it waits; a regenerate
    in another worker gave the id to a branch, whose ``parent`` is new)."""
    return cached.committed == stored.length and cached.children == stored.child_length \
        and cached.pending is not None and cached.waits == _kind(stored.waiting_for) \
        and cached.session.parent == stored.parent


class Engine:
    """Runs served conversations of one template on one store."""

    def __init__(self, runner: Runner, store: TurnStore, *, cache_size: int = 1000,
                 lease: float = LEASE_S, max_queued: int = MAX_QUEUED) -> None:
        self.runner = runner
        self.store = store
        store.lease = lease
        self.turns = Turns(store, lease)
        self.cache_size = cache_size
        self.max_queued = max_queued
        self._cache: OrderedDict[str, Live] = OrderedDict()
        # The conversations whose queue this worker will drain: whether it was asked again
        # since its watcher last began to look (it then looks once more before it stops).
        self._watching: dict[str, bool] = {}
        self._interrupting: dict[str, int] = {}  # an interrupt waits for their lease
        self.tasks: set[asyncio.Task[Any]] = set()

    # -- the cache -----------------------------------------------------------------------

    def _keep(self, live: Live) -> None:
        self._cache[live.id] = live
        self._cache.move_to_end(live.id)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)  # evicted: rebuilt from the store when needed

    def forget(self, conversation_id: str) -> None:
        """Drop the conversation from the cache (its id now names another: a regenerate)."""
        self._cache.pop(conversation_id, None)

    def _start(self, conversation_id: str, session: Session, *,
               saved: Session | None = None, replaying: type[Replay] = Replay) -> Live:
        """The conversation's run: its turns' cancel in front of the live answerer, the
        replay of ``saved`` in front of that (each drive puts its ``Served`` in front)."""
        run = self.runner.start(session, saved=saved, replaying=replaying, layers=(
            lambda live: Cancellable(live, lambda: self._scopes(conversation_id)),))
        if saved is not None:
            run.answerer.quiet()  # the recorder records nothing of what it rebuilds
            if replaying is Replay:  # (a client's history: its ids by position, ``_keep_ids``)
                run.answerer.keep_ids()
        live = Live(conversation_id, run, replaying=saved is not None)
        run.state.listen(live.on_event)
        return live

    def _cancel(self, conversation_id: str) -> Cancel | None:
        """The cancel of the conversation's turn running in this worker, if one runs."""
        turn = self.turns.running.get(conversation_id)
        return None if turn is None else turn.cancel

    def _scopes(self, conversation_id: str) -> list[Scope] | None:
        """Where the turn's cancel looks for its calls (asked at each model call)."""
        turn = self.turns.running.get(conversation_id)
        return None if turn is None else turn.cancel.scopes

    async def live(self, conversation_id: str, stored: Stored | None = None, *,
                   leased: Stored | None = None) -> Live:
        """The paused conversation (its turn's lease held): from the cache when it is current,
        else rebuilt. ``leased``: its row as the store read it with the lease (convo's own
        stores: ``Turn.row``), which is what it is now. Else ``stored``: its row as the route
        read it, before the lease: a cached conversation that matches it is confirmed by
        reading the row again (another worker may have run a turn between that read and the
        lease). One that does not match is rebuilt from one read of the whole conversation."""
        cached = self._cache.get(conversation_id)
        if leased is not None:
            stored = leased
        elif stored is None or (cached is not None and _current(cached, stored)):
            stored = await self.store.load(conversation_id, messages=False)
            if stored is None:
                raise NotFound(f"no conversation {conversation_id!r}")
        if stored.status == "ended":
            raise Conflict(f"conversation {conversation_id!r} has ended")
        if cached is not None and _current(cached, stored):
            self._keep(cached)
            return cached
        whole = await self.store.load(conversation_id)
        if whole is None:
            raise NotFound(f"no conversation {conversation_id!r}")
        if whole.status == "ended":  # (the route's row was read before another turn ended it)
            raise Conflict(f"conversation {conversation_id!r} has ended")
        return await self._rebuilt(whole)

    async def _rebuild(self, conversation_id: str) -> Live:
        stored = await self.store.load(conversation_id)
        if stored is None:
            raise NotFound(f"no conversation {conversation_id!r}")
        return await self._rebuilt(stored)

    async def _rebuilt(self, stored: Stored, replaying: type[Replay] = Replay) -> Live:
        """The conversation rebuilt from ``stored`` (all of it), paused where it waits
        (``replaying``: a client's history is replayed by ``HistoryReplay``)."""
        conversation_id = stored.id
        messages, unsaid = with_unsaid(stored.messages, stored.internal)
        saved = Session(messages, stored.state,
                        approvals={k: Approval.from_dict(a) for k, a in stored.approvals.items()},
                        subroutines=stored.subroutines, internal=stored.internal,
                        parent=stored.parent)
        session = Session(state=dict(saved.state), approvals=dict(saved.approvals),
                          internal=dict(saved.internal), parent=stored.parent)
        live = self._start(conversation_id, session, saved=saved, replaying=replaying)
        pause = await adrive(live.run.driver,  # replays to the first pause
                             Served(live.run.answerer, rebuilding=True))
        if unsaid:  # replayed, they go again (``live.py``): the session is what is stored
            live.session.messages[:] = [m for m in live.session.messages
                                        if not any(m is u for u in unsaid)]
        _keep_ids(live.session.messages, stored.messages)
        live.paused(pause)
        live.committed = len(stored.messages)
        live.stored()
        if stored.waiting_for and stored.waiting_for.get("type") == "retry":
            live.error = stored.waiting_for.get("error")
        live.queued = list(stored.queued)
        if live.queued:  # (another worker queued them, or died holding the turn)
            self._watch(conversation_id)
        self._keep(live)
        return live

    @contextlib.asynccontextmanager
    async def adopted(self, conversation_id: str, history: list[Message], *,
                      owner: str = DEFAULT_OWNER) -> AsyncIterator[Live]:
        """A new conversation holding a client's ``history`` (API.md §25, the OpenAI face's
        stateless replay): replayed as a rebuild replays a stored conversation
        (``_rebuilt``, with ``HistoryReplay``: the template's own messages are taken where
        the client's history lacks them; no model or tool is called for what it holds),
        stored, and given paused where it waits, its turn's lease held while the block runs.
        A history the template cannot have produced is ``NotFollowed`` naming the first of
        its messages the template does not follow, and nothing is kept. Where the template
        goes on with a model call once the history is replayed (a bot that speaks first), that
        call is made, as a created conversation makes it."""
        await self.store.create(conversation_id, {}, owner=owner)
        kept = False
        try:
            async with self.turns.hold(conversation_id) as turn:
                if turn is None:
                    raise Busy("a turn is running in this conversation: wait for it to end, "
                               "then send again")
                live = await self.replayed(conversation_id, history, owner=owner)
                await self._adopt(live)
                await self.goes_on(live)
                kept = True
                yield live
        finally:
            if not kept:
                self._cache.pop(conversation_id, None)
                await self.store.delete(conversation_id)

    async def goes_on(self, live: Live) -> tuple[int, dict[str, Any]] | None:
        """Where a replayed history's template goes on with a model call or a tool run (a
        bot that speaks first), that step made, as a created conversation makes it: the
        turn's answer; ``None`` where it waits for someone (both engines ask this)."""
        if isinstance(live.pending, CallModel | RunTools):
            return await self._advance(live, None, None, retry=True)
        return None

    async def replayed(self, conversation_id: str, history: list[Message], *,
                       owner: str = DEFAULT_OWNER) -> Live:
        """A client's ``history`` replayed (``adopted``), paused where it waits; nothing
        stored. ``NotFollowed`` naming the first message the template does not follow, a
        ``Conflict`` when the conversation in it has ended."""
        live = await self._rebuilt(Stored(conversation_id, {}, messages=history, owner=owner),
                                   replaying=HistoryReplay)
        replay = live.run.answerer
        assert isinstance(replay, HistoryReplay)
        if replay.used < len(history):
            raise NotFollowed(replay.used, _wants(live.pending))
        if live.pending is None:
            raise Conflict("the conversation in these messages has ended: start another")
        return live

    async def _adopt(self, live: Live) -> None:
        """Store the whole of a replayed client's history (the replay recorded none of it),
        each message under an id of its own, with where the conversation waits."""
        messages = live.session.messages
        base = live.new_id()  # one id drawn, each message's its own by its index
        for index, message in enumerate(messages):
            if message.id is None:
                messages[index] = with_id(message, f"{base}{index:04x}")
        change, _ = live.change(final=True)
        session = live.session
        await self.store.write(live.id, attrs.evolve(
            change, messages=tuple(enumerate(messages)), state=session.state,
            internal=session.internal,
            approvals={k: a.to_dict() for k, a in session.approvals.items()}))
        live.committed = len(messages)
        live.stored()

    def greets(self) -> bool:
        """Whether a new conversation (no state) shows something before it first waits for
        the user: a message of its own, a model call, anything but asking the user first.
        Only the template's generator runs, to its first request, outside any run (no
        event, no span, nothing answered or stored). The chat page stores a conversation on
        opening only if it greets; else with its first message (docs/serving.md). A
        template that fails here greets: its failure is for the conversation's first run to
        show."""
        flow = self.runner.template.render(Session())
        try:
            step = flow.send(None)
            while not isinstance(step, Request):  # messages and events, up to a request
                if isinstance(step, Message) and step.role != "system":
                    return True
                step = flow.send(None)
        except Exception:  # (StopIteration: it ends at once; that, too, is for a run to show)
            return True
        finally:
            with contextlib.suppress(Exception):
                flow.close()
        return not isinstance(step, AskUser)

    # -- turns ---------------------------------------------------------------------------

    async def create(self, state: dict[str, Any], sink: Sink | None, *,
                     owner: str = DEFAULT_OWNER, conversation_id: str | None = None
                     ) -> tuple[int, dict[str, Any]]:
        """A new conversation run to its first pause; ``conversation_id``: the id a client
        chose (an AG-UI thread's), else a new one."""
        conversation_id = conversation_id or secrets.token_urlsafe(16)
        try:
            json.dumps(state)
        except TypeError as exc:
            raise Invalid(f"state must be a JSON object: {exc}") from exc
        store = self.store
        lease = None
        if isinstance(store, Creating):  # created with its lease: no turn comes between
            lease = store.created(conversation_id, state, owner=owner)
        else:
            await store.create(conversation_id, state, owner=owner)
        async with self.turns.hold(conversation_id, lease) as turn:
            if turn is None:  # a client's id that another request just took
                raise Conflict("a turn is running in this conversation: wait for it to end, "
                               "then send again")
            live = self._start(conversation_id, Session(state=state))
            code, body = await self._advance(live, None, sink, first=True)
        return (201 if code == 200 else code), body

    @contextlib.asynccontextmanager
    async def turn(self, conversation_id: str, stored: Stored | None = None) -> Any:
        """The paused conversation, its lease held (and renewed) while the block runs.
        ``stored``: its row as the route read it (``live``)."""
        async with self.turns.hold(conversation_id) as turn:
            if turn is None:
                raise Busy("a turn is running in this conversation: wait for it to end, then "
                           "send again")
            yield await self.live(conversation_id, stored, leased=turn.row)

    def expect(self, live: Live, waits: Collection[str], what: str) -> None:
        """A ``Conflict`` (409) saying what to do first unless ``live`` waits for one of
        ``waits`` (``Live.waits``)."""
        if live.waits in waits:
            return
        if live.waits == "client_tool":
            calls = client_calls(live.pending)
            raise Conflict("the conversation waits for the results of frontend tool calls "
                           f"({', '.join(c.id for c in calls)}): the client that offered the "
                           f"tools sends them, not {what}")
        said = _CONFLICTS.get(live.waits or "", "the conversation is waiting for a message, "
                                                "not {what}")
        raise Conflict(said.format(id=live.id, what=what))

    async def message(self, live: Live, content: Content, sink: Sink | None, *,
                      message_id: str | None = None) -> tuple[int, dict[str, Any]]:
        """The user's message, stored under ``message_id`` when the client gave one (AG-UI's,
        the AI SDK's), else under a new id."""
        self.expect(live, ("user", "operator"), "a message")
        if live.waits == "operator":  # stored, and no model answers it
            return await self.hand_off(live, Message("user", content, id=message_id), sink)
        live.user_id = message_id  # the template makes the message: its id is given here
        return await self._advance(live, content, sink)

    async def hand_off(self, live: Live, said: Message | None, sink: Sink | None
                       ) -> tuple[int, dict[str, Any]]:
        """Answer the pending handoff (``convo.serve._http.operators``): a message said during it,
        or ``None`` to hand the conversation back to the bot."""
        assert live.waits == "operator"
        await self._known_queue(live)
        return await self._advance(live, said, sink)

    async def approve(self, live: Live, decisions: list[dict[str, Any]], sink: Sink | None,
                      *, operator: bool = True, staff: bool = False
                      ) -> tuple[int, dict[str, Any]]:
        """Decide the pending calls (``operator``: whether the caller is one; a user cannot
        decide calls whose tool's ``approver`` is ``"operator"``). ``staff``: the caller is
        an operator deciding another user's calls; a staff decision (that, or an operator
        deciding a call only operators may) is ``Approval(by="staff")``, and a rejection
        then reads "Rejected by staff", to the model and to the user."""
        self.expect(live, ("approval",), "approvals")
        pending = live.pending
        assert isinstance(pending, Approve)  # (what a conversation waiting for "approval" is at)
        if not operator and pending.needs_operator:
            raise Forbidden("this approval waits for an operator: an operator must decide it "
                            "(the tool's approver is 'operator'), not the user")
        by_id = {d["call_id"]: d for d in decisions}
        calls = pending.calls
        unknown = sorted(set(by_id) - {c.id for c in calls})
        missing = [c.id for c in calls if c.id not in by_id]
        if unknown or missing:
            parts = ([f"decide every pending call; missing: {', '.join(missing)}"]
                     if missing else []) + ([f"unknown call ids: {', '.join(unknown)}"]
                                           if unknown else [])
            raise Invalid("; ".join(parts))
        answers = [live.run.state.decided(c, Approval(
            bool(by_id[c.id]["approve"]), by_id[c.id].get("reason"),
            by="staff" if staff or (operator and pending.approver(i) == "operator")
            else "user")) for i, c in enumerate(calls)]
        await self._known_queue(live)
        return await self._advance(live, answers, sink)

    async def retry(self, live: Live, sink: Sink | None) -> tuple[int, dict[str, Any]]:
        self.expect(live, ("retry",), "a retry")
        await self._known_queue(live)
        return await self._advance(live, None, sink, retry=True)

    def offer(self, live: Live, tools: list[dict[str, Any]]) -> None:
        """The tools the conversation's front end offers from now on (``[]``: none), kept with
        it (``convo.tools._frontend``) and written with the turn's next write."""
        internal = live.session.internal
        if internal.get(FRONTEND_TOOLS, []) == tools:
            return
        if tools:
            internal[FRONTEND_TOOLS] = tools
        else:
            internal.pop(FRONTEND_TOOLS, None)
        live.offers_changed = True

    async def tool_results(self, live: Live, results: Mapping[str, tuple[str, str | None]],
                           sink: Sink | None) -> tuple[int, dict[str, Any]]:
        """The client's results of the frontend tool calls the conversation waits on (by call
        id: the text and the id its tool message is stored under); the batch's other calls
        run now, and the turn goes on."""
        self.expect(live, ("client_tool",), "tool results")
        calls = client_calls(live.pending)
        if not calls:
            raise Conflict("the conversation waits for no frontend tool result: POST "
                           f"/api/conversations/{live.id}/retry to finish its turn")
        missing = [c.id for c in calls if c.id not in results]
        if missing:
            raise Invalid(f"send the result of every pending frontend tool call; missing: "
                          f"{', '.join(missing)}")
        pending = live.pending
        assert isinstance(pending, RunTools)
        others = [i for i in pending.invocations if not isinstance(i.tool, FrontendTool)]
        ran = iter(await live.run.answerer.aanswer(RunTools(tuple(others))) if others else [])
        runs = [ToolRun(results[i.call.id][0]) if isinstance(i.tool, FrontendTool)
                else next(ran) for i in pending.invocations]
        for call_id, (_, message_id) in results.items():
            if message_id is not None:
                live.tool_ids[call_id] = message_id
        return await self._advance(live, runs, sink)

    async def settle(self, live: Live) -> None:
        """Write where a conversation just rebuilt waits (no turn ran)."""
        await self._commit(live, final=True)

    async def _advance(self, live: Live, answer: Any, sink: Sink | None, *,
                       first: bool = False, retry: bool = False) -> tuple[int, dict[str, Any]]:
        """Answer the pending request (with ``retry``, make it again) and drive the
        conversation to its next pause: what each step added is committed before the next one
        starts (``Served``, made for this drive with the turn's inputs); a model call that
        failed is said with a 502 (the conversation waits for a retry)."""
        live.sink, added_from = sink, live.committed
        live.running = True  # said in the store with the turn's first write
        done = False
        try:
            served = Served(live.run.answerer, commit=lambda: self._commit(live),
                            cancel=self._cancel(live.id), live=live, steered=self._steered)
            pause = await adrive(live.run.driver, served, live.pending if retry else None,
                                 start=answer)
            if served.failed is not None:
                raise served.failed
            live.paused(pause)
            failure = None if pause is None else pause.error
            done = True
        finally:
            if not done:  # cancelled (the server stops): rebuilt from the store next time
                live.sink = None
                self._cache.pop(live.id, None)
            try:
                await self._commit(live, final=done)  # the last step's messages shown here
            finally:
                live.sink = None
        self._keep(live)
        if live.queued and live.pending is not None:  # taken once this turn's lease is free
            self._watch(live.id)
        elif done and (turn := self.turns.running.get(live.id)) is not None:
            turn.finishing = True  # shown waiting: a message sent now waits for the lease
        if sink is not None:
            self._ended(live, sink)
        body = live.view(added_from)
        outcome = live.session.outcome
        if failure is not None:
            return 502, {"error": failure, **body}
        if outcome is not None and outcome.status == "error":
            return 500, {"error": outcome.error or "the conversation failed", **body}
        return 200, body

    async def _commit(self, live: Live, *, final: bool = False) -> None:
        """Write what the turn added so far; then (and only then) let the client see it. The
        turn's first write also says it runs (``running``), unless it is the last (``final``:
        where it now waits)."""
        change, fresh = live.change(final=final)
        running = live.running and not final
        if running:
            change = attrs.evolve(change, status="running")
        if fresh or change.subroutines or change.state is not None \
                or change.internal is not None or change.approvals is not None or final \
                or running:
            await self.store.write(live.id, change)
        live.running = False
        live.stored()
        live.committed += len(fresh)
        sink = live.sink
        if sink is not None:
            for index, message in fresh:
                if live.retracted and message.role == "assistant":  # a guard's replacement
                    live.retracted = False
                    sink(Retract(message.id))
                for event in committed(index, message):
                    sink(event)

    def _ended(self, live: Live, sink: Sink) -> None:
        """The served events of a turn that is over: where it waits, and whether it was
        stopped before its end (its cancel set: the turn still holds its lease here)."""
        cancel = self._cancel(live.id)
        if cancel is not None and cancel.is_set():
            sink(Paused())
        waiting = live.waiting_for()
        if waiting is not None:
            sink(WaitingFor(waiting))

    # -- messages while a turn runs (API.md §26) -------------------------------------------

    def _queues(self) -> Queues:
        store = self.store
        if not isinstance(store, Queues):
            raise Conflict(f"this server's store ({type(store).__name__}) keeps no queue of "
                           "messages: send again once the turn has ended")
        return store

    async def _known_queue(self, live: Live) -> None:
        """Read the conversation's queue before a turn that may be followed by its messages
        (an approval, a retry, a hand-back: another worker may have queued them)."""
        if isinstance(self.store, Queues):
            live.queued = await self.store.queued(live.id)

    async def enqueue(self, conversation_id: str, content: Content, *, steer: bool,
                      message_id: str | None = None) -> dict[str, Any]:
        """Queue a message sent while a turn runs: stored before this returns, answered once
        the turn ends (``steer``: handed to the turn at its next safe point), stored under
        ``message_id`` when the client gave one (AG-UI's, the AI SDK's), else a new id. The
        body of the 202: ``{"queued": the message}``."""
        queued = await self._stored_queued(conversation_id, content, steer, message_id)
        cached = self._cache.get(conversation_id)
        if cached is not None:  # the running turn, if it runs here, sees it at once
            cached.queued.append(queued)
        self._watch(conversation_id)
        return {"queued": queued.message.to_dict()}

    async def _stored_queued(self, conversation_id: str, content: Content, steer: bool,
                             message_id: str | None) -> Queued:
        """The message queued in the store (both engines' ``enqueue``): ``NotFound`` for no
        such conversation, ``Full`` past ``max_queued``."""
        queued = Queued(Message("user", content, id=message_id or new_message_id()), steer)
        if not await self._queues().enqueue(conversation_id, queued, limit=self.max_queued):
            if await self.store.load(conversation_id, messages=False) is None:
                raise NotFound(f"no conversation {conversation_id!r}")
            raise Full(f"{self.max_queued} messages are queued in this conversation already "
                       "(max_queued): wait until some are answered, or withdraw one")
        return queued

    async def withdraw(self, conversation_id: str, message_id: str) -> None:
        """Drop a queued message not yet taken (``NotFound`` when there is none)."""
        if not await self._queues().withdraw(conversation_id, message_id):
            raise NotFound(f"no message {message_id!r} is queued in conversation "
                           f"{conversation_id!r} (it was taken, withdrawn, or never queued)")
        cached = self._cache.get(conversation_id)
        if cached is not None:
            cached.queued = [q for q in cached.queued if q.message.id != message_id]

    async def _steered(self, live: Live) -> tuple[Message, ...]:
        """At the running turn's safe point, when the head of the queue this worker knows is
        steered (``Served`` looks first: nothing queued costs no call): the steered messages at
        the head of the stored queue, which leave it in the write that adds them to the
        messages (``Live.dequeuing``)."""
        queue = await self._queues().queued(live.id)  # withdrawn ones are gone
        taken = []
        for queued in queue:
            if not queued.steer:
                break
            taken.append(queued.message)
        live.queued = queue[len(taken):]
        live.dequeuing.update(m.id for m in taken if m.id is not None)
        return tuple(taken)

    async def interrupt(self, conversation_id: str, again: Callable[[], Awaitable[T]]) -> T:
        """Stop the running turn as a cancel does (API.md §20), then ``again()`` (what the
        message that interrupts it makes: its turn); a few tries, as a turn that another
        request started meanwhile is stopped too. ``again`` raises ``Busy`` while a turn
        runs."""
        async with self.interrupting(conversation_id):
            for _ in range(3):
                await self.turns.stop(conversation_id)
                try:
                    return await again()
                except Busy:
                    continue
        raise Busy("a turn is running in this conversation and others keep starting: send "
                   "again")

    @contextlib.asynccontextmanager
    async def interrupting(self, conversation_id: str) -> AsyncIterator[None]:
        """While an interrupt stops the running turn and takes its lease, this worker's
        drains of the queue wait (the interrupting message is answered first)."""
        self._interrupting[conversation_id] = self._interrupting.get(conversation_id, 0) + 1
        try:
            yield
        finally:
            left = self._interrupting.pop(conversation_id) - 1
            if left:
                self._interrupting[conversation_id] = left

    def _watch(self, conversation_id: str) -> None:
        """Drain the conversation's queue once no turn holds it (one watcher per
        conversation in this worker). A watcher asked again while it looks (a message
        queued here after it read the queue empty) looks once more before it stops."""
        if conversation_id in self._watching:
            self._watching[conversation_id] = True
            return
        self._watching[conversation_id] = False
        task = asyncio.ensure_future(self._drain_when_free(conversation_id))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _drain_when_free(self, conversation_id: str) -> None:
        """The watcher (``_watch``). It reads the queue without the lease; a message queued
        here after that read (while a turn another worker began meanwhile runs) asks it again,
        and it looks at that ask and stops in one step of the event loop: every message
        queued here is read by this watcher or by the one the next ``_watch`` starts."""
        try:
            while True:
                turn = self.turns.running.get(conversation_id)
                if turn is not None:
                    await turn.stopped.wait()
                elif conversation_id in self._interrupting \
                        or await self.store.running(conversation_id):
                    await asyncio.sleep(POLL_S)  # (another worker's turn: its lease is read)
                else:
                    self._watching[conversation_id] = False  # asked before: read below
                    if (not await self._takes_messages(conversation_id)
                            or await self.drain(conversation_id)) \
                            and not self._watching[conversation_id]:
                        return
        except (StoreError, Refused) as exc:  # the queue stays: the next turn takes it
            logger.warning("conversation %s: its queue was not taken: %s", conversation_id,
                           exc, extra={"convo_fields": None})
        finally:
            self._watching.pop(conversation_id, None)

    async def _takes_messages(self, conversation_id: str) -> bool:
        """Whether the conversation waits for a message (read without its lease: a watcher
        does not hold the lease of one that waits for a retry or an approval, which its
        client may be sending)."""
        row = await self.store.load(conversation_id, messages=False)
        return row is not None and row.status == "waiting" and isinstance(
            row.waiting_for, dict) and row.waiting_for.get("type") == "user"

    async def drain(self, conversation_id: str) -> bool:
        """Answer the head of the conversation's queue as a turn of its own (its lease held);
        ``True`` when nothing more is to be taken now (the queue is empty, the conversation
        waits for something else than a message, or it is gone), ``False`` when another turn
        held the lease. The queue is read first without the lease: an empty one takes no
        lease, so a message sent meanwhile is answered, not refused as if a turn ran."""
        if not await self._queues().queued(conversation_id):
            return True
        async with self.turns.hold(conversation_id) as turn:
            if turn is None:
                return False
            try:
                live = await self.live(conversation_id, leased=turn.row)
            except (NotFound, Conflict):  # deleted, or ended (its queue was dropped)
                return True
            return await self.take_queued(live)

    async def take_queued(self, live: Live) -> bool:
        """Answer the head of the conversation's stored queue as a turn of its own (the
        caller holds its turn: ``drain``'s lease, a Temporal workflow's lock); ``True`` when
        nothing more is to be taken now (``drain``)."""
        queue = live.queued = await self._queues().queued(live.id)
        if not queue or live.waits != "user":
            return True  # (an approval, an operator or a retry first: the queue stays)
        head = queue[0].message
        live.user_id = head.id
        live.dequeuing.add(head.id or "")
        live.queued = queue[1:]
        await self._advance(live, head.content, None)
        return not live.queued

    async def get(self, conversation_id: str, stored: Stored | None = None, *,
                  originals: bool = False) -> dict[str, Any]:
        """The conversation as a client sees it; ``stored``: all of it, as the route read it;
        ``originals``: as operators see it (the originals of what guards blocked)."""
        if stored is None:
            stored = await self.store.load(conversation_id)
        if stored is None:
            raise NotFound(f"no conversation {conversation_id!r}")
        if stored.status == "running":  # running, or cut off (its worker died)?
            async with self.store.turn(conversation_id) as taken:
                if taken:  # nobody runs it: it was cut off, and now waits for a retry
                    live = await self._rebuild(conversation_id)
                    await self._commit(live, final=True)
                    return live.view(originals=originals)
        return stored_view(stored, stored.queued if stored.status != "ended" else (),
                           originals=originals)

    async def cancel(self, conversation_id: str, *, known: bool = False) -> dict[str, Any]:
        """Stop the running turn (here or in another worker); the conversation once it
        stopped. ``known``: the route read its row already."""
        if not known and await self.store.load(conversation_id, messages=False) is None:
            raise NotFound(f"no conversation {conversation_id!r}")
        if not await self.turns.stop(conversation_id):
            raise Conflict("no turn is running in this conversation: there is nothing "
                                   "to cancel")
        body = await self.get(conversation_id)
        if body.get("queued"):  # taken as if posted now (API.md §26)
            self._watch(conversation_id)
        return body

    async def delete(self, conversation_id: str) -> None:
        """A running turn is stopped first, so nothing it would write stays."""
        await self.turns.stop(conversation_id)
        self._cache.pop(conversation_id, None)
        if not await self.store.delete(conversation_id):
            raise NotFound(f"no conversation {conversation_id!r}")

