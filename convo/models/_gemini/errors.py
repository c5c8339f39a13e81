"""How a failure of the ``google-genai`` SDK becomes a ``ModelError`` that names the server,
its status and what to check (a prompt longer than the context: ``ContextLengthError``), and
which failures are worth another try. Pure functions of the SDK's exception: tested without a
server.

The SDK raises ``errors.APIError`` (``ClientError`` for 4xx, ``ServerError`` for 5xx) for an
HTTP error, and lets its HTTP library's own exceptions (httpx or httpx2) through for a
timeout or a connection that failed.
"""

from __future__ import annotations

import json
from typing import Any, Final

from google.genai import errors

from ..._errors import ContextLengthError, ModelError
from .._overflow import says_context_too_long

SERVER_TEXT_LIMIT: Final = 4000
RETRIED: Final = frozenset({408, 429, 500, 502, 503, 504})
"""The statuses tried again (as the openai and anthropic SDKs do)."""
_CONTEXT_HINT: Final = ("The conversation is longer than the model's context window: bound "
                        "what is sent with ContextWindow (see docs/context.md), shorten it, "
                        "or use a model with a longer context")
# Gemini's words: "The input token count (N) exceeds the maximum number of tokens allowed".
_GEMINI_TOO_LONG: Final = ("input token count", "exceeds the maximum number of tokens")


Errors = tuple[type[BaseException], ...]


def _transport_errors() -> tuple[Errors, Errors, Errors]:
    """``(timeouts, connections broken mid-reply, all transport failures)`` of whichever HTTP
    libraries are installed."""
    found: tuple[list[type[BaseException]], ...] = ([], [], [])
    for name in ("httpx", "httpx2"):
        try:
            module: Any = __import__(name)
        except ImportError:
            continue
        found[0].append(module.TimeoutException)
        found[1].extend((module.RemoteProtocolError, module.ReadError))
        found[2].append(module.TransportError)
    return tuple(found[0]), tuple(found[1]), tuple(found[2])


TIMEOUTS, BROKEN, TRANSPORT = _transport_errors()
MALFORMED: Final[Errors] = (errors.UnknownApiResponseError, json.JSONDecodeError)
"""A reply whose body is not JSON, as the SDK reads it."""
FAILURES: Final[Errors] = (errors.APIError, *TRANSPORT, *MALFORMED)
"""What a call through the SDK may raise that ``sdk_error`` turns into a ``ModelError``."""


def retried(exc: BaseException) -> bool:
    """Whether another try may succeed: 408, 429 and 5xx of ``RETRIED``, a timeout, a
    connection that failed."""
    if isinstance(exc, errors.APIError):
        return exc.code in RETRIED
    return isinstance(exc, TRANSPORT)


def retry_after(exc: BaseException) -> float | None:
    """The server's ``Retry-After`` (seconds), when it sent one."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    value = headers.get("retry-after") if headers is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def sdk_error(exc: BaseException, where: str, *, model: str, timeout: float | None,
              max_retries: int) -> ModelError:
    """A ``ModelError`` for ``exc``, raised calling ``where`` (a base URL and model name)."""
    retries = f"after {max_retries} retries" if max_retries else "with retries off"
    if isinstance(exc, TIMEOUTS):
        limit = f"{timeout:g} s" if timeout is not None else "the SDK's timeout"
        return ModelError(f"no HTTP status: {where} did not answer within {limit} "
                          f"({retries}). Check the base URL and that the server is up, or "
                          "raise timeout=")
    if isinstance(exc, MALFORMED):
        return ModelError(f"malformed reply from {where}: {exc}. Check that the base URL "
                          "points at the Gemini API")
    if isinstance(exc, BROKEN):
        return ModelError(f"no complete reply: the connection to {where} broke before the "
                          f"reply was complete ({exc}), {retries}. Check the server and the "
                          "network; try again")
    if isinstance(exc, TRANSPORT):
        return ModelError(f"no HTTP status: could not reach {where} ({exc}), {retries}. "
                          "Check the base URL (base_url=) and the network")
    if isinstance(exc, errors.APIError):
        status = int(exc.code)
        kind = f" ({exc.status})" if exc.status else ""
        said = _server_says(exc.message)
        text = f"HTTP {status}{kind} from {where}{said}."
        lowered = said.lower()
        if status in (400, 413) and (says_context_too_long(said)
                                     or all(p in lowered for p in _GEMINI_TOO_LONG)):
            return ContextLengthError(f"{text} {_CONTEXT_HINT}")
        return ModelError(f"{text} {_hint(status, model, retries)}")
    return ModelError(f"the google-genai SDK failed calling {where}: {exc}")


def _server_says(message: Any) -> str:
    if not message:
        return ""
    text = str(message)
    if len(text) > SERVER_TEXT_LIMIT:
        text = f"{text[:SERVER_TEXT_LIMIT]}... ({len(text) - SERVER_TEXT_LIMIT} more characters)"
    return f": {text}"


def _hint(status: int, model: str, retries: str) -> str:
    if status in (401, 403):
        return "Check the API key (api_key=, GEMINI_API_KEY or GOOGLE_API_KEY) and its permissions"
    if status == 404:
        return f"Check the model name ({model!r}) and the base URL"
    if status == 429:
        return f"Rate limited {retries}: check your quota, slow down, or raise max_retries="
    if status >= 500:
        return f"The server failed {retries}: try again"
    return (f"The server rejected the request: check the model name ({model!r}), thinking= "
            "and the extra settings passed to generate_content()")
