"""The AI SDK UI message stream (protocol ``v1``) as an ``Encoder`` of the served events
(API.md §24): each chunk a ``data: <json>`` line, the stream ended by ``data: [DONE]``.

One request's reply is one UI message: ``start`` (its ``messageId`` the stored id of the
reply's first assistant message), then a step per model call — ``start-step``, its reasoning,
text and tool calls, the results of those calls, ``finish-step`` — then ``finish``. A reply
that waits for approvals ends its step with a ``tool-approval-request`` per call the user
decides (``approvalId`` is the call id); a failed turn ends with ``error`` and no ``finish``.
A reply a guard retracts (API.md §27, ``stream="live"``) ends its text part, which a
``data-convo-retract`` part then marks as taken back, and its replacement is a new text part.
A request whose messages were queued (API.md §26) streams ``start``, a ``data-convo-queued``
part with them, and ``finish``.
Plain dicts: no AI SDK package is needed to serve (the tests read every stream with the
``ai`` package's own reader).
"""

from __future__ import annotations

import json
from typing import Any, Final

from .._events import (
    Encoder,
    MessageCommitted,
    MessagesQueued,
    ReasoningDelta,
    Retract,
    TextDelta,
    ToolCallArguments,
    ToolCallEnded,
    ToolCallStarted,
    ToolResult,
    TurnEnded,
    TurnFailed,
)

#: The header that tells the AI SDK's transport it reads a UI message stream.
HEADERS: Final = {"x-vercel-ai-ui-message-stream": "v1", "x-accel-buffering": "no"}

DONE: Final = "data: [DONE]\n\n"


def chunk(event: dict[str, Any]) -> str:
    return f"data: {json.dumps(event, ensure_ascii=False, separators=(',', ':'))}\n\n"


class UIStreamEncoder(Encoder):
    """One request's UI message stream. ``message_id``: the id of the UI message the reply
    continues (after approvals), known before anything runs; else the id of the first
    assistant message the turn makes. It remembers the step and the text or reasoning part
    open, so each is closed before the next opens and before the stream ends."""

    def __init__(self, thread_id: str, message_id: str | None = None) -> None:
        self.thread_id, self.message_id = thread_id, message_id
        self.started = False
        self.step = False  # a step is open
        self.step_done = False  # its assistant message is stored: new content is a new step
        self.text: str | None = None  # the id of the text part open
        self.reasoning: str | None = None  # the id of the reasoning part open
        self.calls: dict[str, tuple[str, str]] = {}  # call id -> (tool name, arguments)

    def _start(self, message_id: str | None) -> str:
        if self.started:
            return ""
        self.started = True
        shown = self.message_id or message_id
        return chunk({"type": "start", "messageId": shown} if shown else {"type": "start"})

    def _close(self) -> str:
        out = ""
        if self.reasoning is not None:
            out += chunk({"type": "reasoning-end", "id": self.reasoning})
            self.reasoning = None
        if self.text is not None:
            out += chunk({"type": "text-end", "id": self.text})
            self.text = None
        return out

    def _step(self, message_id: str | None, *, new: bool) -> str:
        """The start (once) and the step open; ``new``: assistant content, which after a
        stored assistant message belongs to the next model call's step."""
        out = self._start(message_id)
        if self.step and new and self.step_done:
            out += self._close() + chunk({"type": "finish-step"})
            self.step = False
        if not self.step:
            out += chunk({"type": "start-step"})
            self.step, self.step_done = True, False
        return out

    def text_delta(self, event: TextDelta) -> str:
        if not event.text or event.message_id is None:
            return ""
        out = self._step(event.message_id, new=True)
        if self.reasoning is not None or self.text != event.message_id:
            out += self._close() + chunk({"type": "text-start", "id": event.message_id})
            self.text = event.message_id
        return out + chunk({"type": "text-delta", "id": event.message_id,
                            "delta": event.text})

    def reasoning_delta(self, event: ReasoningDelta) -> str:
        if not event.text or event.message_id is None:
            return ""
        rid = f"{event.message_id}-reasoning"
        out = self._step(event.message_id, new=True)
        if self.reasoning != rid:
            out += self._close() + chunk({"type": "reasoning-start", "id": rid})
            self.reasoning = rid
        return out + chunk({"type": "reasoning-delta", "id": rid, "delta": event.text})

    def retract(self, event: Retract) -> str:
        """A guard took back the reply streamed so far (API.md §27): its text part ends and a
        ``data-convo-retract`` part follows it (the stream has no chunk that takes text back;
        a data part is its own way to tell the client more), then the replacement comes as
        a text part of its own."""
        if self.text is None:
            return self._close()
        retracted = self.text
        return self._close() + chunk({"type": "data-convo-retract", "id": retracted,
                                      "data": {"messageId": retracted}})

    def message_committed(self, event: MessageCommitted) -> str:
        message = event.message
        if message.role != "assistant":
            return ""  # the user's are the client's own; a tool's is its tool output
        message_id = message.id or f"{self.thread_id}:{event.index}"
        streamed = self.text == message_id or self.reasoning == f"{message_id}-reasoning"
        out = self._step(message_id, new=not streamed)
        if self.text == message_id:  # streamed: its text is all sent
            out += self._close()
        elif message.text:
            out += self._close() + chunk({"type": "text-start", "id": message_id}) \
                + chunk({"type": "text-delta", "id": message_id, "delta": message.text}) \
                + chunk({"type": "text-end", "id": message_id})
        else:
            out += self._close()
        self.step_done = True
        return out

    def tool_call_started(self, event: ToolCallStarted) -> str:
        self.calls[event.call.id] = (event.call.name, "")
        return self._close() + chunk({"type": "tool-input-start", "toolCallId": event.call.id,
                                      "toolName": event.call.name})

    def tool_call_arguments(self, event: ToolCallArguments) -> str:
        name, said = self.calls.get(event.call_id, ("", ""))
        self.calls[event.call_id] = (name, said + event.arguments)
        return ""

    def tool_call_ended(self, event: ToolCallEnded) -> str:
        name, said = self.calls.get(event.call_id, ("", ""))
        return chunk({"type": "tool-input-available", "toolCallId": event.call_id,
                      "toolName": name, "input": json.loads(said) if said else {}})

    def tool_result(self, event: ToolResult) -> str:
        out = self._step(None, new=False) + self._close()
        self.step_done = True  # what the model says next is its next call's
        message = event.message
        if message.rejected:
            return out + chunk({"type": "tool-output-denied", "toolCallId": event.call_id})
        if message.error:
            return out + chunk({"type": "tool-output-error", "toolCallId": event.call_id,
                                "errorText": message.text})
        return out + chunk({"type": "tool-output-available", "toolCallId": event.call_id,
                            "output": message.text})

    def messages_queued(self, event: MessagesQueued) -> str:
        """The request's messages went into the queue (API.md §26): a ``data-convo-queued``
        part with them (``{"queued": [MESSAGE]}``, as the native 202 says)."""
        return self._start(None) + chunk({"type": "data-convo-queued",
                                          "data": {"queued": list(event.messages)}})

    def turn_ended(self, event: TurnEnded) -> str:
        out = self._start(None) + self._close()
        waiting = event.conversation.get("waiting_for") or {}
        asked = [c["id"] for c in waiting.get("calls", ())
                 if waiting.get("type") == "approval" and c.get("approver") != "operator"]
        for call_id in asked:
            out += chunk({"type": "tool-approval-request", "approvalId": call_id,
                          "toolCallId": call_id})
        if self.step:
            out += chunk({"type": "finish-step"})
            self.step = False
        reason = "tool-calls" if waiting.get("type") in ("approval", "client_tool") else "stop"
        return out + chunk({"type": "finish", "finishReason": reason}) + DONE

    def turn_failed(self, event: TurnFailed) -> str:
        error = event.error.get("error")
        return self._close() + chunk({"type": "error",
                                      "errorText": str(error or "the turn failed")}) + DONE
