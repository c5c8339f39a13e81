"""AG-UI 1.0 as an ``Encoder`` of the served events (API.md §24): each event a ``data: <json>``
line of camelCase fields, the message ids those the store keeps.

A run's frame is the face's own: ``Opened`` (``RUN_STARTED``, then the snapshots the client
lacks) before the turn's events, and the last event, ``TurnEnded`` or ``TurnFailed``, becomes
``RUN_FINISHED`` (with an interrupt for pending approvals, ``pendingToolCallIds`` for a
frontend tool's call, and ``CUSTOM`` events for a handoff or the conversation's end) or
``RUN_ERROR``; a run whose messages were queued (API.md §26) says ``CUSTOM``
``convo.queued`` between its ``RUN_STARTED`` and ``RUN_FINISHED``. A reply a guard
retracts (API.md §27, ``stream="live"``) ends its text message,
says ``CUSTOM`` ``convo.retract``, and is replaced by a ``MESSAGES_SNAPSHOT`` (AG-UI has no
event that takes text back; a snapshot is how its clients correct their messages). Plain
dicts: no AG-UI package is needed to serve (the tests parse every event with ``ag_ui.core``'s
models).
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Sequence
from typing import Any, ClassVar

import attrs

from ..._messages import Message
from ..._parts import Content, Text
from .._events import (
    Encoder,
    MessageCommitted,
    MessagesQueued,
    ReasoningDelta,
    Retract,
    ServedEvent,
    TextDelta,
    ToolCallArguments,
    ToolCallEnded,
    ToolCallStarted,
    ToolResult,
    TurnEnded,
    TurnFailed,
)
from .._live import said_nothing


@attrs.frozen(slots=True)
class Opened(ServedEvent):
    """The run begins: ``state`` and ``messages`` are the snapshots to send at once (``None``:
    the client has them)."""

    handler: ClassVar[str] = "opened"
    state: dict[str, Any] | None = attrs.field(default=None, hash=False)
    messages: list[dict[str, Any]] | None = attrs.field(default=None, hash=False)


def _now() -> int:
    """A run's start and end are stamped (milliseconds since the epoch, as AG-UI's are)."""
    return time.time_ns() // 1_000_000


def frame(event: dict[str, Any]) -> str:
    return f"data: {json.dumps(event, ensure_ascii=False, separators=(',', ':'))}\n\n"


def agui_message(message: Message, fallback_id: str) -> dict[str, Any] | None:
    """A stored message as AG-UI shows it in ``MESSAGES_SNAPSHOT`` (``None``: a system
    message, which AG-UI clients do not show)."""
    message_id = message.id or fallback_id
    if message.role == "user":
        return {"id": message_id, "role": "user", "content": user_content(message.content)}
    if message.role == "tool":
        return {"id": message_id, "role": "tool", "content": message.text,
                "toolCallId": message.tool_call_id or ""}
    if message.role == "assistant":
        shown: dict[str, Any] = {"id": message_id, "role": "assistant"}
        if message.text:
            shown["content"] = message.text
        if message.tool_calls:
            shown["toolCalls"] = [{"id": c.id, "type": "function", "function": {
                "name": c.name, "arguments": c.arguments_json()}} for c in message.tool_calls]
        return shown
    return None


def user_content(content: Content) -> str | list[dict[str, Any]]:
    """A user message's content as AG-UI 1.0 says it: its text, or its parts (an image, a
    sound or a document given by its data or its URL, as the client sent it)."""
    if isinstance(content, str):
        return content
    shown: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, Text):
            shown.append({"type": "text", "text": part.text})
            continue
        source: dict[str, Any] = {"type": "url", "value": part.url} if part.url is not None \
            else {"type": "data", "value": base64.b64encode(part.data or b"").decode("ascii")}
        if part.media_type is not None or part.url is None:
            source["mimeType"] = part.media_type or "application/octet-stream"
        shown.append({"type": part.type, "source": source})
    return shown


def snapshot(messages: Sequence[Message], thread_id: str) -> list[dict[str, Any]]:
    """The stored messages as AG-UI messages (without system messages, nor a reply cancelled
    before it said anything, which is not stored)."""
    shown = (agui_message(m, f"{thread_id}:{i}") for i, m in enumerate(messages)
             if not said_nothing(m))
    return [m for m in shown if m is not None]


def interrupts(waiting_for: dict[str, Any]) -> list[dict[str, Any]]:
    """The open interrupts of a conversation waiting for approvals: one per pending call."""
    shown = []
    for call in waiting_for.get("calls", ()):
        interrupt: dict[str, Any] = {
            "id": call["id"], "reason": "tool_approval", "toolCallId": call["id"],
            "message": f"Approve the call of {call['name']} with "
                       f"{json.dumps(call.get('arguments', {}), ensure_ascii=False)}?"}
        if call.get("approver") == "operator":
            interrupt["metadata"] = {"approver": "operator"}
        shown.append(interrupt)
    return shown


class AGUIEncoder(Encoder):
    """One AG-UI run's events. It remembers what it opened (a text message, a reasoning
    message) so that each is closed before the next opens and before the run ends."""

    def __init__(self, thread_id: str, run_id: str, *, state: dict[str, Any] | None = None,
                 parent_run_id: str | None = None,
                 messages: Sequence[Message] = ()) -> None:
        self.thread_id, self.run_id, self.parent_run_id = thread_id, run_id, parent_run_id
        self.state = state  # the state the client has; a different one at the end is sent
        self.messages = messages  # the conversation's, as the run adds them (a retract's)
        self.retracted: str | None = None  # the id of a reply taken back, to be replaced
        self.text: str | None = None  # the id of the text message open
        self.reasoning: str | None = None  # the id of the reasoning message open
        self.parent: str | None = None  # the assistant message whose calls come next

    def opened(self, event: Opened) -> str:
        started: dict[str, Any] = {"type": "RUN_STARTED", "threadId": self.thread_id,
                                   "runId": self.run_id, "timestamp": _now()}
        if self.parent_run_id is not None:
            started["parentRunId"] = self.parent_run_id
        out = frame(started)
        if event.state is not None:
            self.state = event.state
            out += frame({"type": "STATE_SNAPSHOT", "snapshot": event.state})
        if event.messages is not None:
            out += frame({"type": "MESSAGES_SNAPSHOT", "messages": event.messages})
        return out

    def _close_text(self) -> str:
        if self.text is None:
            return ""
        out, self.text = frame({"type": "TEXT_MESSAGE_END", "messageId": self.text}), None
        return out

    def _close_reasoning(self) -> str:
        if self.reasoning is None:
            return ""
        rid, self.reasoning = self.reasoning, None
        return (frame({"type": "REASONING_MESSAGE_END", "messageId": rid})
                + frame({"type": "REASONING_END", "messageId": rid}))

    def _close(self) -> str:
        return self._close_reasoning() + self._close_text()

    def text_delta(self, event: TextDelta) -> str:
        if not event.text or event.message_id is None:
            return ""
        out = self._close_reasoning()
        if self.text != event.message_id:
            out += self._close_text() + frame({
                "type": "TEXT_MESSAGE_START", "messageId": event.message_id,
                "role": "assistant"})
            self.text = event.message_id
        return out + frame({"type": "TEXT_MESSAGE_CONTENT", "messageId": event.message_id,
                            "delta": event.text})

    def reasoning_delta(self, event: ReasoningDelta) -> str:
        if not event.text or event.message_id is None:
            return ""
        rid = f"{event.message_id}-reasoning"
        out = ""
        if self.reasoning != rid:
            out += self._close() + frame({"type": "REASONING_START", "messageId": rid}) \
                + frame({"type": "REASONING_MESSAGE_START", "messageId": rid,
                         "role": "reasoning"})
            self.reasoning = rid
        return out + frame({"type": "REASONING_MESSAGE_CONTENT", "messageId": rid,
                            "delta": event.text})

    def retract(self, event: Retract) -> str:
        """A guard took back the reply streamed so far (API.md §27): its text message ends,
        ``CUSTOM`` ``convo.retract`` says which, and its replacement comes as the
        ``MESSAGES_SNAPSHOT`` AG-UI clients correct their messages by."""
        retracted = event.message_id
        out = self._close()
        if retracted is None:
            return out
        self.retracted = retracted
        return out + frame({"type": "CUSTOM", "name": "convo.retract",
                            "value": {"messageId": retracted}})

    def _replaced(self, message_id: str) -> str:
        """The messages up to the replacement of a retracted reply, that one without its
        tool calls (their events follow, as for any reply)."""
        shown = []
        for message in snapshot(self.messages, self.thread_id):
            if message["id"] == message_id:
                shown.append({k: v for k, v in message.items() if k != "toolCalls"})
                break
            shown.append(message)
        return frame({"type": "MESSAGES_SNAPSHOT", "messages": shown})

    def message_committed(self, event: MessageCommitted) -> str:
        message = event.message
        if message.role != "assistant":
            return ""  # the user's are the client's own; a tool's is its TOOL_CALL_RESULT
        message_id = message.id or f"{self.thread_id}:{event.index}"
        self.parent = message_id
        if self.retracted == message_id:
            self.retracted = None
            return self._close() + self._replaced(message_id)
        if self.text == message_id:  # streamed: its text is all sent
            return self._close()
        out = self._close()
        if message.text:
            out += frame({"type": "TEXT_MESSAGE_START", "messageId": message_id,
                          "role": "assistant"}) \
                + frame({"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id,
                         "delta": message.text}) \
                + frame({"type": "TEXT_MESSAGE_END", "messageId": message_id})
        return out

    def tool_call_started(self, event: ToolCallStarted) -> str:
        started = {"type": "TOOL_CALL_START", "toolCallId": event.call.id,
                   "toolCallName": event.call.name}
        if self.parent is not None:
            started["parentMessageId"] = self.parent
        return self._close() + frame(started)

    def tool_call_arguments(self, event: ToolCallArguments) -> str:
        if not event.arguments:
            return ""
        return frame({"type": "TOOL_CALL_ARGS", "toolCallId": event.call_id,
                      "delta": event.arguments})

    def tool_call_ended(self, event: ToolCallEnded) -> str:
        return frame({"type": "TOOL_CALL_END", "toolCallId": event.call_id})

    def tool_result(self, event: ToolResult) -> str:
        return self._close() + frame({
            "type": "TOOL_CALL_RESULT",
            "messageId": event.message.id or f"{self.thread_id}:{event.index}",
            "toolCallId": event.call_id, "content": event.message.text, "role": "tool"})

    def messages_queued(self, event: MessagesQueued) -> str:
        """The run's messages went into the queue (API.md §26): a ``CUSTOM`` event
        ``convo.queued`` with them (``{"queued": [MESSAGE]}``, as the native 202 says)."""
        return frame({"type": "CUSTOM", "name": "convo.queued",
                      "value": {"queued": list(event.messages)}})

    def turn_ended(self, event: TurnEnded) -> str:
        body = event.conversation
        out = self._close()
        state = body.get("state")
        if isinstance(state, dict) and state != self.state:
            out += frame({"type": "STATE_SNAPSHOT", "snapshot": state})
        waiting = body.get("waiting_for") or {}
        kind = waiting.get("type")
        finished: dict[str, Any] = {"type": "RUN_FINISHED", "threadId": self.thread_id,
                                    "runId": self.run_id, "timestamp": _now()}
        if body.get("status") == "ended":
            out += frame({"type": "CUSTOM", "name": "convo.outcome",
                          "value": body.get("outcome")})
        if kind == "operator":
            out += frame({"type": "CUSTOM", "name": "convo.waiting",
                          "value": {"type": "operator", "reason": waiting.get("reason")}})
        if kind == "approval":
            finished["outcome"] = {"type": "interrupt", "interrupts": interrupts(waiting)}
        elif kind == "client_tool":
            finished["outcome"] = {"type": "success", "pendingToolCallIds": [
                c["id"] for c in waiting.get("calls", ())]}
        else:
            finished["outcome"] = {"type": "success"}
        return out + frame(finished)

    def turn_failed(self, event: TurnFailed) -> str:
        error = event.error.get("error")
        failed: dict[str, Any] = {"type": "RUN_ERROR", "timestamp": _now(),
                                  "message": str(error or "the run failed"),
                                  "code": "model_failed" if event.status == 502
                                  else "server_failed" if event.status >= 500 else "refused"}
        return self._close() + frame(failed)
