"""Served conversations: each is a paused template generator, driven a turn at a time.

A conversation waiting for a person is the run's driver (``Runner.drive``) paused at a request
that pauses (``AskUser``, ``Approve``), or at a ``CallModel`` whose model call failed (waiting
for ``retry``). Paused conversations are kept in a bounded LRU cache; on a miss (another
worker, a restart, an eviction) the conversation is rebuilt from the store with ``resume``:
no tool or model is called again for what is stored, subroutines included (their records are
stored with each step, the child a conversation waits inside as it stands). Every message is
committed to the store before a client sees it; one turn at a time per conversation, across
workers (``Store.turn``).
"""

from __future__ import annotations

import contextlib
import json
import secrets
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ..approval import Approval
from ..errors import ModelError
from ..requests import Approve, AskUser, CallModel, Request
from ..resume import resume
from ..runner import Runner
from ..session import Session
from ..templates.base import Template
from .live import Emit, HTTPProblem, Live, stored_view
from .store import Change, Store, dumps


class Engine:
    """Runs served conversations of one template on one store."""

    def __init__(self, runner: Runner, store: Store, *, cache_size: int = 1000) -> None:
        self.runner = runner
        self.store = store
        self.cache_size = cache_size
        self._cache: OrderedDict[str, Live] = OrderedDict()

    # -- the cache -----------------------------------------------------------------------

    def _keep(self, live: Live) -> None:
        self._cache[live.id] = live
        self._cache.move_to_end(live.id)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)  # evicted: rebuilt from the store when needed

    def _start(self, conversation_id: str, session: Session, *, replaying: bool,
               template: Template | None = None) -> Live:
        run = self.runner.start(session)
        live = Live(conversation_id, run, self.runner.drive(run, template), replaying=replaying,
                    state=dumps(session.state), approvals=len(session.approvals))
        run.on_event = live.on_event
        return live

    async def live(self, conversation_id: str) -> Live:
        """The paused conversation: from the cache when it is current, else rebuilt."""
        stored = await self.store.load(conversation_id, messages=False)
        if stored is None:
            raise HTTPProblem(404, f"no conversation {conversation_id!r}")
        if stored.status == "ended":
            raise HTTPProblem(409, f"conversation {conversation_id!r} has ended")
        cached = self._cache.get(conversation_id)
        if cached is not None and cached.committed == stored.length and \
                cached.children == stored.child_length and cached.pending is not None:
            self._keep(cached)
            return cached
        return await self._rebuild(conversation_id)

    async def _rebuild(self, conversation_id: str) -> Live:
        stored = await self.store.load(conversation_id)
        if stored is None:
            raise HTTPProblem(404, f"no conversation {conversation_id!r}")
        saved = Session(stored.messages, stored.state,
                        approvals={k: Approval.from_dict(a) for k, a in stored.approvals.items()},
                        subroutines=stored.subroutines)
        template, session = resume(self.runner.template, saved)
        live = self._start(conversation_id, session, replaying=True, template=template)
        live.pending = live.driver.send(None)  # replays to the first live request
        live.committed = len(stored.messages)
        live.stored()
        if stored.waiting_for and stored.waiting_for.get("type") == "retry":
            live.error = stored.waiting_for.get("error")
        elif isinstance(live.pending, CallModel):
            live.error = "the turn was interrupted before the model answered"
        self._keep(live)
        return live

    # -- turns ---------------------------------------------------------------------------

    async def create(self, state: dict[str, Any], emit: Emit | None) -> tuple[int, dict[str, Any]]:
        conversation_id = secrets.token_urlsafe(16)
        try:
            json.dumps(state)
        except TypeError as exc:
            raise HTTPProblem(400, f"state must be a JSON object: {exc}") from exc
        await self.store.create(conversation_id, state)
        async with self.store.turn(conversation_id):
            live = self._start(conversation_id, Session(state=state), replaying=False)
            code, body = await self._advance(live, None, emit, first=True)
        return (201 if code == 200 else code), body

    @contextlib.asynccontextmanager
    async def turn(self, conversation_id: str) -> Any:
        async with self.store.turn(conversation_id) as taken:
            if not taken:
                raise HTTPProblem(409, "a turn is running in this conversation: wait for it to "
                                       "end, then send again")
            yield await self.live(conversation_id)

    def expect(self, live: Live, kind: type[Request], what: str) -> None:
        if isinstance(live.pending, kind):
            return
        if isinstance(live.pending, Approve):
            raise HTTPProblem(409, "an approval is pending: answer it with POST "
                                   f"/api/conversations/{live.id}/approvals before {what}")
        if isinstance(live.pending, CallModel):
            raise HTTPProblem(409, "the last model call failed: POST "
                                   f"/api/conversations/{live.id}/retry before {what}")
        raise HTTPProblem(409, f"the conversation is waiting for a message, not {what}")

    async def message(self, live: Live, content: str, emit: Emit | None
                      ) -> tuple[int, dict[str, Any]]:
        self.expect(live, AskUser, "a message")
        return await self._advance(live, content, emit)

    async def approve(self, live: Live, decisions: list[dict[str, Any]], emit: Emit | None
                      ) -> tuple[int, dict[str, Any]]:
        self.expect(live, Approve, "approvals")
        assert isinstance(live.pending, Approve)
        by_id = {d["call_id"]: d for d in decisions}
        calls = live.pending.calls
        unknown = sorted(set(by_id) - {c.id for c in calls})
        missing = [c.id for c in calls if c.id not in by_id]
        if unknown or missing:
            parts = ([f"decide every pending call; missing: {', '.join(missing)}"]
                     if missing else []) + ([f"unknown call ids: {', '.join(unknown)}"]
                                           if unknown else [])
            raise HTTPProblem(400, "; ".join(parts))
        answers = [live.run.decided(c, Approval(bool(by_id[c.id]["approve"]),
                                                by_id[c.id].get("reason"))) for c in calls]
        return await self._advance(live, answers, emit)

    async def retry(self, live: Live, emit: Emit | None) -> tuple[int, dict[str, Any]]:
        self.expect(live, CallModel, "a retry")
        return await self._advance(live, None, emit, retry=True)

    async def _advance(self, live: Live, answer: Any, emit: Emit | None, *,
                       first: bool = False, retry: bool = False) -> tuple[int, dict[str, Any]]:
        """Answer the pending request and drive the conversation to its next pause."""
        live.emit, added_from = emit, live.committed
        await self.store.write(live.id, Change(status="running"))
        done = False
        try:
            failure = await self._drive(live, answer, live.pending if retry else None)
            done = True
        finally:
            live.emit = None
            if not done:  # cancelled (the server stops): rebuilt from the store next time
                self._cache.pop(live.id, None)
            await self._commit(live, final=done)
        self._keep(live)
        body = live.view(added_from)
        outcome = live.session.outcome
        if failure is not None:
            return 502, {"error": failure, **body}
        if outcome is not None and outcome.status == "error":
            return 500, {"error": outcome.error or "the conversation failed", **body}
        return 200, body

    async def _drive(self, live: Live, value: Any, request: Request | None) -> str | None:
        """Send ``value`` in (or answer ``request`` again) and go on until a request pauses,
        the flow ends, or a model call fails (its message, the conversation waits for retry).
        What each step added is committed before the next one starts."""
        send: Callable[[Any], Request] = live.driver.send
        while True:
            if request is None:
                try:
                    request = send(value)
                except StopIteration:
                    live.pending = None
                    return None
                await self._commit(live)
            if request.pauses:
                live.pending = request
                return None
            try:
                value = await getattr(live.run, "a" + request.handler)(request)
                send = live.driver.send
            except ModelError as exc:
                live.pending, live.error = request, str(exc)
                return str(exc)
            except Exception as exc:
                value, send = exc, live.driver.throw
            request = None

    async def _commit(self, live: Live, *, final: bool = False) -> None:
        """Write what the turn added so far; then (and only then) let the client see it."""
        fresh, live.fresh = live.fresh, []
        state = dumps(live.session.state)
        approvals = live.session.approvals
        subroutines = live.unstored()
        change = Change(
            messages=tuple(fresh),
            subroutines=tuple(subroutines),
            state=live.session.state if state != live.state else None,
            approvals={k: a.to_dict() for k, a in approvals.items()}
            if len(approvals) != live.approvals else None,
            status=live.status if final else None,
            waiting_for=live.waiting_for() if final else None,
            outcome=live.session.outcome.to_dict() if final and live.session.outcome else None,
        )
        if fresh or subroutines or change.state is not None or change.approvals is not None \
                or final:
            await self.store.write(live.id, change)
        live.state, live.approvals = state, len(approvals)
        live.stored()
        live.committed += len(fresh)
        if live.emit is not None:
            for _, message in fresh:
                live.emit("message", message.to_dict())

    async def get(self, conversation_id: str) -> dict[str, Any]:
        stored = await self.store.load(conversation_id)
        if stored is None:
            raise HTTPProblem(404, f"no conversation {conversation_id!r}")
        return stored_view(stored)

    async def delete(self, conversation_id: str) -> None:
        self._cache.pop(conversation_id, None)
        if not await self.store.delete(conversation_id):
            raise HTTPProblem(404, f"no conversation {conversation_id!r}")

