"""The server's side of the Responses API wire format: request ``input`` read back into
messages, and a reply written as a response or as its typed stream events (the fake server in
``convo.testing`` uses it)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..._messages import ROLES, Message, ToolCall
from ...models._openai.wire import WireError, parse_arguments, text_of
from ...models._openai.wire_responses import reasoning_of


def messages_from_input(items: Iterable[Any]) -> list[Message]:
    """A request's ``input`` items as messages: the inverse of ``input_to_wire``.

    Reasoning items and ``function_call`` items join the assistant message they belong to
    (the one that follows the reasoning, the one before the calls).
    """
    messages: list[Message] = []
    reasoning: list[dict[str, Any]] = []
    for item in items:
        if not isinstance(item, Mapping):
            raise WireError(f"expected an input item to be an object, got {item!r}")
        kind = item.get("type", "message")
        if kind == "reasoning":
            reasoning.append(dict(item))
        elif kind == "function_call":
            arguments, raw = parse_arguments(item.get("arguments"))
            call = ToolCall(str(item.get("call_id") or ""), str(item.get("name") or ""),
                            arguments, raw_arguments=raw)
            last = messages[-1] if messages else None
            if last is None or last.role != "assistant" or reasoning:
                messages.append(_assistant("", (), reasoning))
                reasoning = []
            messages[-1] = _assistant(messages[-1].text,
                                      (*messages[-1].tool_calls, call),
                                      [dict(r) for r in reasoning_of(messages[-1])])
        elif kind == "function_call_output":
            output = item.get("output")
            messages.append(Message("tool", text_of(output) or "",
                                    tool_call_id=str(item.get("call_id") or "")))
        elif kind == "message":
            role = "system" if item.get("role") == "developer" else item.get("role")
            if role not in ROLES:
                raise WireError(f"an input message's role must be one of {', '.join(ROLES)}; "
                                f"got {role!r}")
            content = text_of(item.get("content")) or ""
            messages.append(_assistant(content, (), reasoning) if role == "assistant"
                            else Message(role, content))  # type: ignore[arg-type]
            reasoning = []
    return messages


def _assistant(content: str, calls: tuple[ToolCall, ...],
               reasoning: list[dict[str, Any]]) -> Message:
    metadata = {"reasoning": list(reasoning)} if reasoning else None
    return Message("assistant", content, tool_calls=calls, metadata=metadata)


def output_items(message: Message, response_id: str) -> list[dict[str, Any]]:
    """A reply's ``output`` items: its reasoning, its text (or refusal), its tool calls."""
    items = [dict(item) for item in reasoning_of(message)]
    refusal = message.metadata.get("refusal")
    content = message.content
    parts: list[dict[str, Any]] = []
    if content and content != refusal:
        parts.append({"type": "output_text", "text": content, "annotations": [],
                      "logprobs": []})
    if refusal:
        parts.append({"type": "refusal", "refusal": refusal})
    status = "incomplete" if message.metadata.get("finish_reason") == "length" else "completed"
    if parts or not message.tool_calls:
        items.append({"id": f"msg_{response_id}", "type": "message", "role": "assistant",
                      "status": status, "content": parts})
    items += [{"id": f"fc_{response_id}_{i}", "type": "function_call", "call_id": call.id,
               "name": call.name, "arguments": call.arguments_json(), "status": "completed"}
              for i, call in enumerate(message.tool_calls)]
    return items


def response_from_message(
    message: Message, *, model: str, response_id: str, created: int,
    usage: Mapping[str, int] | None = None, output: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A complete Responses API response carrying ``message``."""
    truncated = message.metadata.get("finish_reason") == "length"
    d: dict[str, Any] = {
        "id": response_id, "object": "response", "created_at": created, "model": model,
        "status": "incomplete" if truncated else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if truncated else None,
        "error": None,
        "output": output_items(message, response_id) if output is None else output,
        "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
    }
    if usage is not None:
        d["usage"] = usage_to_wire(usage)
    return d


def usage_to_wire(usage: Mapping[str, int]) -> dict[str, Any]:
    """Chat Completions' token counts in the Responses API's shape."""
    return {
        "input_tokens": usage.get("prompt_tokens", 0),
        "input_tokens_details": {"cached_tokens": usage.get("cache_read_tokens", 0),
                                 "cache_write_tokens": 0},
        "output_tokens": usage.get("completion_tokens", 0),
        "output_tokens_details": {"reasoning_tokens": usage.get("reasoning_tokens", 0)},
        "total_tokens": usage.get("total_tokens", 0),
    }


def events_from_message(
    message: Message, *, model: str, response_id: str, created: int,
    usage: Mapping[str, int] | None = None, piece: int = 8,
) -> list[dict[str, Any]]:
    """The same reply as typed stream events: text, reasoning summaries and tool-call
    arguments in ``piece``-sized deltas, each item added and done, then the final response
    (``response.completed``, or ``response.incomplete`` for a reply cut at its limit)."""
    final = response_from_message(message, model=model, response_id=response_id,
                                  created=created, usage=usage)
    started = {**final, "status": "in_progress", "incomplete_details": None, "output": []}
    started.pop("usage", None)
    events: list[dict[str, Any]] = [{"type": "response.created", "response": started},
                                    {"type": "response.in_progress", "response": started}]
    for index, item in enumerate(final["output"]):
        events += _item_events(item, index, piece)
    end = "response.incomplete" if final["status"] == "incomplete" else "response.completed"
    events.append({"type": end, "response": final})
    return [{**event, "sequence_number": n} for n, event in enumerate(events)]


def _item_events(item: dict[str, Any], index: int, piece: int) -> list[dict[str, Any]]:
    at = {"output_index": index, "item_id": item.get("id") or f"item_{index}"}
    kind = item.get("type")
    if kind == "function_call":
        added = {**item, "arguments": "", "status": "in_progress"}
        middle = [{"type": "response.function_call_arguments.delta", **at, "delta": part}
                  for part in _pieces(item["arguments"], piece)]
        middle.append({"type": "response.function_call_arguments.done", **at,
                       "name": item["name"], "arguments": item["arguments"]})
    elif kind == "message":
        added = {**item, "content": [], "status": "in_progress"}
        middle = [event for c, part in enumerate(item["content"])
                  for event in _part_events(part, {**at, "content_index": c}, piece)]
    elif kind == "reasoning":
        added = {**item, "summary": []}
        middle = [event for s, part in enumerate(item.get("summary") or ())
                  for event in _summary_events(part, {**at, "summary_index": s}, piece)]
    else:
        added, middle = item, []
    return [{"type": "response.output_item.added", "output_index": index, "item": added},
            *middle,
            {"type": "response.output_item.done", "output_index": index, "item": item}]


def _part_events(part: dict[str, Any], at: dict[str, Any], piece: int
                 ) -> list[dict[str, Any]]:
    if part["type"] == "refusal":
        empty: dict[str, Any] = {"type": "refusal", "refusal": ""}
        deltas = [{"type": "response.refusal.delta", **at, "delta": p}
                  for p in _pieces(part["refusal"], piece)]
        done = {"type": "response.refusal.done", **at, "refusal": part["refusal"]}
    else:
        empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        deltas = [{"type": "response.output_text.delta", **at, "delta": p, "logprobs": []}
                  for p in _pieces(part["text"], piece)]
        done = {"type": "response.output_text.done", **at, "text": part["text"],
                "logprobs": []}
    return [{"type": "response.content_part.added", **at, "part": empty}, *deltas, done,
            {"type": "response.content_part.done", **at, "part": part}]


def _summary_events(part: Any, at: dict[str, Any], piece: int) -> list[dict[str, Any]]:
    text = str(part.get("text") or "") if isinstance(part, Mapping) else ""
    return [
        {"type": "response.reasoning_summary_part.added", **at,
         "part": {"type": "summary_text", "text": ""}},
        *({"type": "response.reasoning_summary_text.delta", **at, "delta": p}
          for p in _pieces(text, piece)),
        {"type": "response.reasoning_summary_text.done", **at, "text": text},
        {"type": "response.reasoning_summary_part.done", **at,
         "part": {"type": "summary_text", "text": text}},
    ]


def _pieces(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]
