"""``ConvoConversation``: a conversation as a Temporal workflow, convo's own driver inside it.

The workflow runs the served engine (``convo.serve._engine``) on two stand-ins: a store whose
reads are activities and whose writes go with the next activity (``ActivityStore``), and an
answerer in front of the live one that makes every model call, tool call, MCP listing and hook
an activity, and a ``ModelGuard`` judge's call and an async guard check too (``Activities``). A
person's inputs are Updates (``message``, ``approve``, ``operator_message``, ``handback``,
``retry``, ``tool_results``; ``cancel`` stops the running turn) that return ``{"conversation",
"added", "code"}``: the conversation's row as §9 shows it but its messages (they are in the
store; an Update's result is kept in the history, which must not hold the transcript once per
turn), the messages the turn added, and the HTTP status the turn answers (200, 502 with
``error``, 500); the conversation is the Query ``conversation`` (§9's JSON, with its messages).
Refused inputs are rejected by the Update's validator with §9's words (``ApplicationError`` of
type ``Conflict``, ``Invalid``…). A message queued in the store while a turn runs (§26) is the
Signal ``queued``: steered to the running turn at its next safe point, or taken by the run
between turns, in order (an interrupt's ``cancel`` holds the queue until the interrupting
message's turn starts). A run started with a client's ``history`` (§25) replays it, stores it
and goes on, or is refused (the Update ``opened`` says why) with nothing stored; one started
with a ``branch`` (§28: where to branch from) makes it in the activity ``convo.branch``, then
goes on as the branch, rebuilt from the store (a dry run makes nothing and ends once ``opened``
said its ``not_undone``).

Deterministic by construction: the run's clock is the workflow's (``workflow.time``), new
message ids come from ``workflow.uuid4``, and nothing else the pump reads is of the process.
Once ``continue_every`` turns ran (Updates that ran one, and the turns of queued messages
the run took), the workflow continues as new and rebuilds the
conversation from the store (one ``load``), as a served rebuild does; a new run started after
its old one failed (a deploy changed the template under it) finishes the turn the store shows
cut off first.

(Over 300 lines: the workflow, its Updates and the two stand-ins it runs the served engine
on; each is short.)
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any, Final

import attrs
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError

from .._errors import ModelError
from .._internal import CONTEXT
from .._messages import Message
from .._reply import UNREPORTED, Usage
from .._requests import CallModel, CheckGuards, ListTools, RunHooks, RunTools
from .._run import guarding
from .._run.cancel import CANCELLED, Scope
from .._run.replay import Replay
from .._run.stack import Forwarding
from .._run.state import RunState
from .._runner import Runner
from .._session import Session
from ..guards._base import Checked, ModelGuard
from ..serve._engine import Engine
from ..serve._events import Retract, ServedEvent
from ..serve._live import Live
from ..serve._problems import Conflict, Forbidden, Invalid, NotFollowed, NotFound
from ..serve._stores.base import DEFAULT_OWNER, Change, Queued, Queues, Stored
from ..serve._turns import Cancel
from ..templates._tree import toolsets
from ..tools._calls import ToolRun
from ..tools._mcp.server import MCPServer
from ..tools._mcp.tool import MCPTool
from ..tools._toolset import Listed, Toolset
from . import wire as wire
from .bots import Bot, bot, judges
from .checks import Unplaced, checks

WORKFLOW: Final = "ConvoConversation"
STORE_TIMEOUT: Final = timedelta(minutes=2)
CALL_TIMEOUT: Final = timedelta(hours=1)  # a model call or a tool may be long; heartbeats
# A lost worker's activity runs again (its heartbeat stopped); a failure is no reason to.
AGAIN: Final = RetryPolicy(initial_interval=timedelta(milliseconds=200), backoff_coefficient=2.0,
                           maximum_interval=timedelta(seconds=5))


#: How long the queue waits for an interrupt's message (sent once the turn it stopped ended).
HOLD: Final = timedelta(seconds=30)
#: How long a refused history's run waits for the front to read why.
REFUSED_KEPT: Final = timedelta(minutes=1)
NOTHING_RUNS: Final = "no turn is running in this conversation: there is nothing to cancel"
#: The served problems an activity refuses with (their type's name), said by the run as such.
_REFUSED: Final = ("Conflict", "Invalid", "NotFound", "Unsupported", "NotFollowed")


def workflow_id(conversation_id: str) -> str:
    return f"convo-{conversation_id}"


def _refusal(exc: Exception) -> ApplicationError:
    details = (exc.at, exc.wants) if isinstance(exc, NotFollowed) else ()
    return ApplicationError(str(exc), *details, type=type(exc).__name__, non_retryable=True)


class ActivityStore:
    """The store as the workflow sees it: reads are activities; writes are held and go with
    the next activity (``take``), or on their own at the end of a turn (``flush``). So do
    the retracts of a streamed turn (``retracts``: the ids of the replies a live output guard
    took back), which the activity publishes where the reply's text went (``deltas.py``)."""

    lease = 0.0

    def __init__(self) -> None:
        self.held: list[dict[str, Any]] = []
        self.retracts: list[str | None] = []

    async def create(self, conversation_id: str, state: dict[str, Any], *,
                     owner: str = DEFAULT_OWNER) -> None:
        await workflow.execute_activity(
            "convo.create", {"conversation_id": conversation_id, "state": state,
                             "owner": owner},
            start_to_close_timeout=STORE_TIMEOUT, retry_policy=AGAIN)

    async def load(self, conversation_id: str, *, messages: bool = True) -> Stored | None:
        data = await workflow.execute_activity(
            "convo.load", {"conversation_id": conversation_id},
            start_to_close_timeout=STORE_TIMEOUT, retry_policy=AGAIN)
        return wire.stored_from(data)

    async def write(self, conversation_id: str, change: Change) -> None:
        self.held.append(wire.change_json(change))

    async def queued(self, conversation_id: str) -> list[Queued]:
        """The conversation's stored queue, once the writes held are written."""
        said = await workflow.execute_activity(
            "convo.queued", self.take(conversation_id), start_to_close_timeout=STORE_TIMEOUT,
            retry_policy=AGAIN)
        return [wire.queued_from(q) for q in said]

    def take(self, conversation_id: str) -> dict[str, Any]:
        held, self.held = self.held, []
        taken: dict[str, Any] = {"conversation_id": conversation_id, "changes": held}
        if self.retracts:
            taken["retracts"], self.retracts = self.retracts, []
        return taken

    async def flush(self, conversation_id: str) -> None:
        if self.held or self.retracts:
            await workflow.execute_activity(
                "convo.write", self.take(conversation_id),
                start_to_close_timeout=STORE_TIMEOUT, retry_policy=AGAIN)


class Activities(Forwarding):
    """In front of the run's live answerer: model calls, tool calls and hooks are activities
    (answered from the store by reference: ``convo._temporal.activities``). A model call is
    counted here as the live answerer counts it (its limits checked first; the calls and the
    usage the activity made added to the run's); ``streaming()`` says whether a client
    streams the turn (the activity then publishes its text: ``deltas.py``) and ``named`` is
    given the id the activity chose for the streamed reply (it is stored under it)."""

    __slots__ = ("checks", "conversation_id", "heartbeat", "hooks_at", "hooks_ran", "judges",
                 "named", "run_state", "scopes", "store", "streaming", "toolsets")

    def __init__(self, inner: Any, store: ActivityStore, conversation_id: str,
                 heartbeat_s: float, *, streaming: Callable[[], bool] = lambda: False,
                 named: Callable[[str], None] = lambda reply_id: None,
                 scopes: Callable[[], list[Scope] | None] = lambda: None,
                 tree: Sequence[Toolset] = (), judged: Sequence[Any] = (),
                 checked: Sequence[Any] = ()) -> None:
        super().__init__(inner)
        self.store = store
        self.conversation_id = conversation_id
        self.run_state: RunState = inner.state
        self.heartbeat = timedelta(seconds=heartbeat_s)
        self.streaming = streaming
        self.named = named
        self.scopes = scopes  # where the running turn's cancel cuts the model call
        self.toolsets = tree  # the template's toolsets: an activity finds them by place
        self.hooks_at, self.hooks_ran = -1, 0  # hooks answered since message hooks_at
        self.judges = judged  # the bot's ModelGuards: an activity finds one by place
        self.checks = checked  # the bot's async checks: an activity finds one by place

    async def _call(self, name: str, activity_id: str | None = None, **more: Any) -> Any:
        return await workflow.execute_activity(
            name, {**self.store.take(self.conversation_id), **more}, activity_id=activity_id,
            start_to_close_timeout=CALL_TIMEOUT, heartbeat_timeout=self.heartbeat,
            retry_policy=AGAIN)

    async def acall_model(self, request: CallModel) -> Message:
        state = self.run_state
        state.admit_model_call()  # (a limit reached ends the run here, as in one process)
        # A cancel cuts the call: the activity is asked to stop, and answers with the text
        # streamed so far, marked (or, cut before it started, nothing: an empty reply).
        call = workflow.start_activity(
            "convo.model", {**self.store.take(self.conversation_id),
                            "stream": self.streaming()},
            start_to_close_timeout=CALL_TIMEOUT, heartbeat_timeout=self.heartbeat,
            retry_policy=AGAIN,
            cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED)
        scope, scopes = Scope(), self.scopes()
        scope.tasks.append(call)
        if scopes is not None:
            scopes.append(scope)
        try:
            answer = await call
        except ActivityError as exc:
            cause = exc.cause
            if isinstance(cause, ApplicationError) and cause.type == "ModelError":
                raise ModelError(cause.message) from None
            if scope.hit and isinstance(cause, CancelledError):
                state.model_calls += 1
                state.used(UNREPORTED, reported=False)
                return Message("assistant", "", metadata={CANCELLED: True})
            raise
        finally:
            if scopes is not None:
                scopes.remove(scope)
        calls = int(answer.get("model_calls", 1))
        usage = Usage.from_dict(answer["usage"]) if "usage" in answer else UNREPORTED
        state.model_calls += calls
        state.used(usage, reported=usage.unreported < calls)
        reply = Message.from_dict(answer["message"])
        if "context" in answer:  # the summary the call made: kept (and stored) with the run's
            state.session.internal[CONTEXT] = answer["context"]
        # What a client was shown of the reply (the activity streamed it): a live output
        # guard that trips on it retracts it (``convo._run.guarding``), as in one process.
        state.partial, state.held_text, state.reasoning = [], None, []
        if answer.get("reply_id"):
            self.named(answer["reply_id"])
            state.partial.append(reply.text)
        return reply

    async def acheck_guards(self, request: CheckGuards) -> Checked | None:
        """Checked here, as the live answerer checks (its events, what a client is shown),
        but no check that may do I/O runs in workflow code: a ``ModelGuard``'s judge asks its
        model in the activity ``convo.judge``, and an ``async def`` check runs in the activity
        ``convo.guard``; their answers are in the history, and a replay of the workflow does
        not ask again. A guard of either kind that is not the bot's (made while the
        conversation ran: ``convo._temporal.checks``) trips, saying why."""
        return await guarding.aanswer(self.run_state, request, self._judged)

    def _judged(self, guard: Any) -> Any:
        if guard.inline:  # a plain function: answered here
            return guard
        if isinstance(guard, ModelGuard):
            place = next((i for i, g in enumerate(self.judges) if g is guard), None)
            model: Any = Unplaced(guard.label) if place is None \
                else _Judge(place, self.heartbeat)
            return attrs.evolve(guard, model=model)
        place = next((i for i, g in enumerate(self.checks) if g is guard), None)
        return attrs.evolve(guard, check=Unplaced(guard.label) if place is None
                            else _Check(place, self))

    async def arun_tools(self, request: RunTools) -> list[ToolRun]:
        calls = [i.call.id for i in request.invocations]  # (a batch's frontend calls not)
        answer = await self._call("convo.tools",
                                  f"tools-{'+'.join(calls)}-{workflow.uuid4().hex[:8]}",
                                  calls=calls)
        self._take_state(answer.get("state"))
        runs = wire.runs_from(answer["runs"])
        self.run_state.tool_calls += sum(1 for r in runs if r.skipped is None)
        return runs

    async def alist_tools(self, request: ListTools) -> list[Listed]:
        """An MCP server's listing is I/O: the activity ``convo.list_tools`` lists it (named
        by its place among the template's toolsets) and the workflow makes its tools from
        what it says; other toolsets are listed here (no I/O)."""
        places = [_place(self.toolsets, t) for t in request.toolsets]
        asked = [p for p in places if p is not None]
        if not asked:
            return await self.inner.aanswer(request)  # type: ignore[no-any-return]
        remote = iter(await workflow.execute_activity(
            "convo.list_tools", {"toolsets": asked}, start_to_close_timeout=STORE_TIMEOUT,
            retry_policy=AGAIN))
        local = tuple(t for t, p in zip(request.toolsets, places, strict=True) if p is None)
        here = iter(await self.inner.aanswer(ListTools(local)) if local else ())
        listed: list[Listed] = []
        for toolset, place in zip(request.toolsets, places, strict=True):
            if place is None:
                listed.append(next(here))
                continue
            said = next(remote)
            listed.append(Listed(tuple(
                MCPTool(toolset, name, description, parameters, listed_late=late)  # type: ignore[arg-type]
                for name, description, parameters, late in said["tools"]), said["error"]))
        return listed

    async def arun_hooks(self, request: RunHooks) -> None:
        """The hooks, in an activity told how many hooks ran since the last message (its
        rebuild stops at this one)."""
        if self.run_state.added != self.hooks_at:
            self.hooks_at, self.hooks_ran = self.run_state.added, 0
        answer = await self._call("convo.hooks", after=self.hooks_ran)
        self.hooks_ran += 1
        self._take_state(answer.get("state"))

    def _take_state(self, state: dict[str, Any] | None) -> None:
        if state is not None:  # what the tools or hooks did to it, in the activity
            session_state = self.run_state.session.state
            session_state.clear()
            session_state.update(state)


class _Judge:
    """A ``ModelGuard``'s model inside the workflow: its call is the activity ``convo.judge``
    (the guard named by its place among the bot's judges); a failure is raised as the model
    raised it (its type's name and message), so the verdict reads as in one process."""

    def __init__(self, place: int, heartbeat: timedelta) -> None:
        self.place = place
        self.heartbeat = heartbeat

    def complete(self, messages: Sequence[Message]) -> Message:
        raise TypeError("a judge runs on the workflow's loop: acomplete")

    async def acomplete(self, messages: Sequence[Message]) -> Message:
        try:
            text = await workflow.execute_activity(
                "convo.judge", {"judge": self.place,
                                "messages": [m.to_dict() for m in messages]},
                start_to_close_timeout=CALL_TIMEOUT, heartbeat_timeout=self.heartbeat,
                retry_policy=AGAIN)
        except ActivityError as exc:
            raise _as_raised(exc) from None
        return Message("assistant", str(text))


def _as_raised(exc: ActivityError) -> Exception:
    """What a judge's or a check's activity raised, as it raised it (its type's name and its
    message), so the guard trips on it as in one process; else the activity's error."""
    cause = exc.cause
    if isinstance(cause, ApplicationError) and cause.type:
        raised: Exception = type(cause.type, (Exception,), {})(cause.message)
        return raised
    return exc


class _Check:
    """An ``async def`` guard check inside the workflow: the activity ``convo.guard`` (the
    guard named by its place among the bot's ``checks``), given the value and where it is, and
    the workflow's writes so far (the activity reads the conversation, ``ctx.session``, from
    the store); a check that raised is raised again as it raised (its type's name and
    message), so the guard trips as in one process."""

    def __init__(self, place: int, calls: Activities) -> None:
        self.place = place
        self.calls = calls

    async def __call__(self, value: Any, ctx: Any) -> Any:
        call = ctx.call
        calls = self.calls
        try:
            said = await workflow.execute_activity(
                "convo.guard", {**calls.store.take(calls.conversation_id),
                                "guard": self.place, "value": value, "scope": list(ctx.scope),
                                "call": None if call is None else call.to_dict()},
                start_to_close_timeout=CALL_TIMEOUT, heartbeat_timeout=calls.heartbeat,
                retry_policy=AGAIN)
        except ActivityError as exc:
            raise _as_raised(exc) from None
        return said["result"]


def _place(tree: Sequence[Toolset], toolset: Toolset) -> int | None:
    """Where an MCP server is among the template's toolsets (``None``: another toolset)."""
    if not isinstance(toolset, MCPServer):
        return None
    return next((i for i, t in enumerate(tree) if t is toolset), None)


def _said(code: int, body: dict[str, Any]) -> dict[str, Any]:
    """An Update's answer: the row but its messages, what the turn added, the status."""
    added = body.pop("added", [])
    body.pop("messages", None)  # in the store: the history holds each message once
    said: dict[str, Any] = {"conversation": body, "added": added, "code": code}
    if "error" in body:
        said["error"] = body.pop("error")
    if "not_undone" in body:  # (a branch made by the run: what it did not undo)
        said["not_undone"] = body.pop("not_undone")
    return said


def _clock() -> float:
    """The workflow's time; 0 when a run evicted from the worker's cache closes outside it."""
    return workflow.time() if workflow.in_workflow() else 0.0


def _now() -> str:
    """The workflow's time, as a record says it (``convo._record.recorder.now``); nothing
    when a run evicted from the worker's cache closes outside it."""
    return workflow.now().isoformat(timespec="seconds") if workflow.in_workflow() else ""


def _new_id() -> str:
    return f"msg_{workflow.uuid4().hex}"


class WorkflowEngine(Engine):
    """The served engine inside a workflow: its runs on the workflow's clock and ids, their
    side effects activities."""

    def __init__(self, runner: Runner, store: ActivityStore, heartbeat_s: float) -> None:
        super().__init__(runner, store, cache_size=1)  # type: ignore[arg-type]
        self.heartbeat_s = heartbeat_s
        self.streaming = False  # a client streams the running turn (its Update said so)
        self.current: Cancel | None = None  # the running turn's cancel (the Update cancel)
        self.toolsets = toolsets(runner.template)
        self.judges = judges(runner)
        self.checks = checks(runner)
        self.draining = False  # messages are queued: the workflow takes them between turns

    def _watch(self, conversation_id: str) -> None:
        self.draining = True  # (no task of its own: the workflow's run takes the queue)

    def _queues(self) -> Queues:
        return self.store  # type: ignore[return-value]  # (its queue: an activity reads it)

    async def _advance(self, live: Live, answer: Any, sink: Any, *, first: bool = False,
                       retry: bool = False) -> tuple[int, dict[str, Any]]:
        """The served engine's, with a sink while a client streams the turn: the only served
        event the workflow itself makes of it is a live guard's ``Retract`` (its text and
        messages reach the client from the activities and the store), sent on to the HTTP
        front with the next activity."""
        if sink is None and self.streaming:
            sink = self._retracted
        return await super()._advance(live, answer, sink, first=first, retry=retry)

    def _retracted(self, event: ServedEvent) -> None:
        if isinstance(event, Retract):
            store = self.store
            assert isinstance(store, ActivityStore)
            store.retracts.append(event.message_id)

    def _cancel(self, conversation_id: str) -> Cancel | None:
        return self.current

    def _start(self, conversation_id: str, session: Session, *,
               saved: Session | None = None, replaying: type[Replay] = Replay) -> Live:
        store = self.store
        assert isinstance(store, ActivityStore)
        made: list[Live] = []  # (the Live is made once its run is)

        def named(reply_id: str) -> None:
            made[0].reply_id = reply_id

        run = self.runner.start(session, saved=saved, replaying=replaying, clock=_clock,
                                layers=(lambda live: Activities(
                                    live, store, conversation_id, self.heartbeat_s,
                                    streaming=lambda: self.streaming, named=named,
                                    scopes=lambda: None if self.current is None
                                    else self.current.scopes, tree=self.toolsets,
                                    judged=self.judges, checked=self.checks),))
        if saved is not None:
            run.answerer.quiet()  # (as a served rebuild: nothing recorded twice)
        live = Live(conversation_id, run, replaying=saved is not None, new_id=_new_id,
                    clock=_now)
        made.append(live)
        run.state.listen(live.on_event)
        return live


@workflow.defn(name=WORKFLOW)
class ConvoConversation:
    """One conversation (see the module docstring)."""

    @workflow.init
    def __init__(self, start: dict[str, Any]) -> None:
        self.conversation_id: str = start["conversation_id"]
        self.bot: Bot = bot(workflow.info().task_queue)
        self.store = ActivityStore()
        self.engine = WorkflowEngine(self.bot.runner, self.store, self.bot.heartbeat_s)
        self.live: Live | None = None
        self.turn = asyncio.Lock()  # one turn at a time
        self.ran = 0  # turns run since this run started (Updates', queued messages')
        self.opened: tuple[int, dict[str, Any]] | None = None  # the first drive's answer
        self.refused: ApplicationError | None = None  # a client's history, a branch, refused
        self.told = False  # the first drive's answer (or refusal) was read (``opened``)
        self.early: list[Queued] = []  # queued before the conversation was made here
        self.holding = False  # an interrupt's message goes first: the queue waits for it

    @workflow.run
    async def run(self, start: dict[str, Any]) -> dict[str, Any]:
        cid = self.conversation_id
        opened: tuple[int, dict[str, Any]] | None = None
        async with self.turn:
            if start.get("continued"):
                live, opened = await self._from_store()
            elif start.get("branch") is not None:  # a branch made here (§28), from the store
                branch = start["branch"]
                try:
                    calls = await self._branched(branch)
                except ApplicationError as exc:  # nothing made: the front says why
                    self.refused = exc
                    await self._told()
                    return {}
                if branch.get("branch_id") is None:  # a dry run: its not_undone, no more
                    self.opened = (200, {"not_undone": calls})
                    await self._told()
                    return {}
                live, (code, said) = await self._from_store()
                opened = (code, {**said, "not_undone": calls})
            elif start.get("history") is not None:  # a client's history (§25's replay)
                try:
                    live = self.live = await self._adopted(start)
                except (NotFollowed, Conflict) as exc:  # nothing stored: the front says why
                    self.refused = _refusal(exc)
                    await self._told()
                    return {}
                opened = await self.engine.goes_on(live) or (200, live.view(live.committed))
            else:
                await self.store.create(cid, start.get("state") or {},
                                        owner=start.get("owner") or DEFAULT_OWNER)
                live = self.engine._start(cid, Session(state=dict(start.get("state") or {})))
                self.engine.streaming = bool(start.get("stream"))
                opened = await self.engine._advance(live, None, None, first=True)
                self.engine.streaming = False
                self.live = live
            await self.store.flush(cid)
            self.opened = opened  # (in the store now: what the HTTP front reads)
        live.queued.extend(self.early)
        self.engine.draining = self.engine.draining or bool(self.early)
        await self._take_queued(live)
        await workflow.wait_condition(workflow.all_handlers_finished)
        if live.pending is not None:
            workflow.continue_as_new({"conversation_id": cid, "continued": True})
        return live.view()

    async def _from_store(self) -> tuple[Live, tuple[int, dict[str, Any]]]:
        """The conversation rebuilt from the store (a run continued as new, a new run after a
        failed one, a branch just made), paused where it waits, and what its first drive
        said."""
        stored = await self.store.load(self.conversation_id)
        assert stored is not None
        live = self.live = await self.engine._rebuilt(stored)
        if stored.status == "running" and live.waits == "retry":
            # A turn cut off with the run that ran it (a deploy changed the template under
            # it): finished here, on this code, from its last committed step.
            return live, await self.engine._advance(live, None, None, retry=True)
        await self.engine.settle(live)
        return live, (200, live.view(live.committed))

    async def _branched(self, branch: dict[str, Any]) -> list[dict[str, Any]]:
        """The branch made by the activity ``convo.branch`` (the served branch code: the one
        replay, then the store's writes); its ``not_undone``. A refusal (the original's turn
        runs, a bad index) is raised as the served problem's ``ApplicationError``."""
        try:
            calls = await workflow.execute_activity(
                "convo.branch", branch, start_to_close_timeout=STORE_TIMEOUT,
                retry_policy=AGAIN)
        except ActivityError as exc:
            cause = exc.cause
            if isinstance(cause, ApplicationError) and cause.type in _REFUSED:
                raise ApplicationError(cause.message, *cause.details, type=cause.type,
                                       non_retryable=True) from None
            raise
        return list(calls)

    async def _told(self) -> None:
        """Wait (a while) for the front to read the run's only answer (``opened``)."""
        with contextlib.suppress(TimeoutError):
            await workflow.wait_condition(lambda: self.told, timeout=REFUSED_KEPT)

    async def _adopted(self, start: dict[str, Any]) -> Live:
        """A client's history replayed (``Engine.replayed``: nothing called), then stored
        with where it waits."""
        owner = start.get("owner") or DEFAULT_OWNER
        live = await self.engine.replayed(
            self.conversation_id, [Message.from_dict(m) for m in start["history"]],
            owner=owner)
        await self.store.create(self.conversation_id, {}, owner=owner)
        await self.engine._adopt(live)
        return live

    async def _take_queued(self, live: Live) -> None:
        """Until the conversation ends or continues as new: the queued messages (API.md §26)
        answered in order, each as a turn of its own, whenever no turn runs (after an
        interrupt, once its message's turn began, or ``HOLD`` later)."""
        engine = self.engine
        while True:
            def ready() -> bool:
                return live.pending is None or self.ran >= self.bot.continue_every or (
                    engine.draining and not self.holding and not self.turn.locked())
            try:
                await workflow.wait_condition(ready, timeout=HOLD if self.holding else None)
            except TimeoutError:  # (the interrupt's message never came)
                self.holding = False
                continue
            if live.pending is None or self.ran >= self.bot.continue_every:
                return
            engine.draining = False
            async with self.turn:
                engine.current = Cancel()  # (a cancel stops a queued message's turn too)
                had = live.committed
                try:
                    more = not await engine.take_queued(live)
                finally:
                    try:
                        await self.store.flush(self.conversation_id)
                    finally:
                        engine.current = None
                if live.committed > had:  # a queued message's turn ran: it counts as an
                    self.ran += 1  # Update's does (``continue_every``)
            engine.draining = engine.draining or more

    @workflow.query(name="conversation")
    def conversation(self) -> dict[str, Any]:
        if self.live is None:
            return {"id": self.conversation_id, "status": "running", "messages": [],
                    "state": {}, "outcome": None, "waiting_for": None, "parent": None}
        return self.live.view()

    # -- the Updates -------------------------------------------------------------------------

    def _check(self, waits: tuple[str, ...], what: str) -> None:
        """A validator's refusal: a turn runs, or the conversation waits for something else."""
        live = self.live
        if live is None:  # the workflow is starting: the Update waits for its first pause
            return
        if self.turn.locked():
            raise ApplicationError("a turn is running in this conversation: wait for it to "
                                   "end, then send again", type="Conflict", non_retryable=True)
        if live.pending is None:
            raise ApplicationError(f"conversation {self.conversation_id!r} has ended",
                                   type="Conflict", non_retryable=True)
        try:
            self.engine.expect(live, waits, what)
        except (Conflict, Invalid, Forbidden, NotFound) as exc:
            raise _refusal(exc) from None

    async def _turn(self, answer: Any, body: dict[str, Any] | None) -> dict[str, Any]:
        """Run one turn (``answer(live)`` answers the pending request) and say what it added;
        ``body``: the Update's (``"stream": true`` when a client streams the turn)."""
        await workflow.wait_condition(lambda: self.live is not None)  # (not under the lock:
        async with self.turn:  # the run takes it to start the conversation)
            live = self.live
            assert live is not None
            self.holding = False  # (an interrupt's message: its turn is taken)
            self.engine.streaming = bool((body or {}).get("stream"))
            self.engine.current = Cancel()
            try:
                offers = (body or {}).get("offers")
                if isinstance(offers, list):  # the front end's tools, from now on
                    self.engine.offer(live, offers)
                code, body = await answer(live)
            except (Conflict, Invalid, Forbidden, NotFound) as exc:
                raise _refusal(exc) from None
            finally:
                self.engine.streaming = False
                try:
                    await self.store.flush(self.conversation_id)
                finally:
                    self.engine.current = None  # (a cancel answers once the turn is stored)
            self.ran += 1
        return _said(code, body)

    @workflow.update(name="opened")
    async def opened_(self, body: dict[str, Any] | None = None) -> dict[str, Any]:
        """What the conversation's first drive added (the HTTP front's create answers it)."""
        await workflow.wait_condition(lambda: self.opened is not None
                                      or self.refused is not None)
        self.told = True  # (read: a run that answers only this may end)
        if self.refused is not None:
            raise self.refused
        assert self.opened is not None
        code, said = self.opened
        return _said(code, dict(said))

    @workflow.update(name="message")
    async def message(self, body: dict[str, Any]) -> dict[str, Any]:
        content = Message.from_dict({"role": "user", "content": body["content"]}).content
        return await self._turn(lambda live: self.engine.message(
            live, content, None, message_id=body.get("id")), body)

    @message.validator
    def _message_ok(self, body: dict[str, Any]) -> None:
        if not isinstance(body, dict) or "content" not in body:
            raise ApplicationError('a message is {"content": ...}', type="Invalid",
                                   non_retryable=True)
        self._check(("user", "operator"), "a message")

    @workflow.update(name="approve")
    async def approve(self, body: dict[str, Any]) -> dict[str, Any]:
        return await self._turn(lambda live: self.engine.approve(
            live, list(body.get("decisions") or []), None,
            operator=bool(body.get("operator", True)), staff=bool(body.get("staff", False))),
            body)

    @approve.validator
    def _approve_ok(self, body: dict[str, Any]) -> None:
        self._check(("approval",), "approvals")

    @workflow.update(name="retry")
    async def retry(self, body: dict[str, Any] | None = None) -> dict[str, Any]:
        return await self._turn(lambda live: self.engine.retry(live, None), body)

    @retry.validator
    def _retry_ok(self, body: dict[str, Any] | None = None) -> None:
        self._check(("retry",), "a retry")

    @workflow.update(name="operator_message")
    async def operator_message(self, body: dict[str, Any]) -> dict[str, Any]:
        said = Message("assistant", body["content"], id=body.get("id"),
                       metadata={"author": body.get("author") or "operator"})
        return await self._turn(lambda live: self.engine.hand_off(live, said, None), body)

    @operator_message.validator
    def _operator_message_ok(self, body: dict[str, Any]) -> None:
        self._check(("operator",), "an operator's message")

    @workflow.update(name="handback")
    async def handback(self, body: dict[str, Any] | None = None) -> dict[str, Any]:
        return await self._turn(lambda live: self.engine.hand_off(live, None, None), body)

    @handback.validator
    def _handback_ok(self, body: dict[str, Any] | None = None) -> None:
        self._check(("operator",), "a hand-back")

    @workflow.update(name="tool_results")
    async def tool_results(self, body: dict[str, Any]) -> dict[str, Any]:
        """A front end's results of the frontend tool calls the conversation waits on:
        ``{"results": {call id: [text, the id its message is stored under]}}``."""
        results = {k: (str(v[0]), v[1]) for k, v in body["results"].items()}
        return await self._turn(lambda live: self.engine.tool_results(live, results, None),
                                body)

    @tool_results.validator
    def _tool_results_ok(self, body: dict[str, Any]) -> None:
        if not isinstance(body, dict) or not isinstance(body.get("results"), dict):
            raise ApplicationError('tool results are {"results": {call id: [text, id]}}',
                                   type="Invalid", non_retryable=True)
        self._check(("client_tool",), "tool results")

    @workflow.update(name="cancel")
    async def cancel(self, body: dict[str, Any] | None = None) -> dict[str, Any]:
        """Stop the running turn (as a served cancel does: the model call is cut off, what
        it streamed kept; a running tool finishes, and nothing runs after it); answers once
        the turn has ended."""
        cancel = self.engine.current
        if cancel is not None:
            self.holding = self.holding or bool((body or {}).get("interrupt"))
            cancel.set()
            await workflow.wait_condition(lambda: self.engine.current is not cancel)
        return {"cancelled": cancel is not None}

    @cancel.validator
    def _cancel_ok(self, body: dict[str, Any] | None = None) -> None:
        if self.engine.current is None:
            raise ApplicationError(NOTHING_RUNS, type="Conflict", non_retryable=True)

    @workflow.signal(name="queued")
    def queued(self, body: dict[str, Any]) -> None:
        """A message queued (stored in the conversation's queue, API.md §26): steered to
        the running turn at its next safe point, or answered once no turn runs."""
        queued = wire.queued_from(body)
        if self.live is None:
            self.early.append(queued)
        else:
            self.live.queued.append(queued)
        self.engine.draining = True
