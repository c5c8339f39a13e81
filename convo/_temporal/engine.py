"""The served engine on Temporal (``convo serve --engine temporal://HOST:PORT[/NAMESPACE]``).

The HTTP routes are §9's, unchanged; behind them, this engine holds no lease and runs no turn:
each turn is an Update of the conversation's workflow (``convo._temporal.workflow``), run by
``convo worker`` processes, and what it answers is read from the store (the record: GET, lists,
feedback and exports read it as on the default engine). A message sent while a turn runs is
queued in the store and told to the workflow (the Signal ``queued``), which takes it; an
interrupt is the Update ``cancel``. A branch is made by the workflow it gets (started with
where to branch from: the served branch code runs in its activity ``convo.branch``, on a
worker), so the HTTP process rebuilds nothing for it either; a
client's history (the OpenAI face's stateless replay) starts a workflow that replays it. A
streamed turn (a sink: SSE and the other faces) listens to the store's notes while its Update
runs (``deltas.py``: Temporal streams nothing): the model activity's text comes as
``TextDelta``s, each reply's preceded by the messages the store holds before it; the rest of
the turn's messages once the Update returns.

(Over 300 lines: the served engine's methods, each an Update; the conversation as the faces
read it (``Turn``); the stream of a turn; a new run after a deploy.)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

import attrs
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowUpdateFailedError,
)
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from .._messages import Message, ToolCall
from .._requests import Approve, AskUser, CallModel, HandOff, Request, RunTools
from .._runner import Runner
from .._session import Session
from ..serve._engine import MAX_QUEUED, Engine
from ..serve._events import Sink, WaitingFor, committed
from ..serve._live import stored_view
from ..serve._problems import (
    Busy,
    Conflict,
    Forbidden,
    Invalid,
    NotFollowed,
    NotFound,
    Unsupported,
)
from ..serve._stores.base import DEFAULT_OWNER, Store, Stored
from ..serve._turns import Turns
from ..tools._calls import Invocation
from ..tools._frontend import FRONTEND_TOOLS, FrontendTool
from .deltas import Heard, Note, channel
from .wire import queued_json
from .workflow import NOTHING_RUNS, WORKFLOW, workflow_id

T = TypeVar("T")
_REFUSALS: dict[str, type[Exception]] = {"Conflict": Conflict, "Invalid": Invalid,
                                         "Forbidden": Forbidden, "NotFound": NotFound,
                                         "Unsupported": Unsupported}


def _refused(cause: ApplicationError) -> Exception:
    """The problem a workflow's refusal (an ``ApplicationError`` of its type) stands for."""
    if cause.type == "NotFollowed":
        at, wants = cause.details
        return NotFollowed(int(at), str(wants))
    return _REFUSALS[cause.type or ""](cause.message)


def _refusal(exc: WorkflowUpdateFailedError) -> Exception | None:
    cause = exc.cause
    if isinstance(cause, ApplicationError) and cause.type in (*_REFUSALS, "NotFollowed"):
        return _refused(cause)
    return None


def parse_engine(url: str) -> tuple[str, str]:
    """``temporal://HOST:PORT[/NAMESPACE]`` → ``("HOST:PORT", NAMESPACE)`` (default
    ``default``); a ``ValueError`` saying what was expected otherwise."""
    parts = urlsplit(url)
    if parts.scheme != "temporal" or not parts.hostname or parts.port is None:
        raise ValueError(f"expected temporal://HOST:PORT[/NAMESPACE], got {url!r}")
    namespace = parts.path.strip("/") or "default"
    return f"{parts.hostname}:{parts.port}", namespace


class _NoRun:
    """(No run in this process: the workflow's is the conversation's run.)"""

    state = None


@attrs.define(slots=True, eq=False)
class Turn:
    """What a route holds while it runs a turn here: the conversation as the store says
    (this process runs no turn and rebuilds nothing), with what the faces read of a paused
    conversation — its messages and state (``session``), what it waits for (``waits``) and
    the request it waits at as far as its ``waiting_for`` tells (``pending``: the calls to
    decide, the frontend tool calls to answer) — and the tools a front end offers
    (``offers``), sent with the next Update. The workflow checks again, in its Update's
    validator; each Update's answer brings it up to date."""

    id: str
    stored: Stored
    session: Session = attrs.field(init=False)
    waits: str | None = attrs.field(init=False)
    pending: Request[Any] | None = attrs.field(init=False)
    committed: int = attrs.field(init=False)
    offers: list[dict[str, Any]] | None = None
    run: Any = attrs.field(factory=_NoRun)

    def __attrs_post_init__(self) -> None:
        self.now(self.stored)

    def now(self, stored: Stored) -> None:
        """As ``stored`` says it is now."""
        self.stored = stored
        self.session = Session(list(stored.messages), stored.state,
                               internal=dict(stored.internal), parent=stored.parent)
        waiting = stored.waiting_for
        self.waits = None if waiting is None else waiting.get("type")
        self.pending = None if stored.status == "ended" else _pending(waiting)
        self.committed = len(stored.messages)

    def view(self, added_from: int | None = None, *, originals: bool = False
             ) -> dict[str, Any]:
        body = _view(self.stored, originals=originals)
        if added_from is not None:
            body["added"] = body["messages"][added_from:]
        return body


def _view(stored: Stored, *, originals: bool = False) -> dict[str, Any]:
    """§9's JSON of the conversation as stored, with its queue (§26) while it goes on."""
    return stored_view(stored, stored.queued if stored.status != "ended" else (),
                       originals=originals)


def _pending(waiting: dict[str, Any] | None) -> Request[Any] | None:
    """The request a conversation that waits so is at, as far as ``waiting`` says."""
    kind = None if waiting is None else waiting.get("type")
    if waiting is None or kind is None:
        return None
    calls = [ToolCall(c["id"], c["name"], c.get("arguments") or {})
             for c in waiting.get("calls") or ()]
    if kind == "approval":
        return Approve(tuple(calls), approvers=tuple(
            c.get("approver") or "user" for c in waiting.get("calls") or ()))
    if kind == "client_tool":
        return RunTools(tuple(Invocation(call, FrontendTool(call.name, "", {}),
                                         dict(call.arguments)) for call in calls))
    if kind == "operator":
        return HandOff(ToolCall("", "handoff", {}), waiting.get("reason"))
    if kind == "retry":
        return CallModel()
    return AskUser(waiting.get("prompt"))


class _NoLeases(Turns):
    """This engine's turns are its workflows': it holds no lease. What reads a conversation
    under its lease (a branch of it, the AI SDK's regenerate) is given its row while the
    store shows no turn running (``None`` while one runs, as a lease another holds)."""

    @contextlib.asynccontextmanager
    async def hold(self, conversation_id: str, lease: Any = None) -> AsyncIterator[Any]:
        store: Any = self.store  # (this engine's store: a whole Store)
        row = await store.load(conversation_id, messages=False)
        yield None if row is not None and row.status == "running" else _Held(row)

    async def stop(self, conversation_id: str) -> bool:
        return False


@attrs.frozen
class _Held:
    row: Stored | None


class TemporalEngine(Engine):
    """§9's served engine with each conversation a Temporal workflow (module docstring)."""

    def __init__(self, runner: Runner, store: Store, *, address: str,
                 namespace: str = "default", task_queue: str = "convo",
                 max_queued: int = MAX_QUEUED) -> None:
        super().__init__(runner, store, max_queued=max_queued)
        self.address = address
        self.namespace = namespace
        self.task_queue = task_queue
        self.channel = channel(store)  # a streamed reply's text, from the worker (deltas.py)
        self.turns = _NoLeases(store, self.turns.lease)
        self._client: Client | None = None

    async def client(self) -> Client:
        if self._client is None:  # on the server's own loop, at the first request
            self._client = await Client.connect(self.address, namespace=self.namespace)
        return self._client

    async def _handle(self, conversation_id: str) -> Any:
        return (await self.client()).get_workflow_handle(workflow_id(conversation_id))

    async def create(self, state: dict[str, Any], sink: Sink | None, *,
                     owner: str = DEFAULT_OWNER, conversation_id: str | None = None
                     ) -> tuple[int, dict[str, Any]]:
        conversation_id = conversation_id or secrets.token_urlsafe(16)
        try:
            json.dumps(state)
        except TypeError as exc:
            raise Invalid(f"state must be a JSON object: {exc}") from exc
        await self.store.create(conversation_id, state, owner=owner)
        client = await self.client()
        handle = await client.start_workflow(
            WORKFLOW, {"conversation_id": conversation_id, "state": state, "owner": owner,
                       "stream": sink is not None},
            id=workflow_id(conversation_id), task_queue=self.task_queue)
        code, body = await self._update(conversation_id, handle, "opened", {}, sink)
        return (201 if code == 200 else code), body

    @contextlib.asynccontextmanager
    async def turn(self, conversation_id: str, stored: Stored | None = None
                   ) -> AsyncIterator[Any]:
        if stored is None:
            stored = await self.store.load(conversation_id, messages=False)
        if stored is None:
            raise NotFound(f"no conversation {conversation_id!r}")
        if stored.status == "ended":
            raise Conflict(f"conversation {conversation_id!r} has ended")
        if stored.status == "running":  # (its workflow runs a turn, or finishes a cut-off one)
            raise Busy("a turn is running in this conversation: wait for it to end, then "
                       "send again")
        whole = await self.store.load(conversation_id)
        if whole is None:
            raise NotFound(f"no conversation {conversation_id!r}")
        yield Turn(conversation_id, whole)

    def offer(self, live: Any, tools: list[dict[str, Any]]) -> None:
        """The tools a front end offers from now on: sent with the next Update, whose
        workflow keeps them with the conversation."""
        if live.session.internal.get(FRONTEND_TOOLS, []) != tools:
            live.offers = tools

    async def message(self, live: Any, content: Any, sink: Sink | None, *,
                      message_id: str | None = None) -> tuple[int, dict[str, Any]]:
        said = Message("user", content).to_dict()["content"]
        return await self._turn(live, "message", {"content": said, "id": message_id}, sink)

    async def approve(self, live: Any, decisions: list[dict[str, Any]], sink: Sink | None,
                      *, operator: bool = True, staff: bool = False
                      ) -> tuple[int, dict[str, Any]]:
        return await self._turn(live, "approve", {"decisions": decisions,
                                                  "operator": operator, "staff": staff}, sink)

    async def retry(self, live: Any, sink: Sink | None) -> tuple[int, dict[str, Any]]:
        return await self._turn(live, "retry", {}, sink)

    async def hand_off(self, live: Any, said: Message | None, sink: Sink | None
                       ) -> tuple[int, dict[str, Any]]:
        if said is None:
            return await self._turn(live, "handback", {}, sink)
        return await self._turn(live, "operator_message", {
            "content": said.content, "id": said.id,
            "author": said.metadata.get("author") if said.metadata else None}, sink)

    async def get(self, conversation_id: str, stored: Stored | None = None, *,
                  originals: bool = False) -> dict[str, Any]:
        if stored is None:
            stored = await self.store.load(conversation_id)
        if stored is None:
            raise NotFound(f"no conversation {conversation_id!r}")
        if stored.queued and stored.status == "waiting" and isinstance(
                stored.waiting_for, dict) and stored.waiting_for.get("type") == "user":
            # Queued, and no turn takes them: told to the workflow again (the process that
            # queued them may have died before it told it; a repeat costs nothing).
            with contextlib.suppress(RPCError):
                await (await self._handle(conversation_id)).signal(
                    "queued", queued_json(stored.queued[0]))
        return _view(stored, originals=originals)

    # -- messages while a turn runs (API.md §26): the queue in the store, taken by the
    # workflow between its turns --------------------------------------------------------

    async def enqueue(self, conversation_id: str, content: Any, *, steer: bool,
                      message_id: str | None = None) -> dict[str, Any]:
        """Queued in the store (before the 202), then told to the workflow (the Signal
        ``queued``): steered to its running turn, or answered once that turn ends."""
        queued = await self._stored_queued(conversation_id, content, steer, message_id)
        handle = await self._handle(conversation_id)
        await handle.signal("queued", queued_json(queued))
        return {"queued": queued.message.to_dict()}

    def _watch(self, conversation_id: str) -> None:
        """(A queue is its workflow's to take, never this process's.)"""

    async def interrupt(self, conversation_id: str, again: Callable[[], Awaitable[T]]) -> T:
        """The running turn stopped as a cancel stops it (the Update ``cancel``, which also
        holds the queue for the interrupting message), then ``again()``: its turn."""
        for _ in range(3):
            handle = await self._handle(conversation_id)
            with contextlib.suppress(Conflict):  # (the turn ended meanwhile)
                await self._cancel_update(handle, {"interrupt": True})
            try:
                return await again()
            except Busy:
                continue
        raise Busy("a turn is running in this conversation and others keep starting: send "
                   "again")

    # -- branches (API.md §28): made by a workflow of their own, on a worker ---------------

    async def branch_elsewhere(self, conversation_id: str, before: int, *,
                               branch_id: str | None, kept_as: str | None = None
                               ) -> list[dict[str, Any]]:
        """The branch made by the workflow that runs it (``convo.serve._branches.Elsewhere``):
        started with where to branch from, it makes the branch in its activity (the served
        branch code: the replay and the writes, on a worker), rebuilds it from the store and
        waits; its Update ``opened`` says ``not_undone``, or the refusal. A dry run's workflow
        makes nothing and ends once read; a regenerate's (``kept_as``) is a new run of the
        chat's workflow, in place of the one that ran (no turn runs there: checked), and a
        refused one leaves the chat a new run of the original."""
        branch = {"of": conversation_id, "before": before, "branch_id": branch_id,
                  "kept_as": kept_as}
        made_as = conversation_id if kept_as is not None else \
            branch_id or f"dry-{secrets.token_urlsafe(12)}"
        client = await self.client()
        handle = await client.start_workflow(
            WORKFLOW, {"conversation_id": made_as, "branch": branch},
            id=workflow_id(made_as), task_queue=self.task_queue,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
            id_conflict_policy=WorkflowIDConflictPolicy.TERMINATE_EXISTING)
        try:
            said = await handle.execute_update("opened", {})
        except WorkflowUpdateFailedError as exc:
            refused = _refusal(exc)
            if refused is None:
                raise
            if kept_as is not None:  # the chat is the original still: its run, again
                await self.stored_anew(conversation_id)
            raise refused from None
        return list(said.get("not_undone") or [])


    async def stored_anew(self, conversation_id: str) -> None:
        """A new run of the conversation's workflow, rebuilt from the store (the original of
        the AI SDK's regenerate, under the id it moved to; the chat whose regenerate was
        refused); a run of it that was running is ended first (no turn runs in it)."""
        handle = await self._handle(conversation_id)
        with contextlib.suppress(RPCError):  # (none runs: a new branch)
            await handle.terminate(reason="the store gave its id to a branch of it")
        client = await self.client()
        started = await client.start_workflow(
            WORKFLOW, {"conversation_id": conversation_id, "continued": True},
            id=workflow_id(conversation_id), task_queue=self.task_queue,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE)
        await started.execute_update("opened", {})

    async def live(self, conversation_id: str, stored: Stored | None = None, *,
                   leased: Stored | None = None) -> Any:
        whole = await self.store.load(conversation_id)
        if whole is None:
            raise NotFound(f"no conversation {conversation_id!r}")
        return Turn(conversation_id, whole)

    async def settle(self, live: Any) -> None:
        """(Its workflow settled it when it started: ``branch_elsewhere``.)"""
        stored = await self.store.load(live.id)
        if stored is None:
            raise NotFound(f"no conversation {live.id!r}")
        live.now(stored)

    async def delete(self, conversation_id: str) -> None:
        """The workflow is ended first (nothing it would write stays), then the rows."""
        handle = await self._handle(conversation_id)
        with contextlib.suppress(RPCError):  # (not there, or over already)
            await handle.terminate(reason="the conversation was deleted")
        if not await self.store.delete(conversation_id):
            raise NotFound(f"no conversation {conversation_id!r}")

    async def cancel(self, conversation_id: str, *, known: bool = False) -> dict[str, Any]:
        """The workflow's Update ``cancel`` stops its running turn (a 409 when none runs);
        the conversation once the turn stopped (its queue stays, taken by the workflow)."""
        if not known and await self.store.load(conversation_id, messages=False) is None:
            raise NotFound(f"no conversation {conversation_id!r}")
        await self._cancel_update(await self._handle(conversation_id), {})
        return await self.get(conversation_id)

    @staticmethod
    async def _cancel_update(handle: Any, body: dict[str, Any]) -> None:
        try:
            await handle.execute_update("cancel", body)
        except WorkflowUpdateFailedError as exc:
            refused = _refusal(exc)
            if refused is not None:
                raise refused from None
            raise
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:  # its workflow is over: nothing runs
                raise Conflict(NOTHING_RUNS) from None
            raise

    async def tool_results(self, live: Any, results: Any, sink: Sink | None
                           ) -> tuple[int, dict[str, Any]]:
        """The Update ``tool_results``: the client's results of the frontend tool calls the
        conversation waits on (by call id: the text and the id its message is stored
        under)."""
        return await self._turn(live, "tool_results", {"results": {
            call_id: [text, message_id] for call_id, (text, message_id) in results.items()}},
            sink)

    @contextlib.asynccontextmanager
    async def adopted(self, conversation_id: str, history: list[Message], *,
                      owner: str = DEFAULT_OWNER) -> AsyncIterator[Any]:
        """A new conversation holding a client's ``history`` (API.md §25): its workflow,
        started with the history, replays it (the served engine's replay, on the worker),
        stores it and goes on where the template does; refused (``NotFollowed``, an ended
        conversation) with nothing stored."""
        client = await self.client()
        handle = await client.start_workflow(
            WORKFLOW, {"conversation_id": conversation_id, "owner": owner,
                       "history": [m.to_dict() for m in history]},
            id=workflow_id(conversation_id), task_queue=self.task_queue)
        try:
            await handle.execute_update("opened", {})
        except WorkflowUpdateFailedError as exc:
            refused = _refusal(exc)
            if refused is not None:
                raise refused from None
            raise
        stored = await self.store.load(conversation_id)
        if stored is None:
            raise NotFound(f"no conversation {conversation_id!r}")
        yield Turn(conversation_id, stored)

    async def _turn(self, live: Turn, update: str, body: dict[str, Any], sink: Sink | None
                    ) -> tuple[int, dict[str, Any]]:
        if live.offers is not None:
            body = {**body, "offers": live.offers}
        answer = await self._update(live.id, await self._handle(live.id), update, body, sink,
                                    live)
        live.offers = None
        return answer

    async def _update(self, conversation_id: str, handle: Any, update: str,
                      body: dict[str, Any], sink: Sink | None, live: Turn | None = None
                      ) -> tuple[int, dict[str, Any]]:
        """Run the Update; the answer is the store's conversation with what the turn added
        (its served events sent to ``sink`` as the default engine sends them; ``live``
        brought up to date)."""
        shown = None
        row = await self.store.load(conversation_id, messages=False)
        before = 0 if row is None else row.length

        async def run(handle: Any) -> Any:
            nonlocal shown
            if sink is None:
                return await handle.execute_update(update, body)
            said, shown = await self._streamed(conversation_id, handle, update,
                                               {**body, "stream": True}, sink)
            return said

        async def ran() -> Any:
            try:
                return await run(handle)
            except RPCError as exc:
                if exc.status != RPCStatusCode.NOT_FOUND or not await self._goes_on(
                        conversation_id):
                    raise
            # No run of its workflow, but the conversation goes on (the original of the AI
            # SDK's regenerate, whose id a branch took): a new run, from the store.
            await self.stored_anew(conversation_id)
            return await run(await self._handle(conversation_id))

        try:
            try:
                said = await ran()
            except (WorkflowUpdateFailedError, RPCError):
                if not await self._failed(handle):
                    raise
                said = await self._restarted(conversation_id, update, body, before)
        except WorkflowUpdateFailedError as exc:
            refused = _refusal(exc)
            if refused is not None:
                raise refused from None
            raise
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:  # its workflow is over
                raise Conflict(f"conversation {conversation_id!r} has ended") from None
            raise
        stored = await self.store.load(conversation_id)
        if stored is None:
            raise NotFound(f"no conversation {conversation_id!r}")
        if live is not None:
            live.now(stored)
        added = said["added"] or stored_view(stored)["messages"][before:]
        view = {**_view(stored), "added": added}
        if sink is not None:
            first = max(len(stored.messages) - len(added), shown or 0)
            for index, message in enumerate(stored.messages[first:], first):
                for event in committed(index, message):
                    sink(event)
            if stored.waiting_for is not None:
                sink(WaitingFor(stored.waiting_for))
        code = int(said["code"])
        if "error" in said:
            view = {"error": said["error"], **view}
        return code, view

    async def _goes_on(self, conversation_id: str) -> bool:
        row = await self.store.load(conversation_id, messages=False)
        return row is not None and row.status != "ended"

    @staticmethod
    async def _failed(handle: Any) -> bool:
        """Whether the conversation's run failed (its worker's template could not replay
        it: a deploy changed the template under it)."""
        try:
            described = await handle.describe()
        except RPCError:
            return False
        return bool(described.status == WorkflowExecutionStatus.FAILED)

    async def _restarted(self, conversation_id: str, update: str, body: dict[str, Any],
                         before: int) -> Any:
        """A new run of the conversation's workflow, rebuilt from the store on the workers'
        template (as a continue-as-new is); a turn it finds cut off it finishes first. The
        Update's answer: that turn's, when the store shows it ran (it had ``before``
        messages), else the Update's, sent again."""
        client = await self.client()
        with contextlib.suppress(WorkflowAlreadyStartedError):  # (another request did)
            await client.start_workflow(
                WORKFLOW, {"conversation_id": conversation_id, "continued": True},
                id=workflow_id(conversation_id), task_queue=self.task_queue,
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE)
        handle = await self._handle(conversation_id)
        opened = await handle.execute_update("opened", {})
        row = await self.store.load(conversation_id, messages=False)
        if row is not None and row.length > before:  # the turn was under way: finished now
            return {**opened, "added": []}
        return await handle.execute_update(update, body)

    async def _streamed(self, conversation_id: str, handle: Any, update: str,
                        body: dict[str, Any], sink: Sink) -> tuple[Any, int]:
        """The Update, its streamed text sent to ``sink`` while it runs (each reply's first
        piece after the messages the store holds before it); what it said, and how many of
        the conversation's messages were shown."""
        row = await self.store.load(conversation_id, messages=False)
        shown = 0 if row is None else row.length
        reply: list[str | None] = [None]  # the id of the reply being streamed

        async def show(notes: list[Note]) -> None:
            nonlocal shown
            for note in notes:
                if note.message_id != reply[0]:  # a new reply: what came before it first
                    reply[0] = note.message_id
                    stored = await self.store.load(conversation_id)
                    if stored is not None:
                        for index, message in enumerate(stored.messages[shown:], shown):
                            for event in committed(index, message):
                                sink(event)
                        shown = max(shown, len(stored.messages))
                sink(note.event())

        async with self.channel.listen(conversation_id) as heard:
            running = asyncio.ensure_future(handle.execute_update(update, body))
            try:
                while not running.done():
                    await show(await _next(heard, running))
                said = running.result()
                await heard.caught_up()  # (what was published before the Update returned)
                await show(heard.ready())
            finally:
                if not running.done():
                    running.cancel()
        return said, shown


async def _next(heard: Heard, running: asyncio.Future[Any]) -> list[Note]:
    """The notes heard next, or none once ``running`` is done."""
    getting = asyncio.ensure_future(heard.get())
    try:
        await asyncio.wait({getting, running}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not getting.done():
            getting.cancel()
    if getting.done() and not getting.cancelled():
        return [getting.result(), *heard.ready()]
    return []
