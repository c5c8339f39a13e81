"""Recognising a server's "the conversation is longer than the model's context" error.

Pure text checks (no SDK import), shared by the SDK error translation (``_errors.py``) and
``convo.context``.
"""

from __future__ import annotations

from typing import Final

CONTEXT_PHRASES: Final = (
    "context_length_exceeded", "maximum context length", "context length", "context_length",
    "maximum context", "exceeds the available context size", "exceed_context_size",
    "exceeds the context", "context window", "context size", "prompt is too long",
    "input is too long", "too many tokens", "max_new_tokens", "reduce the length",
)


def says_context_too_long(message: str) -> bool:
    """Whether a server's error ``message`` says the conversation is longer than the model's
    context (OpenAI's wording and the common compatible servers': vLLM, llama.cpp, TGI, LM
    Studio)."""
    lowered = message.lower()
    return any(phrase in lowered for phrase in CONTEXT_PHRASES)


def context_length_hint(message: str) -> str | None:
    """What to do about a server's error ``message``, when it says the context is too long.

    Recognises OpenAI's wording and the common compatible servers' (vLLM, llama.cpp, TGI,
    LM Studio); ``None`` for any other message.
    """
    if not says_context_too_long(message):
        return None
    return ("The conversation is longer than the model's context: bound what is sent with "
            "ContextWindow (Runner(..., context=ContextWindow(max_tokens=...)); see "
            "docs/context.md), or use a model with a longer context")
