"""What a served app says about itself (API.md §20): one log line per request, failures with
an ``error_id`` in the log and in the answer, and plain words for end users.

One pure ASGI middleware, ``Front``, around every route: the request's log line (method, path,
status, ms, conversation, user), an exception no route handled (a JSON 500 with an
``error_id``, its traceback to the log), and the store opened before the first request (a JSON
503 while it does not answer). One middleware, not three: each would wrap the request and its
``send`` again, for every request. Routes note what the log should say on the request's
``scope["state"]``: ``conversation`` (a create's new id), ``user`` (whoever signed in; a
request nobody signed in to logs ``nobody``: ``default`` without sign-in, else none), and
``failure`` (the ``error_id`` and cause of a 5xx they answered). Everything goes to the
``convo.serve`` logger; ``convo serve`` shows it on stderr, as text or JSON
(``--log-format json``).
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, Final

from starlette.types import ASGIApp, Message, Receive, Scope, Send

logger: Final = logging.getLogger("convo.serve")
MODEL_FAILED: Final = "The assistant could not answer. Please try again."
SERVER_FAILED: Final = "Something went wrong on the server. Please try again later."
_CONVERSATION: Final = re.compile(r"/api/conversations/([^/]+)")


def failure(scope: Scope, cause: str) -> str:
    """Note a 5xx's cause on the request; its new ``error_id``."""
    error_id = secrets.token_hex(6)
    scope.setdefault("state", {})["failure"] = (error_id, cause)
    return error_id


#: Whatever opens the store before the first request: ``None`` once it is open, else why it
#: does not answer (said as a 503).
Opening = Callable[[], Awaitable[str | None]]


class Front:
    """Around every HTTP request (module docstring): its log line when its answer is complete,
    a JSON 500 for an exception no route handled (with ``debug``, its cause), and ``ready``
    awaited first."""

    def __init__(self, app: ASGIApp, nobody: str | None = "default", *, debug: bool = False,
                 ready: Opening | None = None) -> None:
        self.app, self.nobody, self.debug, self.ready = app, nobody, debug, ready

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started, status = time.perf_counter(), [0]  # (0: no answer started yet)
        state = scope.setdefault("state", {})

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            down = None if self.ready is None else await self.ready()
            if down is None:
                await self.app(scope, receive, sending)
            else:
                await _answer(sending, 503, {"error": down, "error_id": failure(scope, down)})
        except Exception as exc:
            cause = f"{type(exc).__name__}: {exc}"
            error_id = failure(scope, cause)
            logger.error("error_id=%s: %s", error_id, cause, exc_info=exc,
                         extra={"convo_fields": None})
            if not status[0]:  # (else a stream was cut: nothing more can be said to it)
                await _answer(sending, 500, {"error": cause if self.debug else SERVER_FAILED,
                                             "error_id": error_id})
        finally:
            _log_request(scope, state, status[0] or 500,
                         (time.perf_counter() - started) * 1000, self.nobody)


async def _answer(send: Send, status: int, body: dict[str, Any]) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})


def _log_request(scope: Scope, state: dict[str, Any], status: int, ms: float,
                 nobody: str | None) -> None:
    level = logging.ERROR if status >= 500 or "failure" in state else logging.INFO
    if not logger.isEnabledFor(level):
        return
    found = _CONVERSATION.search(scope.get("path", ""))
    fields: dict[str, Any] = {
        "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
        "method": scope.get("method"), "path": scope.get("path"), "status": status,
        "ms": round(ms, 1),
        "conversation": state.get("conversation") or (found.group(1) if found else None),
        "user": state.get("user", nobody)}
    failed = state.get("failure")
    if failed is not None:
        fields["error_id"], fields["error"] = failed
    text = (f"{fields['method']} {fields['path']} {status} {fields['ms']}ms "
            f"conversation={fields['conversation'] or '-'} user={fields['user'] or '-'}")
    if failed is not None:
        text += f" error_id={failed[0]} cause: {failed[1]}"
    logger.log(level, text, extra={"convo_fields": fields})


class JSONLines(logging.Formatter):
    """A request line as one JSON object (``time, method, path, status, ms, conversation,
    user``, and ``error_id, error`` for a 5xx); any other record as ``time, level, message``."""

    def format(self, record: logging.LogRecord) -> str:
        fields = getattr(record, "convo_fields", None)
        if fields is None:
            fields = {"time": datetime.fromtimestamp(record.created, UTC).isoformat(
                timespec="milliseconds"), "level": record.levelname.lower(),
                "message": record.getMessage()}
            if record.exc_info:
                fields["traceback"] = self.formatException(record.exc_info)
        return json.dumps(fields, ensure_ascii=False)


def show_logs(log_format: str) -> None:
    """Send the ``convo.serve`` logger's lines to stderr (``convo serve``), as ``text`` or
    ``json``."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JSONLines() if log_format == "json"
                         else logging.Formatter("convo: %(message)s"))
    logger.handlers[:] = [handler]
    logger.setLevel(logging.INFO)
    logger.propagate = False
