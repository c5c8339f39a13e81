"""SDK failures become ModelErrors that name the server, the status and what to check — tested
on the SDK's own exception objects, without a server."""

from __future__ import annotations

import httpx2
import openai

from convo.models.errors import sdk_error

WHERE = "http://127.0.0.1:9/v1 (model 'm')"


def _status(code: int, body: object) -> openai.APIStatusError:
    request = httpx2.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    response = httpx2.Response(code, request=request)
    return openai.APIStatusError("failed", response=response, body=body)


def _error(exc: openai.OpenAIError, **kw: object) -> str:
    options: dict[str, object] = {"model": "m", "timeout": None, "max_retries": 2, **kw}
    return str(sdk_error(exc, WHERE, **options))  # type: ignore[arg-type]


def test_a_404_names_the_model_and_the_base_url() -> None:
    message = _error(_status(404, {"error": {"message": "model 'm' not found"}}))
    assert message == (
        f"HTTP 404 Not Found from {WHERE}: model 'm' not found. Check the model name ('m') "
        "and the base URL (base_url= or OPENAI_BASE_URL; it usually ends in /v1)"
    )


def test_a_401_points_at_the_key() -> None:
    assert _error(_status(401, None)).endswith(
        "Check the API key (api_key= or OPENAI_API_KEY) and its permissions")


def test_a_timeout_names_the_limit() -> None:
    request = httpx2.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    message = _error(openai.APITimeoutError(request), timeout=3.0, max_retries=0)
    assert message == (f"no HTTP status: {WHERE} did not answer within 3 s (with retries off). "
                       "Check the base URL and that the server is up, or raise timeout=")


def test_a_refused_connection_says_to_check_the_server() -> None:
    request = httpx2.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    exc = openai.APIConnectionError(request=request)
    exc.__cause__ = ConnectionRefusedError("refused")
    assert _error(exc) == (
        f"no HTTP status: could not connect to {WHERE} (refused), after 2 retries. Check the "
        "base URL (base_url= or OPENAI_BASE_URL) and that the server is running"
    )
