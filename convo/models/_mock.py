"""Models for tests and offline runs: MockModel, FunctionModel, EchoModel.

They are ordinary implementations of the Model protocol (STYLE habit 2), not switches inside
the real one.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

import attrs

from .._errors import ScriptError
from .._messages import Message
from ._base import DeltaCallback, SyncModel, ToolSchemas
from ._script import CallIds, as_message, format_conversation

Reply: TypeAlias = "str | Message | Callable[[Sequence[Message]], str | Message]"


@attrs.frozen(slots=True)
class ModelCall:
    """What a scripted model saw on one call."""

    messages: tuple[Message, ...]
    tools: tuple[Any, ...]

    @property
    def tool_names(self) -> tuple[str, ...]:
        return tuple(t["function"]["name"] for t in self.tools)


class MockModel(SyncModel):
    """Scripted replies, one per model call.

    A reply is a string (with the inline ``{tool(arg='x')}`` syntax for tool calls), a
    ``Message``, or a callable ``(messages) -> str | Message``. ``repeat_last=True`` repeats the
    last reply once the script runs out; otherwise running out raises ``ScriptError``.
    """

    __slots__ = ("_ids", "calls", "repeat_last", "replies")

    def __init__(self, responses: Sequence[Reply] = (), *, repeat_last: bool = False) -> None:
        if isinstance(responses, str | Message):
            responses = [responses]
        self.replies: list[Reply] = list(responses)
        self.repeat_last = repeat_last
        self.calls: list[ModelCall] = []
        self._ids = CallIds()

    def add(self, *replies: Reply) -> None:
        """Script more replies."""
        self.replies.extend(replies)

    @property
    def remaining(self) -> int:
        return max(0, len(self.replies) - len(self.calls))

    def complete(
        self, messages: Sequence[Message], tools: ToolSchemas = (), *,
        on_delta: DeltaCallback | None = None,
    ) -> Message:
        index = len(self.calls)
        self.calls.append(ModelCall(tuple(messages), tuple(tools)))
        if index < len(self.replies):
            reply = self.replies[index]
        elif self.repeat_last and self.replies:
            reply = self.replies[-1]
        else:
            raise ScriptError(
                f"MockModel ran out of replies: {len(self.replies)} scripted, and model call "
                f"{index + 1} asked for another. The conversation so far:\n"
                f"{format_conversation(messages)}"
            )
        if callable(reply):
            reply = reply(messages)
        return as_message(reply, self._ids, f"MockModel reply {index + 1}")

    def assert_complete(self) -> None:
        """Fail if scripted replies were left unused."""
        if len(self.calls) < len(self.replies):
            unused = self.replies[len(self.calls):]
            raise AssertionError(
                f"MockModel: {len(unused)} of {len(self.replies)} scripted replies were not "
                f"used (the model was called {len(self.calls)} times); next unused: "
                f"{unused[0]!r}"
            )

    def __repr__(self) -> str:
        return f"MockModel({len(self.replies)} replies, {len(self.calls)} calls)"


class FunctionModel(SyncModel):
    """A model whose replies come from ``fn(messages, tools) -> str | Message``.

    ``fn`` may be ``async def``. String replies use the inline tool-call syntax; their call ids
    continue the conversation's own (``call_<n>``), so one FunctionModel can serve many
    conversations at once, on any number of workers.
    """

    __slots__ = ("calls", "fn")

    def __init__(self, fn: Callable[[Sequence[Message], ToolSchemas], Any]) -> None:
        self.fn = fn
        self.calls = 0

    def complete(
        self, messages: Sequence[Message], tools: ToolSchemas = (), *,
        on_delta: DeltaCallback | None = None,
    ) -> Message:
        self.calls += 1
        reply = self.fn(messages, tools)
        if inspect.isawaitable(reply):
            import asyncio  # only here: asyncio is slow to import (see convo/_runner.py)

            reply = asyncio.run(_await(reply))
        return as_message(reply, CallIds.after(messages), "FunctionModel")

    async def acomplete(
        self, messages: Sequence[Message], tools: ToolSchemas = (), *,
        on_delta: DeltaCallback | None = None,
    ) -> Message:
        self.calls += 1
        reply = self.fn(messages, tools)
        if inspect.isawaitable(reply):
            reply = await reply
        return as_message(reply, CallIds.after(messages), "FunctionModel")


async def _await(awaitable: Any) -> Any:
    return await awaitable


class EchoModel(SyncModel):
    """Repeats the last user message."""

    __slots__ = ()

    def complete(
        self, messages: Sequence[Message], tools: ToolSchemas = (), *,
        on_delta: DeltaCallback | None = None,
    ) -> Message:
        for message in reversed(messages):
            if message.role == "user":
                return Message("assistant", message.content)
        return Message("assistant", "")
