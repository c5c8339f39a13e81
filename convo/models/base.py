"""The Model protocol: messages and tool schemas in, one assistant Message out."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeAlias, runtime_checkable

from ..messages import Message

ToolSchemas: TypeAlias = Sequence[Mapping[str, Any]]
DeltaCallback: TypeAlias = Callable[[str], None]


@runtime_checkable
class Model(Protocol):
    """A chat model, sync and async.

    Both entry points take the conversation's messages and the tools' JSON schemas (OpenAI
    function-tool format) and return one assistant ``Message``, with ``tool_calls`` when the
    model called tools. A streaming model hands text deltas to ``on_delta`` as they arrive.
    Token usage, where the model reports it, goes in ``message.metadata["usage"]`` as
    ``{"prompt_tokens", "completion_tokens", "total_tokens"}``.
    """

    def complete(
        self, messages: Sequence[Message], tools: ToolSchemas = (), *,
        on_delta: DeltaCallback | None = None,
    ) -> Message: ...

    async def acomplete(
        self, messages: Sequence[Message], tools: ToolSchemas = (), *,
        on_delta: DeltaCallback | None = None,
    ) -> Message: ...


class SyncModel:
    """Base for models that answer without I/O: ``acomplete`` calls ``complete``."""

    __slots__ = ()

    def complete(
        self, messages: Sequence[Message], tools: ToolSchemas = (), *,
        on_delta: DeltaCallback | None = None,
    ) -> Message:
        raise NotImplementedError

    async def acomplete(
        self, messages: Sequence[Message], tools: ToolSchemas = (), *,
        on_delta: DeltaCallback | None = None,
    ) -> Message:
        return self.complete(messages, tools, on_delta=on_delta)


class Deltas:
    """An ``on_delta`` callback that also takes streamed reasoning.

    Called with text, it hands it to ``text``, so every model can use it as a plain
    ``on_delta``; a model that streams reasoning (``OpenAIModel(api="responses")``, summaries
    of a reasoning model) hands that to ``reasoning`` instead of mixing it into the reply.
    """

    __slots__ = ("reasoning", "text")

    def __init__(self, text: DeltaCallback, reasoning: DeltaCallback | None = None) -> None:
        self.text = text
        self.reasoning = reasoning

    def __call__(self, text: str) -> None:
        self.text(text)


def reasoning_callback(on_delta: DeltaCallback | None) -> DeltaCallback | None:
    """Where a model sends streamed reasoning: ``on_delta``'s ``reasoning``, if it has one."""
    reasoning = getattr(on_delta, "reasoning", None)
    return reasoning if callable(reasoning) else None
