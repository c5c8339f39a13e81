"""How a failure of the ``anthropic`` SDK becomes a ``ModelError`` that names the server, its
status and what to check (a prompt longer than the context: ``ContextLengthError``). Pure
functions of the SDK's exception: tested without a server.
"""

from __future__ import annotations

from typing import Any, Final

import anthropic

from ..._errors import ContextLengthError, ModelError
from .._overflow import says_context_too_long

SERVER_TEXT_LIMIT: Final = 4000
_CONTEXT_HINT: Final = ("The conversation is longer than the model's context window: bound "
                        "what is sent with ContextWindow (see docs/context.md), shorten it, "
                        "lower max_tokens, or use a model with a longer context")


def sdk_error(exc: anthropic.AnthropicError, where: str, *, model: str,
              timeout: float | None, max_retries: int) -> ModelError:
    """A ``ModelError`` for ``exc``, raised calling ``where`` (a base URL and model name)."""
    retries = f"after {max_retries} retries" if max_retries else "with retries off"
    if isinstance(exc, anthropic.APITimeoutError):
        limit = f"{timeout:g} s" if timeout is not None else "the SDK's timeout"
        return ModelError(f"no HTTP status: {where} did not answer within {limit} "
                          f"({retries}). Check the base URL and that the server is up, or "
                          "raise timeout=")
    if isinstance(exc, anthropic.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        detail = f" ({cause})" if cause else ""
        return ModelError(f"no HTTP status: could not reach {where}{detail}, {retries}. "
                          "Check the base URL (base_url= or ANTHROPIC_BASE_URL) and the "
                          "network")
    if isinstance(exc, anthropic.APIStatusError):
        status = exc.status_code
        kind, said = _server_says(exc.body)
        text = f"HTTP {status}{kind} from {where}{said}."
        if status in (400, 413) and says_context_too_long(said):
            return ContextLengthError(f"{text} {_CONTEXT_HINT}")
        return ModelError(f"{text} {_hint(status, model, retries)}")
    return ModelError(f"the anthropic SDK failed calling {where}: {exc}")


def _server_says(body: Any) -> tuple[str, str]:
    """``(" (error type)", ": message")`` from Anthropic's error JSON."""
    error = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, dict):
        kind = f" ({error['type']})" if isinstance(error.get("type"), str) else ""
        message = error.get("message")
    else:
        kind, message = "", error
    if not message:
        return kind, ""
    text = str(message)
    if len(text) > SERVER_TEXT_LIMIT:
        text = f"{text[:SERVER_TEXT_LIMIT]}... ({len(text) - SERVER_TEXT_LIMIT} more characters)"
    return kind, f": {text}"


def _hint(status: int, model: str, retries: str) -> str:
    if status in (401, 403):
        return "Check the API key (api_key= or ANTHROPIC_API_KEY) and its permissions"
    if status == 404:
        return f"Check the model name ({model!r}) and the base URL"
    if status == 429:
        return f"Rate limited {retries}: check your quota, slow down, or raise max_retries="
    if status == 529:
        return f"Anthropic is overloaded ({retries}): try again later, or raise max_retries="
    if status >= 500:
        return f"The server failed {retries}: try again"
    return (f"The server rejected the request: check the model name ({model!r}), thinking= "
            "and the extra settings passed to messages.create()")
