"""The server's side of the Messages API: a reply written as a response or as its SSE events,
errors in Anthropic's shape, and the prompt cache counted as API.md §23 defines it (the fake
``AnthropicServer`` uses it; the client's side is ``convo.models._anthropic.wire``)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from ..._messages import Message
from ..._reply import Finish
from .replies import ErrorReply, Response, error_as_given, json_response, phrase

_STOPS: Final = {Finish.STOP: "end_turn", Finish.LENGTH: "max_tokens",
                 Finish.TOOL_CALLS: "tool_use", Finish.REFUSED: "refusal"}
_KINDS: Final = {400: "invalid_request_error", 401: "authentication_error",
                 403: "permission_error", 404: "not_found_error", 413: "request_too_large",
                 429: "rate_limit_error", 529: "overloaded_error"}


# -- the prompt cache ------------------------------------------------------------------------


def _bare(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _bare(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_bare(v) for v in value]
    return value


def _blocks(body: Mapping[str, Any]) -> Iterator[tuple[str, bool]]:
    """The request's blocks in order (tools, system, messages) as compact JSON without
    ``cache_control``, each with whether it is a breakpoint."""
    def text(value: Any) -> list[Any]:
        return [{"type": "text", "text": value}] if isinstance(value, str) else list(value or ())

    blocks = [*(body.get("tools") or ()), *text(body.get("system"))]
    for turn in body.get("messages") or ():
        blocks += text(turn.get("content") if isinstance(turn, Mapping) else None)
    for block in blocks:
        marked = isinstance(block, Mapping) and "cache_control" in block
        yield (json.dumps(_bare(block), separators=(",", ":"), ensure_ascii=False), marked)


class PromptCache:
    """What earlier requests wrote at their breakpoints, and what a request reads and writes.

    A prefix costs its blocks' characters ÷ 4, rounded up.
    """

    __slots__ = ("_written",)

    def __init__(self) -> None:
        self._written: set[tuple[str, ...]] = set()

    def count(self, body: Mapping[str, Any]) -> tuple[int, int, int]:
        """``(input_tokens, cache_read_input_tokens, cache_creation_input_tokens)``."""
        blocks = list(_blocks(body))
        sizes = [0]
        for block, _ in blocks:
            sizes.append(sizes[-1] + len(block))
        total = math.ceil(sizes[-1] / 4)
        breaks = [i + 1 for i, (_, marked) in enumerate(blocks) if marked]
        if not breaks:
            return total, 0, 0
        keys = tuple(block for block, _ in blocks)
        read_at = next((n for n in range(len(keys), 0, -1) if keys[:n] in self._written), 0)
        read = math.ceil(sizes[read_at] / 4)
        write = max(0, math.ceil(sizes[breaks[-1]] / 4) - read)
        self._written.update(keys[:n] for n in breaks)
        return total - read - write, read, write


# -- replies ---------------------------------------------------------------------------------


def stop_reason(message: Message) -> str:
    finish = message.finish
    if finish in _STOPS:
        return _STOPS[finish]
    return "tool_use" if message.tool_calls else "end_turn"


def content_of(message: Message) -> list[dict[str, Any]]:
    """The reply's blocks: its thinking items first, then its text, then its calls."""
    blocks = [dict(item) for item in message.reasoning
              if item.get("type") in ("thinking", "redacted_thinking")]
    if message.text:
        blocks.append({"type": "text", "text": message.text})
    blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
               for c in message.tool_calls]
    return blocks


def usage_of(message: Message, counted: tuple[int, int, int]) -> dict[str, int]:
    """Anthropic's usage: a scripted reply's own (``metadata["usage"]``), else counted
    (input from the cache accounting, output in words)."""
    given = message.usage
    if given is not None:
        read, write = given.cache_read_tokens, given.cache_write_tokens
        return {"input_tokens": max(0, given.prompt_tokens - read - write),
                "output_tokens": given.completion_tokens,
                "cache_read_input_tokens": read, "cache_creation_input_tokens": write}
    output = len(message.text.split()) + sum(1 + len(c.arguments) for c in message.tool_calls)
    return {"input_tokens": counted[0], "output_tokens": output,
            "cache_read_input_tokens": counted[1], "cache_creation_input_tokens": counted[2]}


def response_from_message(message: Message, *, model: str, message_id: str,
                          usage: Mapping[str, int]) -> dict[str, Any]:
    return {"id": message_id, "type": "message", "role": "assistant", "model": model,
            "content": content_of(message), "stop_reason": stop_reason(message),
            "stop_sequence": None, "usage": dict(usage)}


def events_from_message(message: Message, *, model: str, message_id: str,
                        usage: Mapping[str, int], piece: int = 8) -> list[dict[str, Any]]:
    """The same reply as the Messages API streams it."""
    start = response_from_message(message, model=model, message_id=message_id,
                                  usage={**usage, "output_tokens": 1})
    start.update(content=[], stop_reason=None)
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start},
                                    {"type": "ping"}]
    for index, block in enumerate(content_of(message)):
        events += _block_events(index, block, piece)
    events += [{"type": "message_delta",
                "delta": {"stop_reason": stop_reason(message), "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]}},
               {"type": "message_stop"}]
    return events


def _block_events(index: int, block: Mapping[str, Any], piece: int) -> list[dict[str, Any]]:
    kind = block["type"]
    if kind == "redacted_thinking":
        opened: dict[str, Any] = dict(block)
        deltas: list[dict[str, Any]] = []
    elif kind == "thinking":
        opened = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": p}
                  for p in _pieces(str(block.get("thinking") or ""), piece)]
        deltas.append({"type": "signature_delta", "signature": block.get("signature", "")})
    elif kind == "text":
        opened = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"], piece)]
    else:
        opened = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": p}
                  for p in _pieces(json.dumps(block["input"]), piece)]
    return [{"type": "content_block_start", "index": index, "content_block": opened},
            *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas),
            {"type": "content_block_stop", "index": index}]


def _pieces(text: str, size: int) -> Sequence[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


def sse(events: Sequence[Mapping[str, Any]]) -> tuple[bytes, ...]:
    return tuple(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


# -- errors ----------------------------------------------------------------------------------


def error_body(status: int, message: str) -> dict[str, Any]:
    kind = _KINDS.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def refused(status: int, message: str) -> Response:
    """The server's own refusal of a request, in the API's error shape."""
    return json_response(status, error_body(status, message))


def error_response(reply: ErrorReply) -> Response:
    """An ``ErrorReply`` in Anthropic's shape (a body given as text or bytes is sent as is;
    an OpenAI-shaped ``{"error": {"message"}}``, as the script's own errors are, is
    reshaped)."""
    body = reply.body
    if body is None:
        body = error_body(reply.status, f"AnthropicServer: scripted HTTP {reply.status} "
                                        f"{phrase(reply.status)}")
    elif (isinstance(body, Mapping) and isinstance(body.get("error"), Mapping)
          and body.get("type") != "error"):
        body = error_body(reply.status, str(body["error"].get("message") or ""))
    return error_as_given(reply, body)
