"""Whose conversation is whose (API.md §19), and the routes that rest on it: the list of
conversations, feedback on replies, and the operators' reading of that feedback.

Each conversation belongs to the user who created it. To anybody else its id answers 404,
as if it were not there; operators may read any conversation, and act on another user's only
where the route lets them (approvals, and the operators' own routes: ``operator_may``), else
403 saying who may.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .._stores.base import Conversations, Listing, Ratings, Stored
from .._stores.feedback import checked, view_of
from .._stores.listing import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    TITLE_CHARS,
    WAITING_KINDS,
    Query,
    page,
    parse_iso,
    read_cursor,
    text_of_record,
)
from .auth import Caller
from .bodies import HTTPProblem, read_object

STATUSES = ("waiting", "running", "ended")

if TYPE_CHECKING:
    from .host import Host


async def conversation_for(store: Conversations, caller: Caller, conversation_id: str, *,
                           operator_may: bool, messages: bool = False) -> Stored:
    """The conversation (its row; with ``messages``, all of it) if ``caller`` may act on it:
    its owner always; an operator when ``operator_may`` (else 403); anybody else: 404. The
    route's one read of it: what it reads is handed on (to the engine, to the view)."""
    stored = await store.load(conversation_id, messages=messages)
    if stored is None or (stored.owner != caller.user and not caller.operator):
        raise HTTPProblem(404, f"no conversation {conversation_id!r}")
    if stored.owner != caller.user and not operator_may:
        raise HTTPProblem(403, f"only the user who started conversation {conversation_id!r} "
                               f"({stored.owner!r}) may do this; an operator acts on it "
                               "through approvals, operator_messages and handback")
    return stored


async def as_shown(store: Conversations, stored: Stored, body: dict[str, Any], caller: Caller
                   ) -> dict[str, Any]:
    """A conversation's view as the routes that show one (``GET``, ``cancel``) answer it: with
    its ``title`` as the list shows it, for an operator its ``user`` (as in their list), and
    its owner's ratings (``"feedback"``: what their page shows pressed). One read; a turn's
    answer goes without these, so a turn reads nothing more from the store."""
    found = {} if not isinstance(store, Ratings) else await store.ratings(stored.id, stored.owner)
    # (a store without ratings, such as one written before they were: none shown)
    shown = {**body, "title": _title(stored, body)}
    if caller.operator:
        shown["user"] = stored.owner
    shown["feedback"] = view_of(found)
    return shown


def _title(stored: Stored, body: dict[str, Any]) -> str | None:
    """The row's title; or, when the row was read before its first user message was stored
    (a turn ran in between), the title that message gives it."""
    if stored.title is not None:
        return stored.title
    for message in body.get("messages", ()):
        if message.get("role") == "user":
            return text_of_record(message)[:TITLE_CHARS]
    return None


def lacks(store: object, capability: str, what: str, then: str = "") -> HTTPProblem:
    """The 501 of a route whose store lacks an optional ``capability`` (``stores/base.py``: a store
    of the user's own may leave it out)."""
    return HTTPProblem(501, f"this server's store ({type(store).__name__}) does not {what}: "
                            f"it implements no {capability} (convo.serve._stores){then}")


def _limit(text: str | None) -> int:
    if text is None:
        return DEFAULT_LIMIT
    if not text.isdigit() or not 1 <= int(text) <= MAX_LIMIT:
        raise HTTPProblem(400, f'"limit" must be a whole number from 1 to {MAX_LIMIT} '
                               f"(default {DEFAULT_LIMIT}), got {text!r}")
    return int(text)


def query_of(caller: Caller, params: Any) -> Query:
    """The list a caller asks for: a user's own conversations (filters ignored), or, for an
    operator, everybody's, filtered by ``user``, ``status`` and ``waiting_for``."""
    try:
        before = None if params.get("before") is None else read_cursor(params["before"])
    except ValueError as exc:
        raise HTTPProblem(400, str(exc)) from None
    limit = _limit(params.get("limit"))
    if not caller.operator:
        return Query(owner=caller.user, limit=limit, before=before)
    waiting = params.get("waiting_for")
    if waiting is not None and waiting not in WAITING_KINDS:
        raise HTTPProblem(400, f'"waiting_for" must be one of {", ".join(WAITING_KINDS)}, '
                               f"got {waiting!r}")
    status = params.get("status")
    if status is not None and status not in STATUSES:
        raise HTTPProblem(400, f'"status" must be one of {", ".join(STATUSES)}, got {status!r}')
    return Query(owner=params.get("user"), limit=limit, before=before, status=status,
                 waiting_for=waiting)


async def list_conversations(api: Host, request: Request) -> Response:
    """``GET /api/conversations``: the caller's conversations (an operator's: everybody's),
    newest activity first, a page at a time."""
    caller = await api.caller(request)
    query = query_of(caller, request.query_params)
    store = api.engine.store
    if not isinstance(store, Listing):
        raise lacks(store, "Listing", "list conversations")
    rows = await store.conversations(query)
    return JSONResponse(page(rows, query, with_user=caller.operator))


async def post_feedback(api: Host, request: Request) -> Response:
    """``POST /api/conversations/{id}/feedback``: the owner rates one assistant message."""
    caller = await api.caller(request)
    conversation_id = request.path_params["id"]
    await conversation_for(api.engine.store, caller, conversation_id, operator_may=False)
    try:
        index, rating, comment = checked(await read_object(request, api.body_limit))
    except ValueError as exc:
        raise HTTPProblem(400, str(exc)) from None
    stored = await api.engine.store.load(conversation_id)
    if stored is None:
        raise HTTPProblem(404, f"no conversation {conversation_id!r}")
    if index >= len(stored.messages) or stored.messages[index].role != "assistant":
        found = (f"it has {len(stored.messages)} messages" if index >= len(stored.messages)
                 else f"message {index} is a {stored.messages[index].role} message")
        raise HTTPProblem(400, f'"message" must be the 0-based index of an assistant message '
                               f"in conversation {conversation_id!r}, got {index}: {found}")
    store = api.engine.store
    if not isinstance(store, Ratings):
        raise lacks(store, "Ratings", "keep ratings")
    await store.rate(conversation_id, index, rating, comment, caller.user)
    return Response(status_code=204)


async def read_feedback(api: Host, request: Request) -> Response:
    """``GET /api/feedback?since=ISO``: every rating (operators only)."""
    caller = await api.caller(request)
    if not caller.operator:
        raise HTTPProblem(403, "only operators may read the feedback of all conversations")
    since = request.query_params.get("since")
    try:
        after = None if since is None else parse_iso(since, '"since"')
    except ValueError as exc:
        raise HTTPProblem(400, str(exc)) from None
    store = api.engine.store
    if not isinstance(store, Ratings):
        raise lacks(store, "Ratings", "keep ratings")
    rows = await store.feedback(after)
    return JSONResponse({"feedback": [row.to_dict() for row in rows]})
