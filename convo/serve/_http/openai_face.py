"""The OpenAI face (API.md §25): the bot as a model at ``/v1``, for the ``openai`` SDK,
``llm``, Open WebUI, promptfoo and every client of OpenAI's API.

``GET /v1/models`` names the bot; ``POST /v1/chat/completions`` and ``POST /v1/responses``
run a turn on the one engine, streamed or not (``openai_wire.py`` writes the answers). A
request names its conversation (``X-Convo-Conversation``, ``metadata.conversation_id``,
``conversation``, ``previous_response_id``) and adds its trailing user messages to it; or it
names none, and the client's history is replayed into a new conversation by the engine's own
rebuild (``Engine.adopted``: the replay a served rebuild does, over the client's messages),
checked against the template (400 naming the first message it does not follow). Sign-in and
ownership are §19's, keys §20's; errors are OpenAI-shaped with §9's statuses, and every
answer about a conversation carries ``X-Convo-Conversation``.

The requests are read and checked in ``openai_asks.py``; here is one turn's path for both
APIs: ownership, idempotency, the replay, then JSON or a stream.
"""

from __future__ import annotations

import contextlib
import secrets
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import attrs
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ..._parts import Content
from .._branches import branch
from .._events import Encoder, ServedEvent, Sink, TurnEnded, TurnFailed
from .._live import Live
from .._problems import NotFollowed, Refused, status_of
from .._stores.base import Idempotency, Stored
from .auth import Caller
from .bodies import HTTPProblem, read_object
from .keys import answer, reference
from .openai_asks import Ask, Problem, chat_ask, digest, responses_ask
from .openai_wire import (
    HEADER,
    ChatEncoder,
    ResponsesEncoder,
    completion,
    error_body,
    replayed,
    response,
)
from .owners import lacks
from .sse import stream_turn

if TYPE_CHECKING:
    from .host import Host


class OpenAIFace:
    """The ``/v1`` routes of one app (``Host``: the API object)."""

    def __init__(self, api: Host) -> None:
        self.api = api

    async def models(self, request: Request) -> Response:
        await self.api.caller(request)
        return JSONResponse({"object": "list", "data": [{
            "id": self.api.model_name, "object": "model", "created": 0,
            "owned_by": "convo"}]})

    async def chat(self, request: Request) -> Response:
        caller = await self.api.caller(request)
        body = await read_object(request, self.api.message_body_limit)
        ask = chat_ask(request, body, self.api.max_message_bytes)
        created = int(time.time())
        completion_id = f"chatcmpl-{uuid.uuid4().hex}"
        model = self.api.model_name

        def encoder(conversation: str) -> Encoder:
            return ChatEncoder(conversation, model=model, completion_id=completion_id,
                               created=created, include_usage=ask.include_usage)

        return await self.converse(request, caller, ask, encoder, lambda body: completion(
            body, model=model, completion_id=completion_id, created=created))

    async def responses(self, request: Request) -> Response:
        caller = await self.api.caller(request)
        body = await read_object(request, self.api.message_body_limit)
        ask, follows = responses_ask(body, self.api.max_message_bytes)
        created = int(time.time())
        model = self.api.model_name
        if follows is not None:
            forked = await self.latest(caller, *follows)
            if forked is not None:  # an earlier response: the new input goes on the fork
                ask = attrs.evolve(ask, conversation=forked)

        def shown(body: dict[str, Any]) -> dict[str, Any]:
            at = len(body.get("messages", ())) - len(body.get("added", ()))
            return response(body, model=model, at=at, created=created)

        return await self.converse(request, caller, ask, lambda conversation: (
            ResponsesEncoder(conversation, model=model, created=created)), shown)

    async def latest(self, caller: Caller, conversation: str, at: int) -> str | None:
        """Where a response that follows ``previous_response_id`` goes: ``None`` when it names
        the conversation's latest response (the conversation itself goes on); an earlier one
        forks the conversation before the user message that came after it (§28: a branch,
        its ``parent`` the conversation) and the fork's id is returned."""
        stored = await self._owned(caller, conversation, messages=True)
        if stored is None or at >= len(stored.messages) \
                or stored.messages[at].role != "user":
            raise Problem(404, f"no response {f'resp_{at}_{conversation}'!r}",
                          "previous_response_id")
        later = next((i for i in range(at + 1, len(stored.messages))
                      if stored.messages[i].role == "user"), None)
        if later is None:
            return None
        code, body = await branch(self.api.engine, conversation, later, None)
        if code >= 400:
            raise Problem(code, str(body.get("error", "the fork failed")),
                          "previous_response_id")
        forked: str = body["id"]
        return forked

    async def _owned(self, caller: Caller, conversation: str, *, messages: bool = False
                     ) -> Stored | None:
        """The conversation's row if it is there; another user's is 404 (§19), an
        operator's included (operators act through the native API)."""
        stored = await self.api.engine.store.load(conversation, messages=messages)
        if stored is not None and stored.owner != caller.user:
            raise Problem(404, f"no conversation {conversation!r}")
        return stored

    # -- one turn, for both APIs ---------------------------------------------------------

    async def converse(self, request: Request, caller: Caller, ask: Ask,
                       encoder: Callable[[str], Encoder],
                       shown: Callable[[dict[str, Any]], dict[str, Any]]) -> Response:
        """Run the request's turn(s) on its conversation, and answer as JSON (``shown``) or
        as a stream (``encoder``)."""
        key = request.headers.get("idempotency-key")
        store = self.api.engine.store
        if key is not None and not isinstance(store, Idempotency):
            raise lacks(store, "Idempotency", "keep idempotency records",
                        "; send the request without an Idempotency-Key")
        conversation = ask.conversation
        if conversation is None:  # a new one; a key names it, per caller (§25)
            conversation = f"k{digest([caller.user, key])[:40]}" if key is not None \
                else secrets.token_urlsafe(16)
        stored = await self._owned(caller, conversation)
        if stored is not None:  # (a new one is named once it is there)
            request.state.conversation = conversation
        if stored is None and not ask.creates and ask.conversation is not None:
            raise Problem(404, f"no conversation {conversation!r}", "conversation")
        if key is not None and stored is not None:
            assert isinstance(store, Idempotency)
            known = await store.idempotent(conversation, key)
            if known is not None:
                return await self.repeat(conversation, known, ask, encoder, shown)
        stack = contextlib.AsyncExitStack()
        live = await stack.enter_async_context(self._live(conversation, stored, ask, caller))
        request.state.conversation = conversation
        if key is not None:
            assert isinstance(store, Idempotency)
            if not await store.remember(conversation, key, ask.digest, None):
                await stack.aclose()
                known = await store.idempotent(conversation, key)
                assert known is not None
                return await self.repeat(conversation, known, ask, encoder, shown)

        async def turn(sink: Sink | None) -> tuple[int, dict[str, Any]]:
            try:
                code, result = await self._said(live, ask.said, sink)
            except (HTTPProblem, Refused) as exc:
                if key is not None and status_of(exc) < 500:  # the key stays unused
                    assert isinstance(store, Idempotency)
                    await store.forget(conversation, key)
                raise
            if key is not None:
                assert isinstance(store, Idempotency)
                await store.remember(conversation, key, ask.digest, reference(code, result))
            return code, result

        if not ask.stream:
            async with stack:
                code, result = await turn(None)
            return self.answer(request, conversation, code, result, shown)
        return await self.stream(request, conversation, stack, turn, encoder(conversation))

    def _live(self, conversation: str, stored: Stored | None, ask: Ask, caller: Caller
              ) -> contextlib.AbstractAsyncContextManager[Live]:
        """The conversation's turn: a known one as the native API takes it; a new one holding
        the client's history (the engine's replay; 400 naming a message it does not follow)."""
        engine = self.api.engine
        if stored is not None:
            return engine.turn(conversation, stored)
        return _placed(engine.adopted(conversation, ask.history, owner=caller.user), ask)

    async def _said(self, live: Live, said: list[Content], sink: Sink | None
                    ) -> tuple[int, dict[str, Any]]:
        """Each trailing user message answers the bot's next ask, in order; the answer is
        the last one's turn (the only one streamed)."""
        code: int = 200
        result: dict[str, Any] = {}
        for n, content in enumerate(said):
            code, result = await self.api.engine.message(
                live, content, sink if n == len(said) - 1 else None)
            if code != 200:
                break
        return code, result

    def answer(self, request: Request, conversation: str, code: int, result: dict[str, Any],
               shown: Callable[[dict[str, Any]], dict[str, Any]]) -> Response:
        body = self.api.present(request.scope, code, result)
        if code >= 400:
            return failed(code, str(body.get("error")), conversation,
                          code=body.get("error_id"))
        return JSONResponse(shown(body), headers={HEADER: conversation})

    async def stream(self, request: Request, conversation: str,
                     stack: contextlib.AsyncExitStack,
                     turn: Callable[[Sink | None], Awaitable[tuple[int, dict[str, Any]]]],
                     encoder: Encoder) -> Response:
        api = self.api

        async def run(sink: Sink) -> ServedEvent:
            async with stack:
                code, result = await turn(api.plain_events(sink))
            body = api.present(request.scope, code, result)
            return TurnEnded(body) if code < 400 else TurnFailed(body, code)

        answered = await stream_turn(run, tasks=api.tasks, encoder=encoder,
                                     cut=lambda exc: api._cut(request.scope, exc))
        answered.headers[HEADER] = conversation
        return answered

    async def repeat(self, conversation: str, known: tuple[str, dict[str, Any] | None],
                     ask: Ask, encoder: Callable[[str], Encoder],
                     shown: Callable[[dict[str, Any]], dict[str, Any]]) -> Response:
        """A request repeated with its ``Idempotency-Key``: the first answer again (a
        stream shows its events again), nothing run."""
        digest, record = known
        if digest != ask.digest:
            raise Problem(409, "this Idempotency-Key was used with other content")
        if record is None:
            raise Problem(409, "a request with this Idempotency-Key is still running (or was "
                               "cut off): wait, or use a new key")
        stored = await self.api.engine.store.load(conversation)
        code, body = answer(record, stored.messages if stored is not None else [])
        if code >= 400:
            return failed(code, str(body.get("error")), conversation)
        if not ask.stream:
            return JSONResponse(shown(body), headers={HEADER: conversation})
        shows = encoder(conversation)
        text = "".join(shows.encode(event) for event in replayed(body))
        return Response(text, media_type="text/event-stream",
                        headers={HEADER: conversation, "Cache-Control": "no-store"})


@contextlib.asynccontextmanager
async def _placed(adopted: contextlib.AbstractAsyncContextManager[Live], ask: Ask
                  ) -> Any:
    """``adopted``, its ``NotFollowed`` said at the request's own index of the message."""
    try:
        entered = await adopted.__aenter__()
    except NotFollowed as exc:
        where = f"{ask.field}[{ask.places[exc.at]}]"
        raise Problem(400, f"{where} is not what the bot waits for there: it waits for "
                           f"{exc.wants}; the conversation cannot have gone this way",
                      ask.field) from None
    try:
        yield entered
    except BaseException as exc:
        if not await adopted.__aexit__(type(exc), exc, exc.__traceback__):
            raise
    else:
        await adopted.__aexit__(None, None, None)


def failed(status: int, message: str, conversation: str | None = None, *,
           param: str | None = None, code: str | None = None) -> JSONResponse:
    """An OpenAI-shaped error. A conflict or a failed turn tells the SDK not to send it
    again by itself (``x-should-retry: false``): the conversation waits where it said."""
    headers = {HEADER: conversation} if conversation else {}
    if status == 409 or status >= 500:
        headers["x-should-retry"] = "false"
    return JSONResponse(error_body(status, message, param=param, code=code), status,
                        headers=headers)


def _openai_errors(handler: Callable[[Request], Awaitable[Response]]
                   ) -> Callable[[Request], Awaitable[Response]]:
    """Refusals answered in OpenAI's shape, with the conversation's header when known."""
    async def answered(request: Request) -> Response:
        try:
            return await handler(request)
        except (HTTPProblem, Refused) as exc:
            return failed(status_of(exc), str(exc),
                          getattr(request.state, "conversation", None),
                          param=getattr(exc, "param", None))
    return answered


def routes(api: Host) -> list[BaseRoute]:
    """The OpenAI face's routes (``faces.py``)."""
    face = OpenAIFace(api)
    return [Route("/v1/models", _openai_errors(face.models), methods=["GET"]),
            Route("/v1/chat/completions", _openai_errors(face.chat), methods=["POST"]),
            Route("/v1/responses", _openai_errors(face.responses), methods=["POST"])]
