"""The AG-UI face (API.md §24): ``POST /agui`` takes a ``RunAgentInput`` and streams the run
as AG-UI events — the engine's one stream of served events through ``AGUIEncoder``.

A thread is a conversation (``threads.py``: its owner's, made on its first run, only new user
messages added). Everything that refuses a run — the body (400 naming the field), the thread
(404, 409), open interrupts not all answered (400 naming them), an operator's approval (403) —
is answered as JSON before any stream, as the native API does.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import attrs
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from ..._requests import Approve
from .._events import ServedEvent, Sink, TurnEnded, TurnFailed
from .._live import Live, client_calls
from .._problems import Busy, Conflict, Forbidden, Refused
from .agui_events import AGUIEncoder, Opened, snapshot, user_content
from .agui_input import InputMessage, RunInput, run_input
from .bodies import HTTPProblem, content_of, read_object
from .sse import stream_turn
from .threads import (
    Keyed,
    open_thread,
    queue_run,
    queued_stream,
    run_steps,
    said_anew,
)

if TYPE_CHECKING:
    from .._engine import Engine
    from .._stores.base import Stored
    from .auth import Caller
    from .host import Host


def routes(api: Host) -> list[BaseRoute]:
    return [Route("/agui", partial(agui, api), methods=["POST"])]


async def agui(api: Host, request: Request) -> Response:
    caller = await api.caller(request)
    body = await read_object(request, api.message_body_limit)
    run = _with_parts(api, run_input(body))
    for index, message in enumerate(run.messages):
        if message.role == "user" and len(message.text.encode("utf-8")) > api.max_message_bytes:
            raise HTTPProblem(413, f'"messages[{index}].content" is over '
                                   f"{api.max_message_bytes} bytes")
    stored, failed = await open_thread(api, request, caller, run.thread_id, run.state,
                                       fresh_ok=not run.resume)
    request.state.conversation = run.thread_id
    key = request.headers.get("idempotency-key")
    if key is None:
        return await _run(api, request, caller, run, stored, failed)
    keyed = Keyed(api, run.thread_id, key, {"messages": body["messages"],
                                            "resume": body.get("resume"),
                                            "tools": body.get("tools")})
    repeat = await keyed.claim()
    if repeat is not None:
        return repeat
    try:
        return await _run(api, request, caller, run, stored, failed, keyed)
    except (HTTPProblem, Refused) as exc:
        if not isinstance(exc, HTTPProblem) or exc.status < 500:
            await keyed.forget()  # refused before anything ran
        raise


def _with_parts(api: Host, run: RunInput) -> RunInput:
    """``run`` with its user messages' images, sounds and documents read as convo's parts
    (API.md §16: 400 naming a malformed part, 413 for one over ``--max-attachment-bytes``)."""
    if all(m.parts is None for m in run.messages):
        return run
    messages = []
    for index, message in enumerate(run.messages):
        if message.parts is not None:
            try:
                content = content_of({"content": list(message.parts)}, api.max_message_bytes,
                                     api.max_attachment_bytes)
            except HTTPProblem as exc:
                raise HTTPProblem(exc.status, f'"messages[{index}].content": {exc}') from None
            message = attrs.evolve(message, content=content)
        messages.append(message)
    return attrs.evolve(run, messages=tuple(messages))


async def _run(api: Host, request: Request, caller: Caller, run: RunInput,
               stored: Stored | None, failed: dict[str, Any] | None, keyed: Keyed | None = None
               ) -> Response:
    """The run, streamed (what the thread cannot take is refused first, as JSON); while
    another turn runs, what ``forwardedProps.while_busy`` asks (API.md §26), else 409."""
    stack = contextlib.AsyncExitStack()
    try:
        live = await stack.enter_async_context(api.engine.turn(run.thread_id, stored))
    except Busy:
        if run.while_busy == "reject" or run.resume:
            raise
        if run.while_busy == "interrupt":  # the run again, once the running turn stopped
            again = attrs.evolve(run, while_busy="reject")
            return await api.engine.interrupt(run.thread_id, lambda: _run(
                api, request, caller, again, None, None, keyed))
        queued = await queue_run(api, run.thread_id, [
            (m, m.text if m.content is None else m.content) for m in run.messages],
            steer=run.while_busy == "steer")
        return await queued_stream(api, AGUIEncoder(
            run.thread_id, run.run_id, parent_run_id=run.parent_run_id), Opened(), queued,
            keyed)
    try:
        new = await said_anew(api, live, run.messages)
        steps = _plan(api.engine, live, run, new, caller) if failed is None else []
    except BaseException:
        await stack.aclose()
        raise
    opened = _opened(live, run, new)
    encoder = AGUIEncoder(run.thread_id, run.run_id, state=live.session.state,
                          parent_run_id=run.parent_run_id, messages=live.session.messages)
    scope = request.scope

    async def go(sink: Sink) -> ServedEvent:
        async with stack:
            sink(opened)
            code, body = await run_steps(api, request, run.thread_id, live, sink, steps,
                                         lambda step, live: step.ready(live), failed)
        body = api.present(scope, code, body)
        return TurnEnded(body) if code < 400 else TurnFailed(body, code)

    return await stream_turn(go, tasks=api.tasks, cut=lambda exc: api._cut(scope, exc),
                             encoder=encoder if keyed is None else keyed.keeping(encoder))


class _Step:
    """One engine call of a run, and when it may be made."""

    def __init__(self, run: Callable[[Live, Sink], Any], ready: Callable[[Live], bool]) -> None:
        self.run, self.ready = run, ready

    async def __call__(self, live: Live, sink: Sink) -> tuple[int, dict[str, Any]]:
        answer: tuple[int, dict[str, Any]] = await self.run(live, sink)
        return answer


def _plan(engine: Engine, live: Live, run: RunInput, new: list[InputMessage], caller: Caller
          ) -> list[_Step]:
    """The engine calls the run makes, in order; a refusal (JSON, before any stream) when the
    thread cannot take them."""
    pending = live.pending
    if pending is None:
        raise Conflict(f"thread {run.thread_id!r} has ended: start a new thread")
    answers = list(run.resume or ())
    steps: list[_Step] = []
    if live.waits == "approval":
        assert isinstance(pending, Approve)
        open_ids = [c.id for c in pending.calls]
        answered = {a.interrupt_id for a in answers}
        missing = [i for i in open_ids if i not in answered]
        unknown = sorted(answered - set(open_ids))
        if missing or unknown:
            said = [f"open interrupts not answered: {', '.join(missing)}"] if missing else []
            said += [f"unknown interrupt ids: {', '.join(unknown)}"] if unknown else []
            raise HTTPProblem(400, "resume must answer every open interrupt of thread "
                                   f"{run.thread_id!r} ({'; '.join(said)})")
        if pending.needs_operator and not caller.operator:
            raise Forbidden("this approval waits for an operator: an operator decides it "
                            "(the tool's approver is 'operator'), not the user")
        decisions = [{"call_id": a.interrupt_id, "approve": a.approve, "reason": a.reason}
                     for a in answers]
        steps.append(_Step(lambda live, sink: engine.approve(
            live, decisions, sink, operator=caller.operator), lambda live: True))
    elif answers:
        raise HTTPProblem(400, f"resume answers no open interrupt: thread {run.thread_id!r} "
                               "has none (unknown interrupt ids: "
                               f"{', '.join(a.interrupt_id for a in answers)})")
    elif live.waits == "client_tool":
        steps.append(_results(engine, pending, run))
    elif live.waits == "retry":
        if new:
            raise Conflict("the last run failed before it ended: send a run with no new "
                           "message to retry it, then send the message")
        steps.append(_Step(lambda live, sink: engine.retry(live, sink),
                           lambda live: True))
    offers = [{"name": t.name, "description": t.description, "parameters": t.parameters}
              for t in run.tools]
    engine.offer(live, offers)  # (refused runs above change nothing)
    for message in new:
        steps.append(_Step(partial(_say, engine, message),
                           lambda live: live.waits in ("user", "operator")))
    return steps


def _results(engine: Engine, pending: Any, run: RunInput) -> _Step:
    """The step that answers the frontend tool calls the thread waits on with the input's
    tool messages (each stored under its client id); 400 naming the calls without one."""
    calls = [c.id for c in client_calls(pending)]
    given = {m.tool_call_id: (m.text, m.id) for m in run.messages
             if m.role == "tool" and m.tool_call_id in calls}
    missing = [c for c in calls if c not in given]
    if missing:
        raise HTTPProblem(400, "the run must carry a tool message with the result of every "
                               f"pending frontend tool call; missing: {', '.join(missing)}")
    results = {k: v for k, v in given.items() if k is not None}
    return _Step(lambda live, sink: engine.tool_results(live, results, sink),
                 lambda live: True)


async def _say(engine: Engine, message: InputMessage, live: Live, sink: Sink
               ) -> tuple[int, dict[str, Any]]:
    content = message.text if message.content is None else message.content
    return await engine.message(live, content, sink, message_id=message.id)


def _opened(live: Live, run: RunInput, new: list[InputMessage]) -> Opened:
    """The snapshots the client lacks: the server's state when the input's differs, the
    stored messages when the input lacks some (then the run's new user messages)."""
    state = live.session.state
    sent_state = dict(state) if run.state is not None and run.state != state else None
    have = {m.id for m in run.messages}
    messages = live.session.messages
    lacking = any(m.role != "system" and m.id not in have for m in messages)
    shown = None
    if lacking:
        shown = snapshot(messages, run.thread_id) + [
            {"id": m.id, "role": "user", "content": user_content(
                m.text if m.content is None else m.content)} for m in new]
    return Opened(sent_state, shown)

