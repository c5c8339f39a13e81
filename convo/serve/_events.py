"""The one stream of served events (API.md §24): what a served turn shows its client, typed.

A turn emits these, in order, to one ``Sink``; each protocol a client speaks is an
``Encoder`` of them (convo's own SSE, ``convo.serve._http.sse``; AG-UI or the AI SDK stream next),
so a new protocol is a new encoder and a route, and the engine does not change. No HTTP here.

A turn's events, in the order it emits them::

    MessageCommitted              each message, once the store has it (the user's first)
      ToolCallStarted             for each call of a committed assistant message:
      ToolCallArguments             its arguments (JSON text)
      ToolCallEnded                 and its end
      ToolResult                  after a committed tool message: the result of its call
    TextDelta, ReasoningDelta     streamed model text and reasoning, as it arrives
    Retract                       the text streamed since the last message is taken back (a
                                  guard tripped on it); the replacement is the next message
    WaitingFor                    where the conversation waits once the turn is over
    MessagesQueued                instead of a turn: the messages a request queued while
                                  another turn ran (API.md §26), on the faces that stream
    Paused                        the turn was stopped before its end (a cancel)
    TurnEnded | TurnFailed        last: the conversation as the client sees it, or the error

``WaitingFor`` carries the engine's own words (a retry's cause included); a face shows them
through its own plain-words rule, as the native API does (``API.plain``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import attrs

from .._messages import Message, ToolCall


@attrs.frozen(slots=True)
class ServedEvent:
    """One event of a served turn. ``handler`` names the ``Encoder`` method that shows it."""

    handler: ClassVar[str] = "other"


@attrs.frozen(slots=True)
class MessageCommitted(ServedEvent):
    """A message the turn added, shown only once the store has it (``index``: its place in
    the conversation's ``messages``)."""

    handler: ClassVar[str] = "message_committed"
    index: int
    message: Message


@attrs.frozen(slots=True)
class TextDelta(ServedEvent):
    """A piece of the reply's text, streamed by the model as it arrives (not yet stored);
    ``message_id``: the id the reply will be stored under."""

    handler: ClassVar[str] = "text_delta"
    text: str
    message_id: str | None = attrs.field(default=None, eq=False)


@attrs.frozen(slots=True)
class Retract(ServedEvent):
    """Every ``TextDelta`` since the last ``MessageCommitted`` is taken back (an output guard
    that shows the reply live tripped on it, API.md §27); the message that replaces it is the
    next committed one, whose id is ``message_id``."""

    handler: ClassVar[str] = "retract"
    message_id: str | None


@attrs.frozen(slots=True)
class ReasoningDelta(ServedEvent):
    """A piece of a reasoning model's summary of its reasoning, as it arrives;
    ``message_id``: the id its reply will be stored under."""

    handler: ClassVar[str] = "reasoning_delta"
    text: str
    message_id: str | None = attrs.field(default=None, eq=False)


@attrs.frozen(slots=True)
class ToolCallStarted(ServedEvent):
    """A tool call of the committed assistant message at ``message_index`` begins."""

    handler: ClassVar[str] = "tool_call_started"
    call: ToolCall
    message_index: int


@attrs.frozen(slots=True)
class ToolCallArguments(ServedEvent):
    """The arguments of call ``call_id``, as the wire carries them (JSON text)."""

    handler: ClassVar[str] = "tool_call_arguments"
    call_id: str
    arguments: str


@attrs.frozen(slots=True)
class ToolCallEnded(ServedEvent):
    """Call ``call_id`` is complete (its arguments all said); its result comes later."""

    handler: ClassVar[str] = "tool_call_ended"
    call_id: str


@attrs.frozen(slots=True)
class ToolResult(ServedEvent):
    """The result of call ``call_id``: the committed tool message at ``index``."""

    handler: ClassVar[str] = "tool_result"
    call_id: str
    index: int
    message: Message


@attrs.frozen(slots=True)
class WaitingFor(ServedEvent):
    """Where the conversation waits now that the turn is over: the conversation's
    ``waiting_for`` (API.md §9: a user's message, an approval, an operator, a retry)."""

    handler: ClassVar[str] = "waiting_for"
    waiting_for: dict[str, Any] = attrs.field(hash=False)


@attrs.frozen(slots=True)
class MessagesQueued(ServedEvent):
    """A request found a turn running and queued its messages instead of running one (API.md
    §26): each as ``Message.to_dict()``, with its ``id``, in the order they will be taken."""

    handler: ClassVar[str] = "messages_queued"
    messages: tuple[dict[str, Any], ...] = attrs.field(hash=False)


@attrs.frozen(slots=True)
class Paused(ServedEvent):
    """The turn was stopped before its end, asked to (a cancel, API.md §20): what it
    committed stays, and the conversation waits for a message."""

    handler: ClassVar[str] = "paused"


@attrs.frozen(slots=True)
class TurnEnded(ServedEvent):
    """The turn is over: the conversation as the client sees it, with ``added``."""

    handler: ClassVar[str] = "turn_ended"
    conversation: dict[str, Any] = attrs.field(hash=False)


@attrs.frozen(slots=True)
class TurnFailed(ServedEvent):
    """The turn failed (a model call, a bug, the store): the error body the client sees
    (``{"error", …}``) and the HTTP status it would have answered with."""

    handler: ClassVar[str] = "turn_failed"
    error: dict[str, Any] = attrs.field(hash=False)
    status: int = 500


#: Where a turn's events go.
Sink = Callable[[ServedEvent], None]

#: The events a stream ends with.
LAST: tuple[type[ServedEvent], ...] = (TurnEnded, TurnFailed)


def committed(index: int, message: Message) -> list[ServedEvent]:
    """The events of one committed message: the message, then what it means for tool calls
    (each call of an assistant message; the result a tool message is)."""
    events: list[ServedEvent] = [MessageCommitted(index, message)]
    if message.role == "assistant":
        for call in message.tool_calls:
            events += [ToolCallStarted(call, index), ToolCallArguments(
                call.id, call.arguments_json()), ToolCallEnded(call.id)]
    elif message.role == "tool" and message.tool_call_id is not None:
        events.append(ToolResult(message.tool_call_id, index, message))
    return events


class Encoder:
    """One protocol's view of the stream: a method per kind of event, each giving the text
    to send for it ("" says nothing, the default: a protocol shows what it has words for).
    A subclass overrides the kinds its protocol shows (pydantic-ai's ``UIEventStream``)."""

    def encode(self, event: ServedEvent) -> str:
        handle: Callable[[Any], str] = getattr(self, event.handler)
        return handle(event)

    def message_committed(self, event: MessageCommitted) -> str:
        return ""

    def text_delta(self, event: TextDelta) -> str:
        return ""

    def reasoning_delta(self, event: ReasoningDelta) -> str:
        return ""

    def retract(self, event: Retract) -> str:
        return ""

    def tool_call_started(self, event: ToolCallStarted) -> str:
        return ""

    def tool_call_arguments(self, event: ToolCallArguments) -> str:
        return ""

    def tool_call_ended(self, event: ToolCallEnded) -> str:
        return ""

    def tool_result(self, event: ToolResult) -> str:
        return ""

    def waiting_for(self, event: WaitingFor) -> str:
        return ""

    def paused(self, event: Paused) -> str:
        return ""

    def messages_queued(self, event: MessagesQueued) -> str:
        return ""

    def turn_ended(self, event: TurnEnded) -> str:
        return ""

    def turn_failed(self, event: TurnFailed) -> str:
        return ""

    def other(self, event: ServedEvent) -> str:
        return ""
