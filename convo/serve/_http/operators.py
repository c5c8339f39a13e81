"""What operators (staff) do in served conversations (API.md §19): talk to the user while a
conversation is handed to a person (the ``handoff`` tool), and hand it back to the bot.

A handed-off conversation is a run paused at ``HandOff`` (``convo._requests``): each message
said meanwhile answers it, and is stored as it is said; the user's come through the messages
route (``Engine.message``), the operators' through ``operator_messages`` here (an assistant
message with ``metadata["author"]`` = the operator's user id); ``handback`` answers ``None``,
the turn ends and the bot waits for the user's next message, the whole handoff in its history.
Approvals by staff (``approver="operator"``) are decided through the approvals route
(``Engine.approve``, which refuses a user's decision with 403).

Which conversations an operator reaches: every one (API.md §19); these routes are operators'
only, so the owner check of the other routes (``API.conversation_for``, ``owners.py``) has
nothing to add here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..._messages import Message
from .._live import Live
from .._problems import Conflict
from .bodies import HTTPProblem, read_object

if TYPE_CHECKING:
    from .._engine import Engine
    from .._events import Sink
    from .auth import Caller
    from .host import Host


def handed_off(live: Live, what: str) -> None:
    """A ``Conflict`` (409) unless the conversation is handed to a person."""
    if live.waits != "operator":
        raise Conflict(f"the conversation is not handed to a person: there is no handoff to "
                       f"{what}")


async def say(engine: Engine, live: Live, content: str, author: str, sink: Sink | None
              ) -> tuple[int, dict[str, Any]]:
    """An operator's message during a handoff (stored; no model runs)."""
    handed_off(live, "post operator messages to")
    message = Message("assistant", content, metadata={"author": author})
    return await engine.hand_off(live, message, sink)


async def hand_back(engine: Engine, live: Live, sink: Sink | None
                    ) -> tuple[int, dict[str, Any]]:
    """The handoff ends: the bot waits for the user's next message."""
    handed_off(live, "hand back")
    return await engine.hand_off(live, None, sink)


def operator_only(caller: Caller, what: str) -> None:
    if not caller.operator:
        raise HTTPProblem(403, f"only operators may {what}: sign in as an operator")


def operator_routes(api: Host) -> list[Route]:
    """``POST …/operator_messages {"content"}`` and ``POST …/handback {}``, operators only;
    each answers 200 + the conversation + ``added``, 409 when it is not handed off."""

    async def operator_messages(request: Request) -> Response:
        caller = await api.caller(request)
        operator_only(caller, "post operator messages")
        body = await read_object(request, api.body_limit)
        content = body.get("content")
        if not isinstance(content, str) or not content.strip():
            raise HTTPProblem(400, '"content" must be a string with some text: send '
                                   '{"content": "your message"}')
        if len(content.encode("utf-8")) > api.max_message_bytes:
            raise HTTPProblem(413, f'"content" is over {api.max_message_bytes} bytes')
        return await api._turn(request, lambda live, sink: say(
            api.engine, live, content, caller.user, sink))

    async def handback(request: Request) -> Response:
        caller = await api.caller(request)
        operator_only(caller, "hand a conversation back")
        await read_object(request, api.body_limit)
        return await api._turn(request, lambda live, sink: hand_back(api.engine, live, sink))

    return [Route("/api/conversations/{id}/operator_messages", operator_messages,
                  methods=["POST"]),
            Route("/api/conversations/{id}/handback", handback, methods=["POST"])]


__all__ = ["hand_back", "handed_off", "operator_routes", "say"]
