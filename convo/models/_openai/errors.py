"""How a failure of the openai SDK becomes a ``ModelError`` that names the server, its
status and what to check. Pure functions of the SDK's exception: tested without a server.
"""

from __future__ import annotations

import re
from typing import Any, Final

import openai

from ..._errors import ContextLengthError, ModelError
from .._overflow import says_context_too_long

# The server's own words are often the only useful line: kept whole up to this many characters.
SERVER_TEXT_LIMIT: Final = 4000

# How servers say that they (or the model) take no native tools: Ollama's "does not support
# tools", vLLM's "--enable-auto-tool-choice", llama.cpp's "--jinja", and the generic shapes.
_NO_TOOLS: Final = re.compile(
    r"does not support tools|tools? (?:are |is )?not supported|unsupported .*tool|"
    r"tool.*(?:not support|unsupported|requires|not allowed|unrecognized|unknown)|"
    r"enable-auto-tool-choice|tool-call-parser|--jinja", re.IGNORECASE)


def sdk_error(exc: openai.OpenAIError, where: str, *, model: str, timeout: float | None,
              max_retries: int) -> ModelError:
    """A ModelError for ``exc``, raised calling ``where`` (a base URL and model name)."""
    retries = (f"after {max_retries} retries" if max_retries
               else "with retries off")
    if isinstance(exc, openai.APITimeoutError):
        limit = f"{timeout:g} s" if timeout is not None else "the SDK's timeout"
        return ModelError(
            f"no HTTP status: {where} did not answer within {limit} ({retries}). Check "
            "the base URL and that the server is up, or raise timeout="
        )
    if isinstance(exc, openai.APIConnectionError):
        return _connection_error(exc, where, retries)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        said = _server_says(exc)
        if says_context_too_long(said) or _context_code(exc):
            return ContextLengthError(f"HTTP {status}{_reason(exc)} from {where}{said}. "
                                      f"{_CONTEXT_HINT}")
        hint = _hint(status, model, retries)
        if _NO_TOOLS.search(said):
            hint = ("The server or the model takes no native tools: use tool_format=\"text\" "
                    "(convo run --tool-format text), which describes the tools in the prompt")
        return ModelError(f"HTTP {status}{_reason(exc)} from {where}{said}. {hint}")
    if isinstance(exc, openai.APIResponseValidationError):
        return ModelError(
            f"malformed reply (HTTP {exc.status_code}) from {where}: {exc.message}. Check "
            "that the base URL points at an OpenAI-compatible /v1 endpoint"
        )
    if "credentials" in str(exc).lower() or "api_key" in str(exc):
        return ModelError(
            f"OpenAIModel has no API key ({exc}): set OPENAI_API_KEY or pass api_key=; "
            "for a local server pass base_url="
        )
    return ModelError(f"the openai SDK failed calling {where}: {exc}")


def _reason(exc: openai.APIStatusError) -> str:
    phrase = getattr(exc.response, "reason_phrase", "") or ""
    return f" {phrase}" if phrase else ""


def _server_says(exc: openai.APIStatusError) -> str:
    body = exc.body
    message: Any = None
    if isinstance(body, dict):
        error = body.get("error", body)
        message = error.get("message") if isinstance(error, dict) else error
    elif body:
        message = body
    if not message:
        return ""
    text = str(message)
    if len(text) > SERVER_TEXT_LIMIT:
        text = f"{text[:SERVER_TEXT_LIMIT]}... ({len(text) - SERVER_TEXT_LIMIT} more characters)"
    return f": {text}"


_CONTEXT_HINT = ("The conversation is longer than the model's context window: bound what is sent "
                 "with ContextWindow (Runner(..., context=ContextWindow(max_tokens=...)); see "
                 "docs/context.md), shorten it (fewer or shorter messages, smaller tool "
                 "results), lower max_tokens, or use a model with a longer context")



def _context_code(exc: openai.APIStatusError) -> bool:
    """OpenAI's error code for a request longer than the model's context."""
    body = exc.body
    error = body.get("error", body) if isinstance(body, dict) else None
    return isinstance(error, dict) and error.get("code") == "context_length_exceeded"


def _hint(status: int, model: str, retries: str) -> str:
    if status in (401, 403):
        return "Check the API key (api_key= or OPENAI_API_KEY) and its permissions"
    if status == 404:
        return (f"Check the model name ({model!r}) and the base URL (base_url= or "
                "OPENAI_BASE_URL; it usually ends in /v1)")
    if status == 429:
        return (f"Rate limited {retries}: check your quota, slow down, or raise "
                "max_retries=")
    if status >= 500:
        return (f"The server failed {retries}: check the server and its logs, the base URL "
                f"and the model name ({model!r}); try again")
    return (f"The server rejected the request: check the model name ({model!r}), the base "
            "URL and the extra settings passed to create()")


def is_connect_error(exc: BaseException) -> bool:
    """Whether the HTTP library failed to connect at all (httpx and httpx2 name it alike)."""
    return any(cls.__name__ in ("ConnectError", "ConnectTimeout", "UnsupportedProtocol")
               or issubclass(cls, ConnectionRefusedError) for cls in type(exc).__mro__)


def _connection_error(exc: openai.APIConnectionError, where: str, retries: str) -> ModelError:
    cause = exc.__cause__ or exc.__context__
    detail = f" ({cause})" if cause else ""
    if cause is not None and not is_connect_error(cause):
        return ModelError(
            f"no HTTP status: the connection to {where} broke off before the reply "
            f"was complete{detail}, {retries}. Check the server and the network; "
            "try again"
        )
    return ModelError(
        f"no HTTP status: could not connect to {where}{detail}, {retries}. Check the "
        "base URL (base_url= or OPENAI_BASE_URL) and that the server is running"
    )
