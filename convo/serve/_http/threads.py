"""What the faces that name a conversation by their client's id share (AG-UI's ``threadId``,
the AI SDK's chat ``id``; API.md §24): the thread, made on its first request and owned by its
caller, and which of the messages a client sends are new.

A client of those protocols sends its whole history each time; only its user messages whose
ids the store does not hold are added, so nothing is added twice. Two first runs of one new id
race: the store creates the conversation once, with its lease held (``Creating``), and the
other run finds it busy (409, as any run while a turn runs, unless it asks to queue: API.md
§26). A run that asks to queue its messages while a turn runs puts them in the engine's queue
(the native API's), under their client ids, and is answered 202 with a stream that says so.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from starlette.responses import Response, StreamingResponse

from ..._internal import reserved_keys
from ..._messages import Message
from .._events import LAST, Encoder, MessagesQueued, ServedEvent, TurnEnded, TurnFailed
from .._problems import Busy, Conflict
from .._stores.base import Idempotency, Queues
from .bodies import HTTPProblem
from .owners import lacks
from .sse import stream_turn

if TYPE_CHECKING:
    from starlette.requests import Request

    from ..._parts import Content
    from .._events import Sink
    from .._live import Live
    from .._stores.base import Stored
    from .auth import Caller
    from .host import Host


class Said(Protocol):
    """A message a client sent: its id and role."""

    @property
    def id(self) -> str: ...

    @property
    def role(self) -> str: ...


async def open_thread(api: Host, request: Request, caller: Caller, thread_id: str,
                      state: dict[str, Any] | None, *, fresh_ok: bool = True
                      ) -> tuple[Stored, dict[str, Any] | None]:
    """The thread's conversation if ``caller`` owns it (anybody else's: 404, an operator's
    run included: operators decide through the native API); an unknown id starts one owned by
    ``caller`` with ``state``, run to its first pause. Gives the row and, when that first
    step failed (a greeting's model call), its error body. ``fresh_ok``: whether the request
    may start a thread (a ``resume`` may not: it answers interrupts of a thread that is)."""
    store = api.engine.store
    stored = await store.load(thread_id, messages=False)
    if stored is not None and stored.owner != caller.user:
        raise HTTPProblem(404, f"no thread {thread_id!r}")
    failed = None
    if stored is None:
        if not fresh_ok:
            raise HTTPProblem(404, f"no thread {thread_id!r}: there are no interrupts to "
                                   "resume in a thread not started")
        created = dict(state or {})
        reserved = reserved_keys(created)
        if reserved:
            raise HTTPProblem(400, f'"state" may not hold {", ".join(map(repr, reserved))}: '
                                   'keys starting with "convo." and the key "_convo_state" '
                                   "are reserved for convo's own records; choose other names")
        try:
            code, body = await api.traced(request, thread_id, None, lambda: (
                api.engine.create(created, None, owner=caller.user,
                                  conversation_id=thread_id)))
        except Conflict:  # another request made it first: busy, if it is the caller's
            made = await store.load(thread_id, messages=False)
            if made is not None and made.owner != caller.user:
                raise HTTPProblem(404, f"no thread {thread_id!r}") from None
            raise
        failed = body if code >= 400 else None
        stored = await store.load(thread_id, messages=False)
        if stored is None:  # deleted at once by another request
            raise HTTPProblem(404, f"no thread {thread_id!r}")
    return stored, failed


def unstored(live: Live, messages: Iterable[Said], queued: Iterable[str] = ()) -> list[Any]:
    """The user messages of ``messages`` the conversation does not hold (by id), in order,
    each once; ``queued``: the ids in its queue (API.md §26), which are not new either (the
    queue answers them)."""
    known = {m.id for m in live.session.messages if m.id is not None} | set(queued)
    new = []
    for message in messages:
        if message.role == "user" and message.id not in known:
            known.add(message.id)
            new.append(message)
    return new


async def said_anew(api: Host, live: Live, messages: Sequence[Said]) -> list[Any]:
    """``unstored``, less the messages waiting in the conversation's queue (a run that
    queued them, API.md §26: the queue answers them); the queue is read only when some
    message is new."""
    new = unstored(live, messages)
    store = api.engine.store
    if not new or not isinstance(store, Queues):
        return new
    return unstored(live, new, [q.message.id for q in await store.queued(live.id)
                                if q.message.id is not None])


async def queue_run(api: Host, thread_id: str, said: Sequence[tuple[Said, Content]], *,
                    steer: bool) -> tuple[dict[str, Any], ...]:
    """A run that found a turn running and asks to queue (or steer) its messages (API.md
    §26): its user messages neither stored nor queued go into the engine's queue, in order,
    under their client ids (stored before this returns). Gives the run's messages that are in
    the queue now (those queued by an earlier run too); 409 when there are none (the run has
    nothing that can wait)."""
    engine = api.engine
    whole = await engine.store.load(thread_id)  # one snapshot: its messages and its queue
    if whole is None:
        raise HTTPProblem(404, f"no thread {thread_id!r}")
    stored = {m.id for m in whole.messages}
    waiting = {q.message.id: q.message for q in whole.queued}
    shown: list[dict[str, Any]] = []
    for message, content in said:
        if message.role != "user" or message.id in stored:
            continue
        if message.id in waiting:
            shown.append(waiting[message.id].to_dict())
            continue
        answer = await engine.enqueue(thread_id, content, steer=steer, message_id=message.id)
        waiting[message.id] = Message("user", content, id=message.id)
        shown.append(answer["queued"])
    if not shown:
        raise Busy("a turn is running in this conversation and the run has no new message "
                   "to queue: wait for it to end, then send again")
    return tuple(shown)


async def queued_stream(api: Host, encoder: Encoder, opened: ServedEvent | None,
                        queued: tuple[dict[str, Any], ...], keyed: Keyed | None,
                        headers: dict[str, str] | None = None) -> Response:
    """The answer of a run whose messages were queued: 202, a stream of the face's own frame
    (``opened``, then its end) around what it queued."""
    async def said(sink: Sink) -> ServedEvent:
        if opened is not None:
            sink(opened)
        sink(MessagesQueued(queued))
        return TurnEnded({"queued": list(queued)})

    if keyed is not None:
        keyed.status = 202
    return await stream_turn(said, tasks=api.tasks, cut=lambda exc: TurnFailed(
        {"error": str(exc)}), encoder=encoder if keyed is None else keyed.keeping(encoder),
        headers=headers, status=202)


class Keyed:
    """A run under an ``Idempotency-Key`` (API.md §20, §24): the first keeps the text of every
    event it streamed; a repeat with the same content streams that text again, one with other
    content is 409. ``claim`` gives the repeat's answer, or ``None`` for a first run;
    ``headers``: the protocol's own, sent with a repeat's stream as with the first."""

    def __init__(self, api: Host, thread_id: str, key: str, content: Any, *,
                 headers: dict[str, str] | None = None) -> None:
        self.api, self.thread_id, self.key = api, thread_id, key
        self.headers = dict(headers or {})
        self.digest = hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()
        self.texts: list[str] = []
        self.status = 200  # the first answer's (202: it queued its messages)

    @property
    def store(self) -> Idempotency:
        store = self.api.engine.store
        if not isinstance(store, Idempotency):
            raise lacks(store, "Idempotency", "keep idempotency records",
                        "; send the request without an Idempotency-Key")
        return store

    async def claim(self) -> Response | None:
        store = self.store
        known = await store.idempotent(self.thread_id, self.key)
        if known is None and not await store.remember(self.thread_id, self.key, self.digest,
                                                      None):
            known = await store.idempotent(self.thread_id, self.key)
        if known is None:
            return None
        digest, record = known
        if digest != self.digest:
            raise HTTPProblem(409, "this Idempotency-Key was used with other content")
        if record is None or not isinstance(record.get("events"), list):
            raise HTTPProblem(409, "a request with this Idempotency-Key is still running "
                                   "(or was cut off): wait, or use a new key")
        return StreamingResponse(iter(record["events"]), status_code=record.get("status", 200),
                                 media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", **self.headers})

    async def forget(self) -> None:
        """The run was refused before anything ran: the key stays unused."""
        await self.store.forget(self.thread_id, self.key)

    def keeping(self, encoder: Encoder) -> Encoder:
        """``encoder``, its text kept; once the last event is encoded, the record is written
        (in a task of the app's, so the stream's end does not wait for it)."""
        keyed = self

        class Kept(Encoder):
            def encode(self, event: ServedEvent) -> str:
                text = encoder.encode(event)
                keyed.texts.append(text)
                if isinstance(event, LAST):
                    task = asyncio.ensure_future(keyed.store.remember(
                        keyed.thread_id, keyed.key, keyed.digest,
                        {"status": keyed.status, "events": [t for t in keyed.texts if t]}))
                    keyed.api.tasks.add(task)
                    task.add_done_callback(keyed.api.tasks.discard)
                return text

        return Kept()


Answer = tuple[int, dict[str, Any]]


async def run_steps(api: Host, request: Request, thread_id: str, live: Live, sink: Sink,
                    steps: Sequence[Callable[[Live, Sink], Awaitable[Answer]]],
                    ready: Callable[[Any, Live], bool], failed: dict[str, Any] | None
                    ) -> Answer:
    """A run's engine calls in order, under one turn span when there are any: each while
    ``ready`` for it (the rest wait for a later request: they stay new until stored), up to
    the first refused. With none made: the failure read before (502) or the conversation."""
    async def turns() -> Answer:
        answer: Answer | None = None
        for step in steps:
            if not ready(step, live):
                break
            answer = await step(live, api.plain_events(sink))
            if answer[0] >= 400:
                break
        if answer is not None:
            return answer
        return (502, failed) if failed is not None else (200, live.view(
            live.committed))  # (nothing ran: the conversation as it is)

    return await (api.traced(request, thread_id, live.run.state, turns) if steps else turns())
