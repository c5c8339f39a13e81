"""The AI SDK face (API.md §24): ``POST /ai-sdk/chat`` takes the ``useChat`` body and streams
the reply as the UI message stream — the engine's one stream of served events through
``UIStreamEncoder``.

The chat ``id`` is the conversation's (``threads.py``: its owner's, made on its first
request, only new user messages added, under their ids). Approvals are the SDK's own: the
stream asks with ``tool-approval-request`` and the next request's messages carry the
responses. Frontend tools (the body's ``tools``) are offered to the model; a call to one ends
the stream as an approval does, and the next request's messages carry its output.
``regenerate-message`` branches the chat before the reply (``branches.regenerate``:
the branch takes the chat's id, the original a new one) and makes the reply again. Everything
that refuses a request — the body (400 naming the field), the chat
(404, 409), approvals not all answered (400 naming them), an operator's approval (403) — is
answered as JSON before any stream, as the native API does.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import attrs
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from ..._messages import Message
from ..._requests import Approve
from .._branches import regenerate
from .._events import ServedEvent, Sink, TurnEnded, TurnFailed
from .._live import Live, client_calls
from .._problems import Busy, Conflict, Forbidden, Refused
from .aisdk_events import HEADERS, UIStreamEncoder
from .aisdk_input import ChatInput, UIInput, chat_input
from .bodies import HTTPProblem, read_object
from .sse import stream_turn
from .threads import Keyed, open_thread, queue_run, queued_stream, run_steps, said_anew

if TYPE_CHECKING:

    from .._engine import Engine
    from .._stores.base import Stored
    from .auth import Caller
    from .host import Host

    Step = Callable[[Live, Sink], Awaitable[tuple[int, dict[str, Any]]]]


def routes(api: Host) -> list[BaseRoute]:
    return [Route("/ai-sdk/chat", partial(chat, api), methods=["POST"])]


async def chat(api: Host, request: Request) -> Response:
    caller = await api.caller(request)
    body = await read_object(request, api.message_body_limit)
    given = chat_input(body)
    for index, message in enumerate(given.messages):
        if message.role == "user" and len(message.text.encode("utf-8")) > api.max_message_bytes:
            raise HTTPProblem(413, f'"messages[{index}].parts" hold over '
                                   f"{api.max_message_bytes} bytes of text")
    regenerates = given.trigger == "regenerate-message"
    if regenerates and await api.engine.store.load(given.chat_id, messages=False) is None:
        raise HTTPProblem(404, f"no chat {given.chat_id!r}: there is no reply to regenerate "
                               "in a chat not started")
    stored, failed = await open_thread(api, request, caller, given.chat_id, None)
    request.state.conversation = given.chat_id
    if regenerates and failed is None and (stored.waiting_for or {}).get("type") != "retry":
        run: Callable[..., Awaitable[Response]] = _regenerate  # (a failed reply: a retry)
    else:
        run = _run
    key = request.headers.get("idempotency-key")
    if key is None:
        return await run(api, request, caller, given, stored, failed)
    content = {"messages": body["messages"], "trigger": given.trigger}
    if "tools" in body:
        content["tools"] = body["tools"]
    keyed = Keyed(api, given.chat_id, key, content, headers=HEADERS)
    repeat = await keyed.claim()
    if repeat is not None:
        return repeat
    try:
        return await run(api, request, caller, given, stored, failed, keyed)
    except (HTTPProblem, Refused) as exc:
        if not isinstance(exc, HTTPProblem) or exc.status < 500:
            await keyed.forget()  # refused before anything ran
        raise


async def _run(api: Host, request: Request, caller: Caller, given: ChatInput,
               stored: Stored | None, failed: dict[str, Any] | None, keyed: Keyed | None = None
               ) -> Response:
    """The reply, streamed (what the chat cannot take is refused first, as JSON); while
    another turn runs, what the body's ``while_busy`` asks (API.md §26), else 409."""
    stack = contextlib.AsyncExitStack()
    try:
        live = await stack.enter_async_context(api.engine.turn(given.chat_id, stored))
    except Busy:
        if given.while_busy == "reject":
            raise
        if given.while_busy == "interrupt":  # the request again, once the turn stopped
            again = attrs.evolve(given, while_busy="reject")
            return await api.engine.interrupt(given.chat_id, lambda: _run(
                api, request, caller, again, None, None, keyed))
        queued = await queue_run(api, given.chat_id, [(m, m.text) for m in given.messages],
                                 steer=given.while_busy == "steer")
        return await queued_stream(api, UIStreamEncoder(given.chat_id), None, queued, keyed,
                                   HEADERS)
    try:
        new: list[UIInput] = await said_anew(api, live, given.messages)
        continues = live.waits in ("approval", "client_tool") and failed is None
        steps = _plan(api.engine, live, given, new, caller) if failed is None else []
    except BaseException:
        await stack.aclose()
        raise
    encoder = UIStreamEncoder(given.chat_id, _reply_id(live) if continues else None)
    scope = request.scope

    async def go(sink: Sink) -> ServedEvent:
        async with stack:
            code, body = await run_steps(api, request, given.chat_id, live, sink, steps,
                                         _ready, failed)
        body = api.present(scope, code, body)
        return TurnEnded(body) if code < 400 else TurnFailed(body, code)

    return await stream_turn(go, tasks=api.tasks, cut=lambda exc: api._cut(scope, exc),
                             encoder=encoder if keyed is None else keyed.keeping(encoder),
                             headers=HEADERS)


async def _regenerate(api: Host, request: Request, caller: Caller, given: ChatInput,
                      stored: Stored, failed: dict[str, Any] | None, keyed: Keyed | None = None
                      ) -> Response:
    """``regenerate-message`` (API.md §24, §28): the chat is branched before the reply,
    under the chat's id (the original moves to a new id, the branch's ``parent``), and the
    branch makes that reply again, streamed. Refused as JSON first: a turn running (409), a
    reply that cannot be made again (400 naming it), new user messages (400)."""
    engine = api.engine
    chat_id = given.chat_id
    stack = contextlib.AsyncExitStack()
    try:
        turn = await stack.enter_async_context(engine.turns.hold(chat_id))
        if turn is None:
            raise Conflict("a turn is running in this chat: wait for it to end, then "
                           "regenerate")
        whole = await engine.store.load(chat_id)
        if whole is None:
            raise HTTPProblem(404, f"no chat {chat_id!r}")
        known = {m.id for m in whole.messages} | {q.message.id for q in whole.queued}
        new = [m.id for m in given.messages if m.role == "user" and m.id not in known]
        if new:
            raise HTTPProblem(400, "regenerate-message makes a reply again and adds no "
                                   f"message; not stored: {', '.join(new)} (send new "
                                   "messages with submit-message)")
        live = await regenerate(engine, chat_id, _before(whole.messages, given))
    except BaseException:
        await stack.aclose()
        raise
    scope = request.scope

    async def go(sink: Sink) -> ServedEvent:
        async with stack:
            if live.waits == "retry":  # the reply, made again
                code, body = await api.traced(request, chat_id, live.run.state, lambda: (
                    engine.retry(live, api.plain_events(sink))))
            else:  # (a branch before a user message waits for it: nothing to make)
                await engine.settle(live)
                code, body = 200, live.view(live.committed)
        body = api.present(scope, code, body)
        return TurnEnded(body) if code < 400 else TurnFailed(body, code)

    encoder = UIStreamEncoder(chat_id)
    return await stream_turn(go, tasks=api.tasks, cut=lambda exc: api._cut(scope, exc),
                             encoder=encoder if keyed is None else keyed.keeping(encoder),
                             headers=HEADERS)


def _before(messages: list[Message], given: ChatInput) -> int:
    """The index of the reply to make again: the one ``messageId`` names (a user message
    names the reply after it), else the last reply; 400 when there is none."""
    at = len(messages)
    if given.message_id is not None:
        at = next((i for i, m in enumerate(messages) if m.id == given.message_id), -1)
        if at < 0:
            raise HTTPProblem(400, f'"messageId" names no message of chat {given.chat_id!r}: '
                                   f"{given.message_id!r}")
        if messages[at].role == "assistant":
            return at
    else:
        at = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    reply = next((i for i in range(at + 1, len(messages))
                  if messages[i].role == "assistant"), None)
    if reply is None:
        raise HTTPProblem(400, f"chat {given.chat_id!r} has no reply "
                               f"{'after that message ' if given.message_id else ''}to "
                               "regenerate")
    return reply


def _reply_id(live: Live) -> str | None:
    """The id of the reply being continued: the first assistant message after the last
    user message (the UI message the client holds the approval requests in)."""
    messages = live.session.messages
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    return next((m.id for m in messages[last_user + 1:] if m.role == "assistant"), None)


def _plan(engine: Engine, live: Live, given: ChatInput, new: list[UIInput], caller: Caller
          ) -> list[partial[Any]]:
    """The engine calls the request makes, in order; a refusal (JSON, before any stream)
    when the chat cannot take them."""
    pending = live.pending
    chat_id = given.chat_id
    if pending is None:
        raise Conflict(f"chat {chat_id!r} has ended: start a new chat")
    steps: list[partial[Any]] = []
    if live.waits == "approval":
        assert isinstance(pending, Approve)
        open_ids = [c.id for c in pending.calls]
        answers = {a.interrupt_id: a for a in given.answers if a.interrupt_id in open_ids}
        missing = [i for i in open_ids if i not in answers]
        if missing:
            raise HTTPProblem(400, f"chat {chat_id!r} waits for tool approvals: the request's "
                                   "messages must answer every one (approval-responded); "
                                   f"not answered: {', '.join(missing)}")
        if pending.needs_operator and not caller.operator:
            raise Forbidden("this approval waits for an operator: an operator decides it "
                            "(the tool's approver is 'operator'), not the user")
        decisions = [{"call_id": a.interrupt_id, "approve": a.approve, "reason": a.reason}
                     for a in answers.values()]
        steps.append(partial(_approve, engine, decisions, caller.operator))
    elif live.waits == "client_tool":
        steps.append(_outputs(engine, live, given))
    elif live.waits == "retry":
        if new:
            raise Conflict("the last reply failed before it ended: send a request with no "
                           "new message (or regenerate) to retry it, then send the message")
        steps.append(partial(_retry, engine))
    engine.offer(live, list(given.tools))  # (refused requests above change nothing)
    steps += [partial(_say, engine, message) for message in new]
    return steps


def _outputs(engine: Engine, live: Live, given: ChatInput) -> partial[Any]:
    """The step that answers the frontend tool calls the chat waits on with the outputs its
    messages carry (``addToolOutput``); 400 naming the calls without one."""
    calls = [c.id for c in client_calls(live.pending)]
    outputs: dict[str, tuple[str, str | None]] = {
        o.call_id: (o.text, None) for o in given.outputs if o.call_id in calls}
    missing = [c for c in calls if c not in outputs]
    if missing:
        raise HTTPProblem(400, f"chat {given.chat_id!r} waits for the output of frontend tool "
                               "calls: the request's messages must carry every one "
                               f"(addToolOutput); missing: {', '.join(missing)}")
    return partial(_tool_outputs, engine, outputs)


async def _tool_outputs(engine: Engine, outputs: dict[str, tuple[str, str | None]],
                        live: Live, sink: Sink) -> tuple[int, dict[str, Any]]:
    return await engine.tool_results(live, outputs, sink)


async def _approve(engine: Engine, decisions: list[dict[str, Any]], operator: bool,
                   live: Live, sink: Sink) -> tuple[int, dict[str, Any]]:
    return await engine.approve(live, decisions, sink, operator=operator)


async def _retry(engine: Engine, live: Live, sink: Sink) -> tuple[int, dict[str, Any]]:
    return await engine.retry(live, sink)


def _ready(step: Any, live: Live) -> bool:
    """A new user message is said only while the conversation waits for one."""
    return step.func is not _say or live.waits in ("user", "operator")


async def _say(engine: Engine, message: UIInput, live: Live, sink: Sink
               ) -> tuple[int, dict[str, Any]]:
    return await engine.message(live, message.text, sink, message_id=message.id)
