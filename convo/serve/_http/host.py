"""What the route modules beside ``app.py`` (``owners.py``, ``operators.py``, the faces) use
of the API object, as a Protocol: they take it without importing ``app.py``, which imports
them."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.types import Scope

    from .._engine import Engine
    from .._events import ServedEvent, Sink
    from .._live import Live
    from .._stores.base import Stored
    from .auth import Caller

#: A turn of a served conversation: run on its ``Live`` run, its served events sent to a
#: ``Sink`` when it streams; gives the status and the body.
Turn = Callable[["Live", "Sink | None"], Awaitable[tuple[int, dict[str, Any]]]]


class Host(Protocol):
    """The API object (``app.API``) as the route modules see it."""

    engine: Engine
    body_limit: int
    message_body_limit: int
    max_message_bytes: int
    max_attachment_bytes: int
    model_name: str
    tasks: set[asyncio.Task[Any]]

    async def caller(self, request: Request) -> Caller: ...

    def present(self, scope: Scope, code: int, body: dict[str, Any]) -> dict[str, Any]: ...

    def plain_events(self, sink: Sink) -> Sink: ...

    def _cut(self, scope: Scope, exc: Exception) -> ServedEvent: ...

    async def traced(self, request: Request, conversation_id: str | None, run: Any,
                     call: Callable[[], Awaitable[tuple[int, dict[str, Any]]]]
                     ) -> tuple[int, dict[str, Any]]: ...

    async def _turn(self, request: Request, turn: Turn, stored: Stored | None = None
                    ) -> Response: ...

