"""The server's side of the Chat Completions wire format: request messages read, and a reply
written as a response or as streamed chunks (the fake server in ``convo.testing`` uses it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..._messages import ROLES, Message
from ...models._openai.wire import WireError, text_of, tool_call_from_wire, tool_call_to_wire


def message_from_wire(d: Mapping[str, Any]) -> Message:
    """A request message (as a client sends it) as a ``Message``."""
    role = d.get("role")
    if role == "developer":
        role = "system"
    if role not in ROLES:
        raise WireError(f"a message's role must be one of {', '.join(ROLES)}; got {role!r}")
    calls = [tool_call_from_wire(c, i) for i, c in enumerate(d.get("tool_calls") or ())]
    return Message(
        role, text_of(d.get("content")) or "", tool_calls=tuple(calls),
        tool_call_id=d.get("tool_call_id"), name=d.get("name"),
    )


def _finish_reason(message: Message) -> str:
    reason = message.metadata.get("finish_reason")
    if reason:
        return str(reason)
    return "tool_calls" if message.tool_calls else "stop"


def response_from_message(
    message: Message, *, model: str, response_id: str, created: int,
    usage: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """A complete (non-streamed) Chat Completions response carrying ``message``."""
    refusal = message.metadata.get("refusal")
    content: str | None = message.text or None
    if refusal and content == refusal:
        content = None
    wire: dict[str, Any] = {"role": "assistant", "content": content, "refusal": refusal}
    if message.tool_calls:
        wire["tool_calls"] = [tool_call_to_wire(c) for c in message.tool_calls]
    d: dict[str, Any] = {
        "id": response_id, "object": "chat.completion", "created": created, "model": model,
        "choices": [{"index": 0, "message": wire, "finish_reason": _finish_reason(message),
                     "logprobs": None}],
    }
    if usage is not None:
        d["usage"] = usage_to_wire(usage)
    return d


def usage_to_wire(usage: Mapping[str, int]) -> dict[str, Any]:
    """A reply's token counts as Chat Completions reports them: a cache read in
    ``prompt_tokens_details.cached_tokens``, reasoning in
    ``completion_tokens_details.reasoning_tokens`` (each only when counted)."""
    d: dict[str, Any] = dict(usage)
    cached, reasoning = d.pop("cache_read_tokens", 0), d.pop("reasoning_tokens", 0)
    d.pop("cache_write_tokens", None)  # OpenAI does not say it
    if cached:
        d["prompt_tokens_details"] = {"cached_tokens": cached}
    if reasoning:
        d["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return d


def chunks_from_message(
    message: Message, *, model: str, response_id: str, created: int,
    usage: Mapping[str, int] | None = None, piece: int = 8,
) -> list[dict[str, Any]]:
    """The same reply as streamed chunks: text and tool-call arguments in ``piece``-sized bits.

    The last chunk carries ``usage`` (with empty ``choices``) when it is given, as OpenAI
    does with ``stream_options={"include_usage": True}``.
    """
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": response_id, "object": "chat.completion.chunk", "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish,
                             "logprobs": None}]}

    refusal = message.metadata.get("refusal")
    content = message.text
    if refusal and content == refusal:
        content = ""
    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": part}) for part in _pieces(content, piece)]
    chunks += [chunk({"refusal": part}) for part in _pieces(refusal or "", piece)]
    for index, call in enumerate(message.tool_calls):
        chunks.append(chunk({"tool_calls": [{
            "index": index, "id": call.id, "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }]}))
        chunks += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
            for part in _pieces(call.arguments_json(), piece)
        ]
    chunks.append(chunk({}, _finish_reason(message)))
    if usage is not None:
        chunks.append({"id": response_id, "object": "chat.completion.chunk",
                       "created": created, "model": model, "choices": [],
                       "usage": usage_to_wire(usage)})
    return chunks


def _pieces(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]
