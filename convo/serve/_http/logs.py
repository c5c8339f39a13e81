"""What a served app says about itself (API.md §20): one log line per request, failures with
an ``error_id`` in the log and in the answer, and plain words for end users.

Two pure ASGI middlewares, outermost first: ``RequestLog`` (method, path, status, ms,
conversation, user) and ``Failures`` (an exception no route handled: a JSON 500 with an
``error_id``, its traceback to the log). Routes note what the log should say on the request's
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


class RequestLog:
    """One line per HTTP request, when its answer is complete."""

    def __init__(self, app: ASGIApp, nobody: str | None = "default") -> None:
        self.app, self.nobody = app, nobody

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started, status = time.perf_counter(), [500]
        state = scope.setdefault("state", {})

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            _log_request(scope, state, status[0], (time.perf_counter() - started) * 1000,
                         self.nobody)


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


class Failures:
    """An exception no route handled: a JSON 500 with an ``error_id`` (the cause, with its
    traceback, goes to the log; to the client only with ``debug``), never a plain-text page."""

    def __init__(self, app: ASGIApp, debug: bool = False) -> None:
        self.app, self.debug = app, debug

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = [False]

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                started[0] = True
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as exc:
            cause = f"{type(exc).__name__}: {exc}"
            error_id = failure(scope, cause)
            logger.error("error_id=%s: %s", error_id, cause, exc_info=exc,
                         extra={"convo_fields": None})
            if started[0]:
                return  # a stream was cut: nothing more can be said to this client
            body = json.dumps({"error": cause if self.debug else SERVER_FAILED,
                               "error_id": error_id}).encode()
            await send({"type": "http.response.start", "status": 500,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body})


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
