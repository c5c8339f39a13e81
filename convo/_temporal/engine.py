"""The served engine on Temporal (``convo serve --engine temporal://HOST:PORT[/NAMESPACE]``).

The HTTP routes are §9's, unchanged; behind them, this engine holds no lease and runs no turn:
each turn is an Update of the conversation's workflow (``convo._temporal.workflow``), run by
``convo worker`` processes, and what it answers is read from the store (the record: GET,
lists, feedback and exports read it as on the default engine). A streamed turn (a sink: SSE
and the other faces) listens to the store's notes while its Update runs (``deltas.py``:
Temporal streams nothing): the model activity's text comes as ``TextDelta``s, each reply's
preceded by the messages the store holds before it; the rest of the turn's messages once the
Update returns.

(Over 300 lines: the served engine's methods, each an Update; the conversation as the faces
read it (``Turn``); the stream of a turn; a new run after a deploy.)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import attrs
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowUpdateFailedError,
)
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from .._messages import Message, ToolCall
from .._requests import Approve, AskUser, CallModel, HandOff, Request, RunTools
from .._runner import Runner
from .._session import Session
from ..serve._engine import Engine
from ..serve._events import Sink, WaitingFor, committed
from ..serve._live import stored_view
from ..serve._problems import Conflict, Forbidden, Invalid, NotFound
from ..serve._stores.base import DEFAULT_OWNER, Store, Stored
from ..serve._turns import Turns
from ..tools._calls import Invocation
from ..tools._frontend import FRONTEND_TOOLS, FrontendTool
from .deltas import Heard, Note, channel
from .workflow import NOTHING_RUNS, WORKFLOW, workflow_id

_REFUSALS: dict[str, type[Exception]] = {"Conflict": Conflict, "Invalid": Invalid,
                                         "Forbidden": Forbidden, "NotFound": NotFound}
NOT_HERE = ("{what} is not served on the Temporal engine (convo serve --engine temporal://); "
            "serve the bot on the default engine for it")


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
        body = stored_view(self.stored, originals=originals)
        if added_from is not None:
            body["added"] = body["messages"][added_from:]
        return body


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
    """This engine's turns are its workflows': it holds no lease, and what would take one
    (a branch, the AI SDK's regenerate: the branch would need a workflow of its own) is
    refused saying so."""

    @contextlib.asynccontextmanager
    async def hold(self, conversation_id: str, lease: Any = None) -> AsyncIterator[Any]:
        raise Conflict(NOT_HERE.format(what="branching a conversation (and the AI SDK's "
                                            "regenerate)"))
        yield  # (a generator: never reached)

    async def stop(self, conversation_id: str) -> bool:
        return False


class TemporalEngine(Engine):
    """§9's served engine with each conversation a Temporal workflow (module docstring)."""

    def __init__(self, runner: Runner, store: Store, *, address: str,
                 namespace: str = "default", task_queue: str = "convo") -> None:
        super().__init__(runner, store)
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
            # A Conflict, not Busy: a message queued while a turn runs (while_busy) is not
            # served on this engine, and Busy would queue it for this process to answer.
            raise Conflict("a turn is running in this conversation: wait for it to end, then "
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
        return stored_view(stored, originals=originals)

    async def delete(self, conversation_id: str) -> None:
        """The workflow is ended first (nothing it would write stays), then the rows."""
        handle = await self._handle(conversation_id)
        with contextlib.suppress(RPCError):  # (not there, or over already)
            await handle.terminate(reason="the conversation was deleted")
        if not await self.store.delete(conversation_id):
            raise NotFound(f"no conversation {conversation_id!r}")

    async def cancel(self, conversation_id: str, *, known: bool = False) -> dict[str, Any]:
        """The workflow's Update ``cancel`` stops its running turn (a 409 when none runs);
        the conversation once the turn stopped."""
        if not known and await self.store.load(conversation_id, messages=False) is None:
            raise NotFound(f"no conversation {conversation_id!r}")
        handle = await self._handle(conversation_id)
        try:
            await handle.execute_update("cancel", {})
        except WorkflowUpdateFailedError as exc:
            cause = exc.cause
            if isinstance(cause, ApplicationError) and cause.type in _REFUSALS:
                raise _REFUSALS[cause.type](cause.message) from None
            raise
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:  # its workflow is over: nothing runs
                raise Conflict(NOTHING_RUNS) from None
            raise
        return await self.get(conversation_id)

    async def tool_results(self, live: Any, results: Any, sink: Sink | None
                           ) -> tuple[int, dict[str, Any]]:
        """The Update ``tool_results``: the client's results of the frontend tool calls the
        conversation waits on (by call id: the text and the id its message is stored
        under)."""
        return await self._turn(live, "tool_results", {"results": {
            call_id: [text, message_id] for call_id, (text, message_id) in results.items()}},
            sink)

    def adopted(self, *args: Any, **kwargs: Any) -> Any:
        raise Conflict(NOT_HERE.format(what="a conversation from a client's history") + (
            " (its replay would rebuild the conversation in this HTTP process, which runs no "
            "turn on this engine): name a stored conversation instead"))

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
        try:
            try:
                if sink is None:
                    said = await handle.execute_update(update, body)
                else:
                    said, shown = await self._streamed(conversation_id, handle, update,
                                                       {**body, "stream": True}, sink)
            except (WorkflowUpdateFailedError, RPCError):
                if not await self._failed(handle):
                    raise
                said = await self._restarted(conversation_id, update, body, before)
        except WorkflowUpdateFailedError as exc:
            cause = exc.cause
            if isinstance(cause, ApplicationError) and cause.type in _REFUSALS:
                raise _REFUSALS[cause.type](cause.message) from None
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
        view = {**stored_view(stored), "added": added}
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
