"""The Gemini API wire format (``generateContent``), as plain values (STYLE habit 3: one pure
converter).

(Over 300 lines: both directions and the stream accumulator share the part shapes below.)

Out: convo messages and tool schemas (OpenAI function-tool format) as the arguments of the
``google-genai`` SDK's ``models.generate_content`` (API.md §23), in the SDK's field names
(snake_case; bytes as bytes: the SDK writes the REST JSON). Leading system messages are the
``system_instruction``; a later one is a ``<system>…</system>`` text part in the user turn
where it stands, after that turn's ``function_response`` parts; consecutive messages of one
role are one turn (roles ``user``/``model``); tool calls are ``function_call`` parts and tool
messages ``function_response`` parts (``{"output": text}``, or ``{"error": text}``); images,
audio and documents are ``inline_data`` (bytes) or ``file_data`` (a URL). A reply's kept parts
(``metadata["reasoning"]``: ``{"index": i, "part": {…}}``, REST JSON) go back in place: thought
parts first, a kept text part's signature on the message's text part, a kept call part's
signature on that call's part. Other providers' reasoning items are left out.

In: a response (REST JSON, or the SDK's response object dumped to it; or the chunks of a
stream, ``StreamAccumulator``) as an assistant ``Message``. Nothing here does I/O or imports
the SDK; the server's side is the test kit's (``convo.testing._server``).
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ..._errors import ModelError
from ..._messages import Message, ToolCall
from ..._parts import Audio, Document, Image, Part, Text
from ..._reply import Finish, Usage

CALL_IDS_KEY: Final = "gemini_call_ids"
"""Provider metadata of a reply: the call ids the API itself sent (only these go back)."""

FINISHES: Final[Mapping[str, Finish]] = {
    "STOP": Finish.STOP, "MAX_TOKENS": Finish.LENGTH, "SAFETY": Finish.REFUSED,
    "RECITATION": Finish.REFUSED, "BLOCKLIST": Finish.REFUSED,
    "PROHIBITED_CONTENT": Finish.REFUSED, "SPII": Finish.REFUSED,
    "IMAGE_SAFETY": Finish.REFUSED, "IMAGE_PROHIBITED_CONTENT": Finish.REFUSED,
}
_DEFAULT_TYPES: Final = {Image: "image/png", Audio: "audio/wav", Document: "application/pdf"}


class WireError(ValueError):
    """A reply that is not the Gemini API's: says what was expected and what was found."""


# -- out: messages -> request ------------------------------------------------------------------


def part_to_wire(part: Part) -> dict[str, Any]:
    """One content part as a Gemini part (SDK field names)."""
    if isinstance(part, Text):
        return {"text": part.text}
    media = part.media_type or _DEFAULT_TYPES[type(part)]
    if part.data is None:  # the real API takes only its own file URIs here (docs/models.md)
        return {"file_data": {"file_uri": part.url, "mime_type": media}}
    return {"inline_data": {"data": part.data, "mime_type": media}}


def content_parts(content: str | tuple[Part, ...]) -> list[dict[str, Any]]:
    """A message's content as parts (empty text left out: the API refuses an empty part)."""
    if isinstance(content, str):
        return [{"text": content}] if content else []
    return [part_to_wire(p) for p in content if not (isinstance(p, Text) and not p.text)]


def signature(part: Mapping[str, Any]) -> bytes | None:
    """A kept REST part's ``thoughtSignature`` as bytes (either base64 alphabet)."""
    value = part.get("thoughtSignature", part.get("thought_signature"))
    if not isinstance(value, str) or not value:
        return None
    try:
        return base64.b64decode(value.replace("-", "+").replace("_", "/")
                                + "=" * (-len(value) % 4))
    except (binascii.Error, ValueError):
        return None


def gemini_items(message: Message) -> list[Mapping[str, Any]]:
    """A reply's own kept parts, in order; other providers' reasoning items are left out."""
    items = [item for item in message.reasoning
             if isinstance(item.get("part"), Mapping) and isinstance(item.get("index"), int)]
    return sorted(items, key=lambda item: int(item["index"]))


def api_call_ids(message: Message) -> frozenset[str]:
    """The call ids of a reply that the API sent (made-up and other providers' ids are not)."""
    ids = message.provider.get(CALL_IDS_KEY)
    return frozenset(i for i in ids if isinstance(i, str)) if isinstance(ids, list) else \
        frozenset()


def function_call_part(call: ToolCall, call_id: str | None) -> dict[str, Any]:
    arguments: Any = call.arguments
    if call.raw_arguments is not None:  # not a JSON object: sent as the text it was
        arguments = {"arguments": call.raw_arguments}
    function: dict[str, Any] = {"name": call.name, "args": arguments}
    if call_id is not None:
        function["id"] = call_id
    return {"function_call": function}


def _same_call(kept: Mapping[str, Any], call: ToolCall, call_id: str | None) -> bool:
    if kept.get("name") != call.name:
        return False
    if kept.get("id") is not None:
        return kept.get("id") == call_id
    return bool(kept.get("args", {}) == (call.arguments if call.raw_arguments is None
                                         else {"arguments": call.raw_arguments}))


def model_parts(message: Message) -> list[dict[str, Any]]:
    """An assistant message's parts, its kept parts back in place."""
    ids = api_call_ids(message)
    calls = [(call, call.id if call.id in ids else None) for call in message.tool_calls]
    call_parts = [function_call_part(call, call_id) for call, call_id in calls]
    text = content_parts(message.content)
    thoughts: list[dict[str, Any]] = []
    for item in gemini_items(message):
        part = item["part"]
        sig = signature(part)
        kept_call = part.get("functionCall")
        if isinstance(kept_call, Mapping):
            at = next((i for i, (call, call_id) in enumerate(calls)
                       if "thought_signature" not in call_parts[i]
                       and _same_call(kept_call, call, call_id)), None)
            if at is not None and sig is not None:
                call_parts[at]["thought_signature"] = sig
        elif part.get("thought"):
            thought: dict[str, Any] = {"text": str(part.get("text") or ""), "thought": True}
            if sig is not None:
                thought["thought_signature"] = sig
            thoughts.append(thought)
        elif sig is not None:  # a text part's signature: on the message's text part
            text_part = next((p for p in text if "text" in p), None)
            if text_part is None:
                text_part = {"text": ""}
                text.append(text_part)
            text_part.setdefault("thought_signature", sig)
    return thoughts + text + call_parts


def function_response_part(message: Message, name: str, call_id: str | None
                           ) -> dict[str, Any]:
    key = "error" if message.error else "output"
    response: dict[str, Any] = {"name": name, "response": {key: message.text}}
    if call_id is not None:
        response["id"] = call_id
    return {"function_response": response}


def _add(turns: list[dict[str, Any]], role: str, parts: list[dict[str, Any]]) -> None:
    """Add parts to the turn of ``role`` at the end; ``function_response`` parts go before the
    turn's other parts."""
    if not parts:
        return
    if not turns or turns[-1]["role"] != role:
        turns.append({"role": role, "parts": []})
    content: list[dict[str, Any]] = turns[-1]["parts"]
    for part in parts:
        if "function_response" in part:
            at = next((i for i, p in enumerate(content) if "function_response" not in p),
                      len(content))
            content.insert(at, part)
        else:
            content.append(part)


def split_system(messages: Sequence[Message]) -> tuple[str, int]:
    """The leading system messages' text, and where the rest starts."""
    texts: list[str] = []
    start = 0
    while start < len(messages) and messages[start].role == "system":
        if messages[start].text:
            texts.append(messages[start].text)
        start += 1
    return "\n\n".join(texts), start


def messages_to_wire(messages: Sequence[Message]) -> tuple[str, list[dict[str, Any]]]:
    """``(system instruction, contents)`` of a request."""
    system, start = split_system(messages)
    turns: list[dict[str, Any]] = []
    calls: dict[str, tuple[str, str | None]] = {}  # call id -> (name, id sent back or None)
    for position in range(start, len(messages)):
        message = messages[position]
        if message.role == "system":
            if message.text:
                _add(turns, "user", [{"text": f"<system>{message.text}</system>"}])
        elif message.role == "user":
            _add(turns, "user", content_parts(message.content))
        elif message.role == "tool":
            name, call_id = calls.get(message.tool_call_id or "",
                                      (message.name or "tool", None))
            _add(turns, "user", [function_response_part(message, name, call_id)])
        else:
            ids = api_call_ids(message)
            calls.update({c.id: (c.name, c.id if c.id in ids else None)
                          for c in message.tool_calls})
            _add(turns, "model", model_parts(message))
    return system, turns


def tool_to_wire(schema: Mapping[str, Any]) -> dict[str, Any]:
    """An OpenAI function-tool schema (or a bare function) as a function declaration."""
    function = schema.get("function", schema)
    if not isinstance(function, Mapping) or not function.get("name"):
        raise WireError(f"a tool schema needs a 'function' with a 'name'; got {dict(schema)!r}")
    declaration: dict[str, Any] = {"name": function["name"]}
    if function.get("description"):
        declaration["description"] = function["description"]
    parameters = function.get("parameters")
    if parameters and (parameters.get("properties") or parameters.get("type") != "object"):
        declaration["parameters_json_schema"] = dict(parameters)
    return declaration


def request(messages: Sequence[Message], tools: Sequence[Mapping[str, Any]] = ()
            ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``(contents, config)`` for ``models.generate_content``.

    The API takes no request without contents: a conversation of system messages alone (a
    bot that speaks first) sends them as its one user turn, and an empty one is a
    ``ModelError``."""
    for position, message in enumerate(messages):
        _check_parts(message, f"message {position + 1}")
    system, contents = messages_to_wire(messages)
    if not contents:
        if not system:
            raise ModelError("the Gemini API needs at least one message; the conversation is "
                             "empty: start it with a system or user message")
        contents, system = [{"role": "user", "parts": [{"text": system}]}], ""
    config: dict[str, Any] = {}
    if system:
        config["system_instruction"] = system
    if tools:
        config["tools"] = [{"function_declarations": [tool_to_wire(t) for t in tools]}]
    return contents, config


def _check_parts(message: Message, where: str) -> None:
    if not isinstance(message.content, tuple):
        return
    for part in message.content:
        if not isinstance(part, Text | Image | Audio | Document):
            raise ModelError(f"the Gemini API takes text, images, audio and documents; "
                             f"{where} has a {type(part).__name__} part")


# -- in: response -> Message -------------------------------------------------------------------


def as_dict(obj: Any) -> dict[str, Any]:
    """A response or a chunk as REST JSON: dicts as they are, the SDK's objects dumped."""
    if isinstance(obj, Mapping):
        return dict(obj)
    dump = getattr(obj, "model_dump", None)
    if dump is not None:
        dumped = dump(mode="json", by_alias=True, exclude_none=True)
        if isinstance(dumped, dict):
            dumped.pop("sdkHttpResponse", None)
            return dumped
    raise WireError(f"expected a generateContent response, got {_short(obj)}")


def response_json(body: str | bytes) -> Any:
    """A response body's JSON; a body that is not JSON is a ``WireError``."""
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as exc:  # RecursionError: absurdly deep nesting
        raise WireError(f"the reply is not JSON ({type(exc).__name__}): {body[:200]!r}"
                        ) from None


def usage_from_wire(usage: Any) -> Usage | None:
    """Gemini's ``usageMetadata`` as a ``Usage``: thoughts count as output."""
    if not isinstance(usage, Mapping):
        return None

    def n(key: str) -> int:
        value = usage.get(key)
        return int(value) if isinstance(value, int | float) and value > 0 else 0

    prompt = n("promptTokenCount") + n("toolUsePromptTokenCount")
    completion = n("candidatesTokenCount") + n("thoughtsTokenCount")
    return Usage(prompt, completion, prompt + completion,
                 cache_read_tokens=n("cachedContentTokenCount"),
                 reasoning_tokens=n("thoughtsTokenCount"))


def _made_up_id() -> str:
    return f"gemini_{uuid.uuid4().hex[:24]}"


def message_from_parts(parts: Sequence[Mapping[str, Any]], *, finish_word: Any,
                       usage: Any, blocked: Any = None) -> Message:
    """The assistant ``Message`` of a reply's parts (REST JSON), in reply order."""
    text: list[str] = []
    calls: list[ToolCall] = []
    api_ids: list[str] = []
    kept: list[dict[str, Any]] = []
    for index, part in enumerate(parts):
        if not isinstance(part, Mapping):
            raise WireError(f"expected part {index + 1} to be an object, got {_short(part)}")
        if part.get("thought") or "thoughtSignature" in part:
            kept.append({"index": index, "part": dict(part)})
        call = part.get("functionCall")
        if isinstance(call, Mapping):
            call_id = call.get("id")
            if isinstance(call_id, str) and call_id:
                api_ids.append(call_id)
            else:
                call_id = _made_up_id()
            arguments = call.get("args")
            calls.append(ToolCall(call_id, str(call.get("name") or ""),
                                  dict(arguments) if isinstance(arguments, Mapping) else {},
                                  raw_arguments=_raw(arguments)))
        elif isinstance(part.get("text"), str) and not part.get("thought"):
            text.append(part["text"])
    finish = FINISHES.get(finish_word) if isinstance(finish_word, str) else None
    if blocked:
        finish = Finish.REFUSED
    if calls and finish is Finish.STOP:
        finish = Finish.TOOL_CALLS
    said = "".join(text)
    refusal = (said or "refused") if finish is Finish.REFUSED else None
    return Message.assistant(said, calls, finish=finish, usage=usage_from_wire(usage),
                             reasoning=kept, refusal=refusal,
                             provider={CALL_IDS_KEY: api_ids} if api_ids else None)


def message_from_response(response: Any) -> Message:
    """The assistant ``Message`` of a ``generateContent`` response (REST JSON or the SDK's)."""
    d = as_dict(response)
    candidates = d.get("candidates")
    feedback = d.get("promptFeedback") or {}
    if not candidates:
        if isinstance(feedback, Mapping) and feedback.get("blockReason"):
            return message_from_parts([], finish_word=None, usage=d.get("usageMetadata"),
                                      blocked=feedback["blockReason"])
        raise WireError(f"expected a generateContent response with 'candidates', got "
                        f"{_short(d)}")
    candidate = candidates[0]
    if not isinstance(candidate, Mapping):
        raise WireError(f"expected a candidate object, got {_short(candidate)}")
    parts = (candidate.get("content") or {}).get("parts") or []
    return message_from_parts(parts, finish_word=candidate.get("finishReason"),
                              usage=d.get("usageMetadata"))


class StreamAccumulator:
    """Rebuilds a reply from its streamed chunks (each a ``generateContent`` response).

    ``add(chunk)`` returns ``(text, thought)``: the pieces of each that the chunk carried, to
    be shown at once; ``message()`` gives the ``Message`` of the whole reply, its parts
    counted over all chunks.
    """

    __slots__ = ("_blocked", "_finish", "_usage", "chunks", "parts")

    def __init__(self) -> None:
        self.parts: list[dict[str, Any]] = []
        self.chunks = 0
        self._finish: Any = None
        self._usage: Any = None
        self._blocked: Any = None

    def add(self, chunk: Any) -> tuple[str, str]:
        d = as_dict(chunk)
        self.chunks += 1
        if d.get("usageMetadata"):
            self._usage = d["usageMetadata"]
        feedback = d.get("promptFeedback")
        if isinstance(feedback, Mapping) and feedback.get("blockReason"):
            self._blocked = feedback["blockReason"]
        text: list[str] = []
        thought: list[str] = []
        for candidate in d.get("candidates") or ():
            if not isinstance(candidate, Mapping):
                raise WireError(f"expected a candidate object, got {_short(candidate)}")
            if candidate.get("finishReason"):
                self._finish = candidate["finishReason"]
            for part in (candidate.get("content") or {}).get("parts") or ():
                if not isinstance(part, Mapping):
                    raise WireError(f"expected a part object, got {_short(part)}")
                self.parts.append(dict(part))
                piece = part.get("text")
                if isinstance(piece, str):
                    (thought if part.get("thought") else text).append(piece)
        return "".join(text), "".join(thought)

    @property
    def done(self) -> bool:
        """Whether the reply said how it finished (the last chunk of a whole stream does)."""
        return self._finish is not None or self._blocked is not None

    def message(self) -> Message:
        return message_from_parts(self.parts, finish_word=self._finish, usage=self._usage,
                                  blocked=self._blocked)


def _raw(arguments: Any) -> str | None:
    if isinstance(arguments, Mapping) or arguments is None:
        return None
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def _short(value: Any, limit: int = 200) -> str:
    text = f"{type(value).__name__} {value!r}"
    return text if len(text) <= limit else text[: limit - 3] + "..."
