"""SDK failures become ModelErrors that name the server, the status and what to check — tested
on the SDK's own exception objects, without a server."""

from __future__ import annotations

import httpx2
import openai

from convo.models._openai.errors import sdk_error

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


def test_a_context_length_400_says_the_conversation_is_too_long() -> None:
    """The hint fits the error (not "check the model name")."""
    llama = _status(400, {"error": {"code": 400, "message": "the request exceeds the available "
                                    "context size, try increasing it", "type": "x"}})
    openai_style = _status(400, {"error": {"code": "context_length_exceeded",
                                           "message": "This model's maximum context length "
                                           "is 8192 tokens."}})
    for exc in (openai_style, llama):
        message = _error(exc)
        assert message.endswith(
            "The conversation is longer than the model's context window: bound what is sent "
            "with ContextWindow (Runner(..., context=ContextWindow(max_tokens=...)); see "
            "docs/context.md), shorten it (fewer or shorter messages, smaller tool results), "
            "lower max_tokens, or use a model with a longer context")
        assert "model name" not in message
    assert "model name" in _error(_status(400, {"error": {"message": "bad temperature"}}))
    assert "context window" in _error(_status(400, {"error": {"message": "maximum context "
                                                                     "length exceeded"}}))
    assert "model name" in _error(_status(400, {"error": {"message": "context is fine"}}))
NO_TOOLS = [
    "registry.ollama.ai/library/gemma:2b does not support tools",
    '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
    "tools param requires --jinja flag",
    "Tools are not supported for this model",
]


def test_a_server_without_tools_suggests_the_text_format() -> None:
    for text in NO_TOOLS:
        message = _error(_status(400, {"error": {"message": text}}))
        assert message == (
            f"HTTP 400 Bad Request from {WHERE}: {text}. The server or the model takes no "
            'native tools: use tool_format="text" (convo run --tool-format text), which '
            "describes the tools in the prompt"
        ), text


def test_an_other_400_keeps_the_general_hint() -> None:
    message = _error(_status(400, {"error": {"message": "temperature must be <= 2"}}))
    assert message.endswith("The server rejected the request: check the model name ('m'), "
                            "the base URL and the extra settings passed to create()")


def test_the_server_text_is_kept_whole_up_to_4000_characters() -> None:
    useful = "x" * 3990 + " LAST LINE"
    assert f": {useful}. " in _error(_status(500, {"error": {"message": useful}}))
    longer = "y" * 5000
    message = _error(_status(500, {"error": {"message": longer}}))
    assert f": {'y' * 4000}... (1000 more characters). The server failed" in message
