"""The Model protocol: messages and tool schemas in, one assistant Message out."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeAlias, runtime_checkable

from .._messages import Message

ToolSchemas: TypeAlias = Sequence[Mapping[str, Any]]
DeltaCallback: TypeAlias = Callable[[str], None]


@runtime_checkable
class Model(Protocol):
    """A chat model, sync and async.

    Both entry points take the conversation's messages and the tools' JSON schemas (OpenAI
    function-tool format) and return one assistant ``Message``, with ``tool_calls`` when the
    model called tools. A streaming model hands text deltas to ``on_delta`` as they arrive.
    A provider builds its reply with ``Message.assistant(text, calls, finish=, usage=,
    reasoning=, provider=)``: how it finished and the tokens it used, in no provider's words
    (``convo._reply``), are what the runner reads.
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

