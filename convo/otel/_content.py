"""Messages as the GenAI conventions record them (``gen_ai.input.messages`` /
``gen_ai.output.messages``: JSON strings of ``{"role", "parts": [...]}``); only ever used
with ``capture_content=True``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .._messages import Message
from .._parts import binaries, shown


def parts(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [{"type": "tool_call_response", "id": message.tool_call_id,
                 "response": shown(message.content)}]
    out: list[dict[str, Any]] = []
    if message.text:
        out.append({"type": "text", "content": message.text})
    # Images and files by what they are, never their bytes: a span is no place for them.
    out.extend({"type": "uri" if p.url else "blob", "modality": p.type,
                "mime_type": p.media_type, **({"uri": p.url} if p.url else {"size": p.size})}
               for p in binaries(message.content))
    out.extend({"type": "tool_call", "id": call.id, "name": call.name,
                "arguments": call.arguments} for call in message.tool_calls)
    return out


def input_messages(messages: Sequence[Message]) -> str:
    return dumps([{"role": m.role, "parts": parts(m)} for m in messages])


def output_messages(reply: Message) -> str:
    finish = reply.finish
    return dumps([{"role": reply.role, "parts": parts(reply),
                   "finish_reason": finish.value if finish is not None
                   else "tool_call" if reply.tool_calls else "stop"}])


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
