"""The OpenAI face's words (API.md §25): a served turn written as Chat Completions and
Responses answers and streams, and OpenAI-shaped errors. No HTTP here: ``openai_face.py``
routes requests; this module turns a turn's body (the conversation with ``added``) and its
served events into the two APIs' shapes.

The reply is the turn's assistant texts, in order, joined by a blank line (tool calls and
their results are not shown); a conversation that waits for an approval or an operator adds
the prompt saying so (which calls, where to go on). Both encoders are ``Encoder``s of the one
stream of served events, like convo's own SSE.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ..._messages import Message
from ..._reply import Usage
from .._events import (
    Encoder,
    MessageCommitted,
    ServedEvent,
    TextDelta,
    TurnEnded,
    TurnFailed,
    WaitingFor,
)

#: The header naming the conversation an answer concerns (and a request continues).
HEADER: Final = "X-Convo-Conversation"

_TYPES: Final = {400: "invalid_request_error", 401: "authentication_error",
                 403: "permission_error", 404: "not_found_error", 409: "conflict_error",
                 413: "invalid_request_error"}


def error_body(status: int, message: str, *, param: str | None = None,
               code: str | None = None) -> dict[str, Any]:
    """An error as OpenAI's API shapes it (``{"error": {"message", "type", "param",
    "code"}}``); ``type`` follows the status."""
    kind = _TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def waiting_text(conversation_id: str, waiting_for: Mapping[str, Any] | None) -> str | None:
    """The prompt of a conversation that waits for an approval or an operator (``None``
    when it waits for the user, or has ended): what it waits for, each pending call (name
    and arguments), the conversation's id and where to go on."""
    kind = (waiting_for or {}).get("type")
    where = (f"conversation {conversation_id}: go on in the chat page or the JSON API "
             f"(/api/conversations/{conversation_id})")
    if kind == "approval":
        assert waiting_for is not None
        calls = ", ".join(f"{c['name']}({json.dumps(c['arguments'], ensure_ascii=False)})"
                          for c in waiting_for.get("calls", ()))
        who = "an operator" if waiting_for.get("approver") == "operator" else "you"
        return f"Waiting for {who} to approve or reject: {calls}. In {where}."
    if kind == "operator":
        assert waiting_for is not None
        reason = waiting_for.get("reason")
        said = f" ({reason})" if reason else ""
        return f"Handed to a person{said}: an operator answers next. In {where}."
    return None


def said(message: Message) -> str:
    """What an assistant message shows the client: its text ("" for a tool call alone)."""
    return message.text if message.role == "assistant" else ""


def reply_text(conversation_id: str, body: Mapping[str, Any]) -> str:
    """The turn's reply: its assistant texts joined by a blank line, then the waiting prompt."""
    texts = [said(Message.from_dict(d)) for d in body.get("added", ())]
    texts.append(waiting_text(conversation_id, body.get("waiting_for")) or "")
    return "\n\n".join(text for text in texts if text)


def turn_usage(added: Sequence[Mapping[str, Any]]) -> Usage:
    """What the turn's model calls used (their reported usage, added up)."""
    total = Usage()
    for d in added:
        usage = Message.from_dict(d).usage if d.get("role") == "assistant" else None
        if usage is not None:
            total = total + usage
    return total


def chat_usage(usage: Usage) -> dict[str, Any]:
    return {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.total_tokens or usage.prompt_tokens + usage.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens},
            "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens}}


def responses_usage(usage: Usage) -> dict[str, Any]:
    chat = chat_usage(usage)
    return {"input_tokens": usage.prompt_tokens,
            "input_tokens_details": {"cached_tokens": usage.cache_read_tokens},
            "output_tokens": usage.completion_tokens,
            "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
            "total_tokens": chat["total_tokens"]}


# -- Chat Completions ----------------------------------------------------------------------


def completion(body: Mapping[str, Any], *, model: str, completion_id: str,
               created: int) -> dict[str, Any]:
    """A turn's body as a (non-streamed) ``chat.completion``."""
    text = reply_text(body["id"], body)
    return {"id": completion_id, "object": "chat.completion", "created": created,
            "model": model, "system_fingerprint": None,
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                         "message": {"role": "assistant", "content": text, "refusal": None}}],
            "usage": chat_usage(turn_usage(body.get("added", ())))}


def _data(value: Any) -> str:
    return f"data: {json.dumps(value, ensure_ascii=False)}\n\n"


class Said(Encoder):
    """What a turn says, as it says it: streamed text, committed assistant texts that were
    not streamed (scripted words), and the waiting prompt, each apart from the last by a
    blank line. A subclass writes each piece (``piece``) and the end in its API's words."""

    def __init__(self, conversation_id: str) -> None:
        self.conversation_id = conversation_id
        self.spoke = False  # some text was sent
        self.streaming = False  # the reply under way was streamed (its deltas were sent)

    def piece(self, text: str) -> str:
        raise NotImplementedError

    def _say(self, text: str, *, starts: bool) -> str:
        if not text:
            return ""
        gap = "\n\n" if starts and self.spoke else ""
        self.spoke = True
        return self.piece(gap + text)

    def text_delta(self, event: TextDelta) -> str:
        starts = not self.streaming
        self.streaming = True
        return self._say(event.text, starts=starts)

    def message_committed(self, event: MessageCommitted) -> str:
        streamed, self.streaming = self.streaming, False
        if event.message.role != "assistant" or streamed:
            return ""
        return self._say(said(event.message), starts=True)

    def waiting_for(self, event: WaitingFor) -> str:
        return self._say(waiting_text(self.conversation_id, event.waiting_for) or "",
                         starts=True)


class ChatEncoder(Said):
    """A turn as Chat Completions chunks (``data: <chunk>`` lines, then ``data: [DONE]``);
    usage in a last chunk with empty ``choices`` when ``include_usage``; a failure as a
    ``data: {"error": …}`` line (the conversation then waits for a retry)."""

    def __init__(self, conversation_id: str, *, model: str, completion_id: str, created: int,
                 include_usage: bool = False) -> None:
        super().__init__(conversation_id)
        self.model, self.completion_id, self.created = model, completion_id, created
        self.include_usage = include_usage
        self.opened = False

    def chunk(self, delta: dict[str, Any], finish: str | None = None) -> str:
        head = "" if self.opened else _data(self._chunk({"role": "assistant", "content": ""}))
        self.opened = True
        return head + _data(self._chunk(delta, finish))

    def _chunk(self, delta: dict[str, Any], finish: str | None = None,
               choices: bool = True) -> dict[str, Any]:
        return {"id": self.completion_id, "object": "chat.completion.chunk",
                "created": self.created, "model": self.model, "system_fingerprint": None,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish,
                             "logprobs": None}] if choices else []}

    def piece(self, text: str) -> str:
        return self.chunk({"content": text})

    def turn_ended(self, event: TurnEnded) -> str:
        end = self.chunk({}, "stop")
        if self.include_usage:
            usage = chat_usage(turn_usage(event.conversation.get("added", ())))
            end += _data({**self._chunk({}, choices=False), "usage": usage})
        return end + "data: [DONE]\n\n"

    def turn_failed(self, event: TurnFailed) -> str:
        return _data(error_body(event.status, str(event.error.get("error")),
                                code=event.error.get("error_id")))


# -- Responses -----------------------------------------------------------------------------


def response_id(conversation_id: str, at: int) -> str:
    """A response's id: its conversation and the index of the user message it answered."""
    return f"resp_{at}_{conversation_id}"


def read_response_id(value: str) -> tuple[str, int] | None:
    """The conversation and the index a ``response_id`` names, or ``None``."""
    at, _, conversation_id = value.removeprefix("resp_").partition("_")
    if not value.startswith("resp_") or not at.isdigit() or not conversation_id:
        return None
    return conversation_id, int(at)


def response(body: Mapping[str, Any], *, model: str, at: int, created: int,
             text: str | None = None, status: str | None = None) -> dict[str, Any]:
    """A turn's body as a Responses API ``response``: ``incomplete`` with reason
    ``waiting`` while the conversation waits for an approval or an operator."""
    conversation_id = body["id"]
    rid = response_id(conversation_id, at)
    waiting = waiting_text(conversation_id, body.get("waiting_for")) is not None
    text = reply_text(conversation_id, body) if text is None else text
    status = status or ("incomplete" if waiting else "completed")
    output = [] if status == "in_progress" else [_message_item(rid, text, "completed")]
    return {"id": rid, "object": "response", "created_at": created, "model": model,
            "status": status,
            "incomplete_details": {"reason": "waiting"} if status == "incomplete" else None,
            "error": None, "output": output, "parallel_tool_calls": True,
            "tool_choice": "auto", "tools": [], "store": True,
            "conversation": {"id": conversation_id},
            "usage": None if status == "in_progress" else responses_usage(
                turn_usage(body.get("added", ())))}


def _message_item(rid: str, text: str, status: str) -> dict[str, Any]:
    return {"id": f"msg_{rid}", "type": "message", "role": "assistant", "status": status,
            "content": [{"type": "output_text", "text": text, "annotations": [],
                         "logprobs": []}] if status == "completed" else []}


class ResponsesEncoder(Said):
    """A turn as the Responses API's typed stream events (``event: <type>`` and ``data:``
    lines): ``response.created`` and ``response.in_progress``, the message item with its
    text deltas, then ``response.completed`` (``response.incomplete`` when it waits) or
    ``response.failed``."""

    def __init__(self, conversation_id: str, *, model: str, created: int) -> None:
        super().__init__(conversation_id)
        self.model, self.created = model, created
        self.at: int | None = None  # the index of the user message answered
        self.sequence = 0
        self.text: list[str] = []
        self.opened = False

    def event(self, kind: str, **fields: Any) -> str:
        data = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"

    def message_committed(self, event: MessageCommitted) -> str:
        if event.message.role == "user":
            self.at = event.index
        return super().message_committed(event)

    def _body(self, status: str, **more: Any) -> dict[str, Any]:
        return response({"id": self.conversation_id}, model=self.model, at=self.at or 0,
                        created=self.created, text="".join(self.text), status=status) | more

    def _open(self) -> str:
        if self.opened:
            return ""
        self.opened = True
        started = self._body("in_progress")
        item = _message_item(started["id"], "", "in_progress")
        return (self.event("response.created", response=started)
                + self.event("response.in_progress", response=started)
                + self.event("response.output_item.added", output_index=0, item=item)
                + self.event("response.content_part.added", item_id=item["id"],
                             output_index=0, content_index=0,
                             part={"type": "output_text", "text": "", "annotations": []}))

    def piece(self, text: str) -> str:
        self.text.append(text)
        head = self._open()
        return head + self.event("response.output_text.delta", item_id=self._item(),
                                 output_index=0, content_index=0, delta=text, logprobs=[])

    def _item(self) -> str:
        return f"msg_{response_id(self.conversation_id, self.at or 0)}"

    def turn_ended(self, event: TurnEnded) -> str:
        body = event.conversation
        final = response(body, model=self.model, at=self.at or 0, created=self.created,
                         text="".join(self.text))
        text = "".join(self.text)
        part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
        return (self._open()
                + self.event("response.output_text.done", item_id=self._item(),
                             output_index=0, content_index=0, text=text, logprobs=[])
                + self.event("response.content_part.done", item_id=self._item(),
                             output_index=0, content_index=0, part=part)
                + self.event("response.output_item.done", output_index=0,
                             item=final["output"][0])
                + self.event(f"response.{final['status']}", response=final))

    def turn_failed(self, event: TurnFailed) -> str:
        failed = self._body("failed", error={"code": "server_error",
                                             "message": str(event.error.get("error"))})
        failed["output"] = []
        return self._open() + self.event("response.failed", response=failed)


def replayed(body: Mapping[str, Any]) -> list[ServedEvent]:
    """The served events a stream of an answer already given shows (an ``Idempotency-Key``
    repeat): its committed messages, where it waits, its end."""
    added = list(body.get("added", ()))
    start = len(body.get("messages", ())) - len(added)
    events: list[ServedEvent] = [MessageCommitted(start + i, Message.from_dict(d))
                                 for i, d in enumerate(added)]
    if body.get("waiting_for") is not None:
        events.append(WaitingFor(dict(body["waiting_for"])))
    events.append(TurnEnded(dict(body)))
    return events
