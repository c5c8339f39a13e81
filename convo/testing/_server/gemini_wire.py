"""The server's side of the Gemini API: a reply written as a ``generateContent`` response or
as the chunks of ``streamGenerateContent?alt=sse``, errors in Google's shape, and usage
counted (the fake ``GeminiServer`` uses it; the client's side is
``convo.models._gemini.wire``). REST JSON throughout: camelCase, bytes as base64."""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ..._messages import Message, ToolCall
from ..._reply import Finish
from .replies import ErrorReply, Response, error_as_given, json_response, phrase

_FINISHES: Final = {Finish.LENGTH: "MAX_TOKENS", Finish.REFUSED: "SAFETY"}
STATUSES: Final = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                   404: "NOT_FOUND", 409: "ABORTED", 413: "INVALID_ARGUMENT",
                   429: "RESOURCE_EXHAUSTED", 499: "CANCELLED", 500: "INTERNAL",
                   501: "NOT_IMPLEMENTED", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}


# -- replies ---------------------------------------------------------------------------------


def _call_part(call: ToolCall) -> dict[str, Any]:
    function: dict[str, Any] = {"name": call.name, "args": call.arguments}
    if call.id:
        function["id"] = call.id
    return {"functionCall": function}


def parts_of(message: Message) -> list[dict[str, Any]]:
    """The reply's parts: its text, then its calls, its kept parts (``{"index", "part"}``
    reasoning items) served in place: a kept call part as that call's part (its signature on
    it), a kept text part's signature on the text part, thought parts at their index."""
    text = [{"text": message.text}] if message.text else []
    calls = [_call_part(c) for c in message.tool_calls]
    thoughts: list[tuple[int, dict[str, Any]]] = []
    items = sorted((item for item in message.reasoning
                    if isinstance(item.get("part"), Mapping)
                    and isinstance(item.get("index"), int)), key=lambda item: item["index"])
    for item in items:
        part = dict(item["part"])
        kept = part.get("functionCall")
        if isinstance(kept, Mapping):
            at = next((p for p in calls if p["functionCall"]["name"] == kept.get("name")
                       and "thoughtSignature" not in p), None)
            if at is not None and "thoughtSignature" in part:
                at["thoughtSignature"] = part["thoughtSignature"]
        elif part.get("thought") or not text:
            thoughts.append((item["index"], part))
        elif "thoughtSignature" in part:
            text[0]["thoughtSignature"] = part["thoughtSignature"]
    parts = text + calls
    for index, part in thoughts:
        parts.insert(min(index, len(parts)), part)
    return parts


def finish_reason(message: Message) -> str:
    return _FINISHES.get(message.finish, "STOP") if message.finish else "STOP"


def _words(text: str) -> int:
    return len(text.split())


def usage_of(message: Message, body: Mapping[str, Any]) -> dict[str, int]:
    """``usageMetadata``: a scripted reply's own (``metadata["usage"]``), else counted: the
    request's ``contents``, ``systemInstruction`` and ``tools`` as compact JSON ÷ 4 rounded
    up, the reply in words (thought parts' words as ``thoughtsTokenCount``)."""
    given = message.usage
    if given is not None:
        thoughts = given.reasoning_tokens
        usage = {"promptTokenCount": given.prompt_tokens,
                 "candidatesTokenCount": max(0, given.completion_tokens - thoughts),
                 "totalTokenCount": given.prompt_tokens + given.completion_tokens}
        if given.cache_read_tokens:
            usage["cachedContentTokenCount"] = given.cache_read_tokens
    else:
        sent = {k: body[k] for k in ("contents", "systemInstruction", "tools") if k in body}
        prompt = math.ceil(len(json.dumps(sent, separators=(",", ":"),
                                          ensure_ascii=False)) / 4)
        parts = parts_of(message)
        thoughts = sum(_words(str(p.get("text") or "")) for p in parts if p.get("thought"))
        output = _words(message.text) + sum(1 + len(c.arguments) for c in message.tool_calls)
        usage = {"promptTokenCount": prompt, "candidatesTokenCount": output,
                 "totalTokenCount": prompt + output + thoughts}
    if thoughts:
        usage["thoughtsTokenCount"] = thoughts
    return usage


def response_from_message(message: Message, *, model: str, response_id: str,
                          usage: Mapping[str, int]) -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": parts_of(message)},
                            "finishReason": finish_reason(message), "index": 0}],
            "usageMetadata": dict(usage), "modelVersion": model, "responseId": response_id}


def chunks_from_message(message: Message, *, model: str, response_id: str,
                        usage: Mapping[str, int], piece: int = 8) -> list[dict[str, Any]]:
    """The same reply as ``streamGenerateContent`` sends it: text and thoughts in pieces of
    ``piece`` characters (a part's signature on its last piece), each call whole, the finish
    reason and usage on the last chunk."""
    pieces: list[dict[str, Any]] = []
    for part in parts_of(message):
        text = part.get("text")
        if not isinstance(text, str) or len(text) <= piece:
            pieces.append(part)
            continue
        cut = [text[i:i + piece] for i in range(0, len(text), piece)]
        rest = {k: v for k, v in part.items() if k not in ("text", "thoughtSignature")}
        pieces += [{"text": c, **rest} for c in cut[:-1]]
        pieces.append({**part, "text": cut[-1]})
    chunks: list[dict[str, Any]] = [
        {"candidates": [{"content": {"role": "model", "parts": [p]}, "index": 0}],
         "modelVersion": model, "responseId": response_id} for p in pieces]
    if not chunks:
        chunks = [{"candidates": [{"content": {"role": "model", "parts": []}, "index": 0}],
                   "modelVersion": model, "responseId": response_id}]
    chunks[-1]["candidates"][0]["finishReason"] = finish_reason(message)
    chunks[-1]["usageMetadata"] = dict(usage)
    return chunks


def sse(chunks: Sequence[Mapping[str, Any]]) -> tuple[bytes, ...]:
    return tuple(f"data: {json.dumps(c)}\r\n\r\n".encode() for c in chunks)


# -- requests ------------------------------------------------------------------------------


def decode(data: str) -> bytes:
    """Base64 in either alphabet (the SDK writes bytes URL-safe; REST clients often not)."""
    return base64.b64decode(data.replace("-", "+").replace("_", "/") + "=" * (-len(data) % 4),
                            validate=True)


def undecodable(body: Mapping[str, Any]) -> str | None:
    """Where the request holds bytes (``inlineData.data``, ``thoughtSignature``) that are not
    base64, as the API refuses them; ``None`` when all decode."""
    for i, content in enumerate(body.get("contents") or ()):
        parts = content.get("parts") if isinstance(content, Mapping) else None
        for j, part in enumerate(parts or ()):
            if not isinstance(part, Mapping):
                continue
            inline = part.get("inlineData")
            found = {"inlineData.data": inline.get("data") if isinstance(inline, Mapping)
                     else None, "thoughtSignature": part.get("thoughtSignature")}
            for name, value in found.items():
                if value is None:
                    continue
                try:
                    decode(str(value))
                except (binascii.Error, ValueError):
                    return f"contents[{i}].parts[{j}].{name}"
    return None


# -- errors ----------------------------------------------------------------------------------


def error_body(status: int, message: str) -> dict[str, Any]:
    word = STATUSES.get(status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")
    return {"error": {"code": status, "message": message, "status": word}}


def refused(status: int, message: str) -> Response:
    """The server's own refusal of a request, in the API's error shape."""
    return json_response(status, error_body(status, message))


def error_response(reply: ErrorReply) -> Response:
    """An ``ErrorReply`` in Google's shape (a body given as text or bytes is sent as is; an
    OpenAI-shaped ``{"error": {"message"}}``, as the script's own errors are, is reshaped)."""
    body = reply.body
    if body is None:
        body = error_body(reply.status, f"GeminiServer: scripted HTTP {reply.status} "
                                        f"{phrase(reply.status)}")
    elif (isinstance(body, Mapping) and isinstance(body.get("error"), Mapping)
          and "code" not in body["error"]):
        body = error_body(reply.status, str(body["error"].get("message") or ""))
    return error_as_given(reply, body)
