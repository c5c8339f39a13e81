"""The Messages API wire format, as plain dicts (STYLE habit 3: one pure converter).

(Over 300 lines: both directions and the stream accumulator share the block shapes below.)

Out: convo messages and tool schemas (OpenAI function-tool format) as the body of
``messages.create`` (API.md §23). Leading system messages are ``system`` blocks; a later one
is a ``<system>…</system>`` text block in the user turn where it stands, after that turn's
``tool_result`` blocks (the API takes them first); consecutive messages of one role are one
turn; tool calls are ``tool_use`` blocks and tool messages ``tool_result`` blocks
(``is_error`` for a failed call); images and documents are ``image``/``document`` blocks; a
reply's thinking blocks (``metadata["reasoning"]``, as received) go back first in its turn,
unchanged, and other providers' reasoning items are left out. With ``cache=True`` the last
tool, the last system block and the last block of the request carry ``cache_control``.

In: a response (or the events of a stream, ``StreamAccumulator``) as an assistant
``Message``: ``stop_reason`` ``end_turn``/``stop_sequence`` is ``Finish.STOP``,
``max_tokens`` ``LENGTH``, ``tool_use`` ``TOOL_CALLS``, ``refusal`` ``REFUSED``; usage's
``input_tokens`` + cache reads + cache writes is ``prompt_tokens``. Nothing here does I/O or
imports the SDK; the server's side is the test kit's (``convo.testing._server``).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from ..._errors import ModelError
from ..._messages import Message, ToolCall
from ..._parts import Audio, Document, Image, Part, Text
from ..._reply import Finish, Usage

THINKING_TYPES: Final = frozenset({"thinking", "redacted_thinking"})
CACHE: Final = {"type": "ephemeral"}
FINISHES: Final[Mapping[str, Finish]] = {
    "end_turn": Finish.STOP, "stop_sequence": Finish.STOP, "max_tokens": Finish.LENGTH,
    "tool_use": Finish.TOOL_CALLS, "refusal": Finish.REFUSED,
}
# Document blocks take PDFs as base64 and text as text; these media types are read as text.
_TEXT_TYPES: Final = ("text/", "application/json", "application/xml")


class WireError(ValueError):
    """A reply that is not the Messages API's: says what was expected and what was found."""


# -- out: messages -> request body ---------------------------------------------------------


def part_to_block(part: Part, where: str) -> dict[str, Any]:
    """One content part as a Messages API block; a ``ModelError`` when it has none."""
    if isinstance(part, Text):
        return {"type": "text", "text": part.text}
    if isinstance(part, Audio):
        raise ModelError(f"the Anthropic Messages API takes no audio; {where} has an Audio "
                         f"part ({part.label})")
    if isinstance(part, Image):
        return {"type": "image", "source": _source(part, "image/png")}
    return _document(part, where)


def _source(part: Image | Document, default: str) -> dict[str, Any]:
    if part.data is None:
        return {"type": "url", "url": part.url}
    return {"type": "base64", "media_type": part.media_type or default,
            "data": base64.b64encode(part.data).decode("ascii")}


def _document(part: Document, where: str) -> dict[str, Any]:
    media = part.media_type or ("application/pdf" if part.data is not None else None)
    block: dict[str, Any] = {"type": "document"}
    if part.data is None or media == "application/pdf":
        block["source"] = _source(part, "application/pdf")
    elif media is not None and media.startswith(_TEXT_TYPES):
        try:
            text = part.data.decode("utf-8")
        except UnicodeDecodeError:
            raise ModelError(f"the Anthropic Messages API takes a text document as UTF-8; "
                             f"{where} has a Document part ({part.label}) that is not "
                             "UTF-8") from None
        block["source"] = {"type": "text", "media_type": "text/plain", "data": text}
    else:
        raise ModelError(f"the Anthropic Messages API takes documents as PDF or text; {where} "
                         f"has a Document part ({part.label}) of type {media!r}")
    if part.filename is not None:
        block["title"] = part.filename
    return block


def content_blocks(content: str | tuple[Part, ...], where: str) -> list[dict[str, Any]]:
    """A message's content as blocks (empty text left out: the API refuses it)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return [part_to_block(p, where) for p in content
            if not (isinstance(p, Text) and not p.text)]


def thinking_of(message: Message) -> list[dict[str, Any]]:
    """A reply's own thinking blocks, as received; other providers' items are left out."""
    return [dict(item) for item in message.reasoning if item.get("type") in THINKING_TYPES]


def tool_use_block(call: ToolCall) -> dict[str, Any]:
    arguments: Any = call.arguments
    if call.raw_arguments is not None:  # not a JSON object: sent as the text it was
        arguments = {"arguments": call.raw_arguments}
    return {"type": "tool_use", "id": call.id, "name": call.name, "input": arguments}


def tool_result_block(message: Message, where: str) -> dict[str, Any]:
    blocks = content_blocks(message.content, where)
    content: Any = (message.content if isinstance(message.content, str)
                    else blocks)
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id or "",
                             "content": content}
    if message.error:
        block["is_error"] = True
    return block


def _add(turns: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    """Add blocks to the turn of ``role`` at the end (a new one if the last is the other
    role's); ``tool_result`` blocks go before the turn's other blocks."""
    if not blocks:
        return
    if not turns or turns[-1]["role"] != role:
        turns.append({"role": role, "content": []})
    content: list[dict[str, Any]] = turns[-1]["content"]
    for block in blocks:
        if block["type"] == "tool_result":
            at = next((i for i, b in enumerate(content) if b["type"] != "tool_result"),
                      len(content))
            content.insert(at, block)
        else:
            content.append(block)


def split_system(messages: Sequence[Message]) -> tuple[list[dict[str, Any]], int]:
    """The leading system messages as ``system`` blocks, and where the rest starts."""
    system: list[dict[str, Any]] = []
    start = 0
    while start < len(messages) and messages[start].role == "system":
        system += content_blocks(messages[start].text, f"message {start + 1}")
        start += 1
    return system, start


def messages_to_wire(messages: Sequence[Message]) -> tuple[list[dict[str, Any]],
                                                          list[dict[str, Any]]]:
    """``(system blocks, turns)`` of a request."""
    system, start = split_system(messages)
    turns: list[dict[str, Any]] = []
    for position in range(start, len(messages)):
        message = messages[position]
        where = f"message {position + 1}"
        if message.role == "system":
            if message.text:
                _add(turns, "user", [{"type": "text",
                                      "text": f"<system>{message.text}</system>"}])
        elif message.role == "user":
            _add(turns, "user", content_blocks(message.content, where))
        elif message.role == "tool":
            _add(turns, "user", [tool_result_block(message, where)])
        else:
            _add(turns, "assistant", thinking_of(message)
                 + content_blocks(message.content, where)
                 + [tool_use_block(c) for c in message.tool_calls])
    return system, turns


def tool_to_wire(schema: Mapping[str, Any]) -> dict[str, Any]:
    """An OpenAI function-tool schema (or a bare function) as an Anthropic tool."""
    function = schema.get("function", schema)
    if not isinstance(function, Mapping) or not function.get("name"):
        raise WireError(f"a tool schema needs a 'function' with a 'name'; got {dict(schema)!r}")
    tool: dict[str, Any] = {"name": function["name"],
                            "input_schema": dict(function.get("parameters")
                                                 or {"type": "object", "properties": {}})}
    if function.get("description"):
        tool["description"] = function["description"]
    return tool


def _used_tools(turns: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    names = dict.fromkeys(block["name"] for turn in turns for block in turn["content"]
                          if block["type"] == "tool_use")
    return [{"name": name, "input_schema": {"type": "object"}} for name in names]


def _has_tool_blocks(turns: Iterable[Mapping[str, Any]]) -> bool:
    return any(block["type"] in ("tool_use", "tool_result")
               for turn in turns for block in turn["content"])


def request_body(messages: Sequence[Message], tools: Sequence[Mapping[str, Any]] = (), *,
                 model: str, max_tokens: int, cache: bool = True) -> dict[str, Any]:
    """The body of ``messages.create`` for these messages and tools.

    The API takes no request without a message: a conversation of system messages alone (a
    bot that speaks first) sends them as its one user turn, and an empty one is a
    ``ModelError``."""
    system, turns = messages_to_wire(messages)
    if not turns:
        if not system:
            raise ModelError("the Anthropic Messages API needs at least one message; the "
                             "conversation is empty: start it with a system or user message")
        turns, system = [{"role": "user", "content": system}], []
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "messages": turns}
    if system:
        body["system"] = system
    wire_tools = [tool_to_wire(t) for t in tools]
    if wire_tools:
        body["tools"] = wire_tools
    elif _has_tool_blocks(turns):  # the API wants the tools a history used, even unoffered
        body["tools"] = _used_tools(turns)
        body["tool_choice"] = {"type": "none"}
    if cache:
        mark_cache(body)
    return body


def mark_cache(body: dict[str, Any]) -> None:
    """``cache_control`` on the last tool, the last system block and the request's last block
    (thinking blocks take none: the last other block of the last turn)."""
    if body.get("tools"):
        body["tools"][-1]["cache_control"] = dict(CACHE)
    if body.get("system"):
        body["system"][-1]["cache_control"] = dict(CACHE)
    turns = body.get("messages") or ()
    if turns:
        content = turns[-1]["content"]
        last = next((b for b in reversed(content) if b["type"] not in THINKING_TYPES), None)
        if last is not None:
            last["cache_control"] = dict(CACHE)


# -- in: response -> Message ---------------------------------------------------------------


def as_dict(obj: Any) -> dict[str, Any]:
    """A response or an event as a dict: dicts as they are, SDK objects as their JSON."""
    if isinstance(obj, Mapping):
        return dict(obj)
    for method in ("to_dict", "model_dump"):
        dump = getattr(obj, method, None)
        if dump is not None:
            dumped = dump(mode="json")
            if isinstance(dumped, dict):
                return dumped
    raise WireError(f"expected a Messages API response object, got {_short(obj)}")


def response_json(body: bytes) -> Any:
    """A response body's JSON; a body that is not JSON is a ``WireError``."""
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as exc:  # RecursionError: absurdly deep nesting
        raise WireError(f"the reply is not JSON ({type(exc).__name__}): {body[:200]!r}"
                        ) from None


def usage_from_wire(usage: Any) -> Usage | None:
    """Anthropic's token counts as a ``Usage``: all input is ``prompt_tokens``."""
    if not isinstance(usage, Mapping):
        return None
    counts = {k: usage.get(k) for k in ("input_tokens", "output_tokens",
                                        "cache_read_input_tokens",
                                        "cache_creation_input_tokens")}
    n = {k: int(v) if isinstance(v, int | float) and v > 0 else 0 for k, v in counts.items()}
    prompt = (n["input_tokens"] + n["cache_read_input_tokens"]
              + n["cache_creation_input_tokens"])
    return Usage(prompt, n["output_tokens"], prompt + n["output_tokens"],
                 cache_read_tokens=n["cache_read_input_tokens"],
                 cache_write_tokens=n["cache_creation_input_tokens"])


def message_from_response(response: Any) -> Message:
    """The assistant ``Message`` of a Messages API response (a dict or an SDK ``Message``)."""
    d = as_dict(response)
    if d.get("type") == "error":
        raise WireError(f"the reply is an error, not a message: {d.get('error')!r}")
    content = d.get("content")
    if not isinstance(content, list):
        raise WireError(f"expected a Messages API response with a 'content' list, got "
                        f"{_short(d)}")
    text: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[dict[str, Any]] = []
    for position, block in enumerate(content):
        if not isinstance(block, Mapping):
            raise WireError(f"expected content block {position + 1} to be an object, got "
                            f"{_short(block)}")
        kind = block.get("type")
        if kind == "text":
            text.append(str(block.get("text") or ""))
        elif kind == "tool_use":
            arguments = block.get("input")
            calls.append(ToolCall(str(block.get("id") or f"toolu_{position}"),
                                  str(block.get("name") or ""),
                                  dict(arguments) if isinstance(arguments, Mapping) else {},
                                  raw_arguments=_raw(arguments)))
        elif kind in THINKING_TYPES:
            reasoning.append(dict(block))
    word = d.get("stop_reason")
    finish = FINISHES.get(word) if isinstance(word, str) else None
    said = "".join(text)
    return Message.assistant(said, calls, finish=finish, usage=usage_from_wire(d.get("usage")),
                             reasoning=reasoning,
                             refusal=(said or "refused") if finish is Finish.REFUSED else None)


class StreamAccumulator:
    """Rebuilds a response from its streamed events (dicts or SDK event objects).

    ``add(event)`` returns ``(text, thinking)``: the pieces of each that the event carried, to
    be shown at once; ``message()`` gives the ``Message`` the whole response would have.
    """

    __slots__ = ("_json", "done", "response")

    def __init__(self) -> None:
        self.response: dict[str, Any] = {}
        self._json: dict[int, list[str]] = {}
        self.done = False

    def add(self, event: Any) -> tuple[str, str]:
        e = as_dict(event)
        kind = e.get("type")
        if kind == "error":
            raise WireError(f"the stream carried an error: {e.get('error')!r}")
        if kind == "message_start":
            self.response = dict(e.get("message") or {})
            self.response["content"] = []
        elif kind == "content_block_start":
            self.response.setdefault("content", []).append(dict(e.get("content_block") or {}))
        elif kind == "content_block_delta":
            return self._delta(int(e.get("index") or 0), e.get("delta") or {})
        elif kind == "content_block_stop":
            self._close(int(e.get("index") or 0))
        elif kind == "message_delta":
            self.response.update(e.get("delta") or {})
            usage = dict(self.response.get("usage") or {})
            usage.update({k: v for k, v in (e.get("usage") or {}).items() if v is not None})
            self.response["usage"] = usage
        elif kind == "message_stop":
            self.done = True
        return "", ""

    def _block(self, index: int) -> dict[str, Any]:
        content = self.response.setdefault("content", [])
        if not 0 <= index < len(content):
            raise WireError(f"a streamed delta for content block {index}, which never started")
        block: dict[str, Any] = content[index]
        return block

    def _delta(self, index: int, delta: Mapping[str, Any]) -> tuple[str, str]:
        block = self._block(index)
        kind = delta.get("type")
        if kind == "text_delta":
            block["text"] = block.get("text", "") + str(delta.get("text") or "")
            return str(delta.get("text") or ""), ""
        if kind == "input_json_delta":
            self._json.setdefault(index, []).append(str(delta.get("partial_json") or ""))
        elif kind == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + str(delta.get("thinking") or "")
            return "", str(delta.get("thinking") or "")
        elif kind == "signature_delta":
            block["signature"] = block.get("signature", "") + str(delta.get("signature") or "")
        return "", ""

    def _close(self, index: int) -> None:
        pieces = self._json.pop(index, None)
        if pieces is not None:
            text = "".join(pieces)
            try:
                value: Any = json.loads(text) if text.strip() else {}
            except ValueError:
                value = text  # kept raw: the model is told its arguments were not JSON
            self._block(index)["input"] = value

    def message(self) -> Message:
        if not self.response:
            raise WireError("the stream ended before its message_start event")
        return message_from_response(self.response)


def _raw(arguments: Any) -> str | None:
    """A tool call's input that is not an object, as the raw text convo keeps."""
    if isinstance(arguments, Mapping):
        return None
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def _short(value: Any, limit: int = 200) -> str:
    text = f"{type(value).__name__} {value!r}"
    return text if len(text) <= limit else text[: limit - 3] + "..."
