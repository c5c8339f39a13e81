"""The Chat Completions wire format, as plain dicts (STYLE habit 3: one pure converter).

(Over 300 lines: both directions, the content parts and the stream accumulator share the
shape checks below; splitting them would scatter one format over several modules.)

Messages and tool schemas go out as the dicts ``chat.completions.create`` takes; a response
(a dict, or an SDK object, which is dumped to one) comes back as an assistant ``Message``.
A user message with parts goes out as a list of content parts; the images and files a tool
returned go in a user message right after the tool results (Chat Completions' tool messages
carry text only); a part the API cannot carry is a ``ModelError`` before anything is sent.
``StreamAccumulator`` rebuilds the same ``Message`` from streamed chunks. Nothing here does
I/O or imports the SDK. The server's side (replies as responses and chunks) is the fake
server's, in ``convo.testing._server.chat_wire``.

A reply's ``finish_reason`` lands in ``metadata["finish_reason"]``, its token counts in
``metadata["usage"]`` and a refusal in ``metadata["refusal"]`` (and, when there is no other
text, in ``content``, so that it is seen): OpenAI's words ``stop``, ``length`` and
``tool_calls`` are convo's (``convo._reply.Finish``), and its cached and reasoning token counts
become ``cache_read_tokens`` and ``reasoning_tokens``; the core reads them as the typed
``message.finish`` and ``message.usage``. The response's ``id`` and ``model`` are read apart
(``identity``): they describe the call, not the message.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from ..._errors import ModelError
from ..._messages import Message, ToolCall
from ..._parts import Audio, Document, Image, Part, Text, binaries, shown

USAGE_KEYS: Final = ("prompt_tokens", "completion_tokens", "total_tokens")


class WireError(ValueError):
    """A reply that is not Chat Completions: says what was expected and what was found."""


# -- out: Message -> dict ------------------------------------------------------------------


def tool_call_to_wire(call: ToolCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments_json()},
    }


AUDIO_FORMATS: Final = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav",
                        "audio/mpeg": "mp3", "audio/mp3": "mp3"}


def part_to_wire(part: Part, where: str = "a message") -> dict[str, Any]:
    """One content part as Chat Completions takes it; a ``ModelError`` when it cannot."""
    if isinstance(part, Text):
        return {"type": "text", "text": part.text}
    if isinstance(part, Image):
        image: dict[str, Any] = {"url": part.data_url()}
        if part.detail is not None:
            image["detail"] = part.detail
        return {"type": "image_url", "image_url": image}
    if isinstance(part, Audio):
        audio_format = AUDIO_FORMATS.get(part.media_type or "")
        if part.data is None or audio_format is None:
            raise ModelError(
                f"the Chat Completions API takes audio as inline wav or mp3 data; {where} has "
                f"an Audio part ({part.label}) with "
                + ("only a URL" if part.data is None else f"media type {part.media_type!r}"))
        return {"type": "input_audio", "input_audio": {
            "data": part.data_url().partition(",")[2], "format": audio_format}}
    return _document_to_wire(part, where)


def _document_to_wire(part: Document, where: str) -> dict[str, Any]:
    if part.data is None:
        raise ModelError(f"the Chat Completions API takes a file as inline data, not a URL; "
                         f"{where} has a Document part with url={part.url!r} (download it and "
                         f"send Document(data=...), or use api='responses')")
    file: dict[str, Any] = {"file_data": part.data_url()}
    if part.filename is not None:
        file["filename"] = part.filename
    return {"type": "file", "file": file}


def content_to_wire(message: Message, where: str) -> str | list[dict[str, Any]]:
    """A message's content: its ``str``, or its parts (binary parts only from the user)."""
    content = message.content
    if isinstance(content, str):
        return content
    if message.role != "user":
        for part in binaries(content):
            raise ModelError(f"the Chat Completions API takes images, audio and files only in "
                             f"user messages; {where} ({message.role}) has a "
                             f"{type(part).__name__} part ({part.label})")
    return [part_to_wire(p, where) for p in content]


def message_to_wire(message: Message, where: str = "a message") -> dict[str, Any]:
    """One message as a Chat Completions request message.

    A tool message's images or files are left out here (its text names them):
    ``messages_to_wire`` sends them in the user message after the tool results.
    """
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id or "",
                "content": shown(message.content)}
    # A tool-calls-only reply goes with "content": "", never null: OpenAI, vLLM and Ollama
    # take both, but llama-cpp-python answers HTTP 500 to null.
    d: dict[str, Any] = {"role": message.role, "content": content_to_wire(message, where)}
    if message.tool_calls:
        d["tool_calls"] = [tool_call_to_wire(c) for c in message.tool_calls]
    if message.name is not None:
        d["name"] = message.name
    return d


def messages_to_wire(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """The messages of a request; tools' images and files follow their results as a user
    message."""
    out: list[dict[str, Any]] = []
    returned: list[dict[str, Any]] = []  # parts of the tool results in a row, in order
    for position, message in enumerate(messages):
        where = f"message {position + 1}"
        if message.role != "tool" and returned:
            out.append({"role": "user", "content": returned})
            returned = []
        out.append(message_to_wire(message, where))
        found = binaries(message.content) if message.role == "tool" else ()
        if found:
            returned.append({"type": "text", "text": f"(returned by the tool "
                                                     f"{message.name or message.tool_call_id})"})
            returned += [part_to_wire(p, where) for p in found]
    if returned:
        out.append({"role": "user", "content": returned})
    return out


def tool_to_wire(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A tool schema in the function-tool format; a bare function description is wrapped."""
    if "function" in schema or schema.get("type") not in (None, "function"):
        return dict(schema)
    if "name" in schema:
        return {"type": "function", "function": dict(schema)}
    raise WireError(f"a tool schema needs a 'function' (or a 'name'); got {dict(schema)!r}")


def tools_to_wire(schemas: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [tool_to_wire(s) for s in schemas]


# -- in: response dict -> Message ----------------------------------------------------------


def as_dict(obj: Any) -> dict[str, Any]:
    """A response or chunk as a dict: dicts as they are, SDK (pydantic) objects dumped."""
    if isinstance(obj, Mapping):
        return dict(obj)
    dump = getattr(obj, "model_dump", None)
    if dump is not None:
        dumped = dump()
        if isinstance(dumped, dict):
            return dumped
    raise WireError(f"expected a Chat Completions response object, got {_describe(obj)}")


def parse_arguments(text: Any) -> tuple[dict[str, Any], str | None]:
    """Arguments as ``(arguments, raw_arguments)``: a JSON object, or the text kept raw.

    Some servers send the arguments as a JSON object rather than as a string: taken as is.
    """
    if isinstance(text, Mapping):
        return {str(k): v for k, v in text.items()}, None
    if text is not None and not isinstance(text, str):
        return {}, _short(text, 2000)  # fed back to the model as arguments it must fix
    if text is None or not text.strip():
        return {}, None
    try:
        value = json.loads(text)
    except ValueError:
        return {}, text
    if isinstance(value, dict):
        return value, None
    return {}, text


def tool_call_from_wire(d: Any, position: int) -> ToolCall:
    if not isinstance(d, Mapping):
        raise WireError(f"expected tool call {position + 1} to be an object, got {_describe(d)}")
    call_id = str(d.get("id") or f"call_{position}")
    if d.get("type") == "custom" and isinstance(d.get("custom"), Mapping):
        custom = d["custom"]
        return ToolCall(call_id, str(custom.get("name") or ""), {},
                        raw_arguments=str(custom.get("input") or ""))
    function = d.get("function")
    if not isinstance(function, Mapping) or not function.get("name"):
        raise WireError(f"tool call {position + 1} has no function name: {dict(d)!r}")
    arguments, raw = parse_arguments(function.get("arguments"))
    return ToolCall(call_id, str(function["name"]), arguments, raw_arguments=raw)


def identity(d: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """A response's (or a chunk's) ``id`` and ``model``, each ``None`` unless a string."""
    response_id, model = d.get("id"), d.get("model")
    return (response_id if isinstance(response_id, str) and response_id else None,
            model if isinstance(model, str) and model else None)


def usage_from_wire(usage: Any) -> dict[str, int] | None:
    """Token counts, or ``None`` when the reply has none (or none that are numbers)."""
    if not isinstance(usage, Mapping):
        return None
    values = [usage.get(k) or 0 for k in USAGE_KEYS]
    if not all(isinstance(v, int | float) and v >= 0 for v in values):
        return None
    counts = {k: int(v) for k, v in zip(USAGE_KEYS, values, strict=True)}
    if not counts["total_tokens"]:
        counts["total_tokens"] = counts["prompt_tokens"] + counts["completion_tokens"]
    return counts | usage_details(usage, "prompt_tokens_details", "completion_tokens_details")


def usage_details(usage: Mapping[str, Any], inputs: str, outputs: str) -> dict[str, int]:
    """OpenAI's cached input tokens and reasoning tokens (in ``usage[inputs]`` and
    ``usage[outputs]``) as a reply's ``cache_read_tokens`` and ``reasoning_tokens`` (only
    those reported above 0: a reply that reports none stores what it always stored)."""
    found: dict[str, int] = {}
    for where, key, name in ((inputs, "cached_tokens", "cache_read_tokens"),
                             (outputs, "reasoning_tokens", "reasoning_tokens")):
        details = usage.get(where)
        value = details.get(key) if isinstance(details, Mapping) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            found[name] = value
    return found


def build_message(
    content: str | None,
    tool_calls: Sequence[ToolCall],
    *,
    finish_reason: str | None,
    refusal: str | None,
    usage: Mapping[str, int] | None,
) -> Message:
    """The assistant message of a reply; shared by the plain and the streamed path."""
    metadata: dict[str, Any] = {}
    if finish_reason is not None:
        metadata["finish_reason"] = finish_reason
    if refusal:
        metadata["refusal"] = refusal
        content = content or refusal
    if usage is not None:
        metadata["usage"] = dict(usage)
    return Message("assistant", content or "", tool_calls=tuple(tool_calls), metadata=metadata)


def message_from_response(response: Any) -> Message:
    """The assistant ``Message`` of a (non-streamed) Chat Completions response."""
    d = as_dict(response)
    choices = d.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        error = d.get("error")
        if error:
            raise WireError(f"the reply is an error, not a completion: {error!r}")
        raise WireError(f"expected a Chat Completions response with 'choices', got {_short(d)}")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, Mapping):
        raise WireError(f"expected choices[0].message to be an object, got {_short(choice)}")
    calls = [tool_call_from_wire(c, i)
             for i, c in enumerate(_list(message.get("tool_calls"), "message.tool_calls"))]
    return build_message(
        text_of(message.get("content")), calls,
        finish_reason=_text(choice.get("finish_reason"), "finish_reason"),
        refusal=_text(message.get("refusal"), "refusal"),
        usage=usage_from_wire(d.get("usage")),
    )


def _list(value: Any, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise WireError(f"expected {what} to be a list, got {_describe(value)}")
    return value


def _text(value: Any, what: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise WireError(f"expected {what} to be a string, got {_describe(value)}")


def text_of(content: Any) -> str | None:
    """Content as text; a list of content parts (some servers send one) is joined."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_text(p.get("text"), "a content part's text") or ""
                       for p in content if isinstance(p, Mapping))
    raise WireError(f"expected message content to be a string, got {_describe(content)}")


# -- streaming -----------------------------------------------------------------------------


class _PartialCall:
    __slots__ = ("arguments", "id", "name")

    def __init__(self) -> None:
        self.id: str | None = None
        self.name = ""
        self.arguments: list[str] = []


class StreamAccumulator:
    """Rebuilds a reply from its streamed chunks.

    ``add(chunk)`` takes one chunk (a dict or an SDK object) and returns the text it carries,
    so that it can be shown at once; ``message()`` gives the final ``Message``, equal to what
    the non-streamed response would have given. Tool-call fragments are joined by ``index``.
    """

    __slots__ = ("_calls", "_content", "_refusal", "chunks", "finish_reason", "identity",
                 "usage")

    def __init__(self) -> None:
        self._content: list[str] = []
        self._refusal: list[str] = []
        self._calls: dict[int, _PartialCall] = {}
        self.finish_reason: str | None = None
        self.usage: dict[str, int] | None = None
        self.identity: tuple[str | None, str | None] = (None, None)  # the first chunk's
        self.chunks = 0

    def add(self, chunk: Any) -> str:
        d = as_dict(chunk)
        self.chunks += 1
        if self.chunks == 1:
            self.identity = identity(d)
        if d.get("error"):
            raise WireError(f"the stream carried an error: {d['error']!r}")
        usage = usage_from_wire(d.get("usage"))
        if usage is not None:
            self.usage = usage
        choices = _list(d.get("choices"), "a chunk's choices")
        if not choices:
            return ""
        choice = choices[0]
        if not isinstance(choice, Mapping):
            raise WireError(f"expected a chunk's choices[0] to be an object, got "
                            f"{_describe(choice)}")
        finish_reason = _text(choice.get("finish_reason"), "finish_reason")
        if finish_reason:
            self.finish_reason = finish_reason
        delta = choice.get("delta") or {}
        if not isinstance(delta, Mapping):
            raise WireError(f"expected a chunk's delta to be an object, got {_describe(delta)}")
        for fragment in _list(delta.get("tool_calls"), "delta.tool_calls"):
            self._add_call_fragment(fragment)
        refusal = _text(delta.get("refusal"), "delta.refusal")
        if refusal:
            self._refusal.append(refusal)
        text = text_of(delta.get("content")) or ""
        if text:
            self._content.append(text)
        return text

    def _add_call_fragment(self, fragment: Any) -> None:
        if not isinstance(fragment, Mapping):
            raise WireError(f"expected a tool-call fragment to be an object, got "
                            f"{_describe(fragment)}")
        index = fragment.get("index")
        if index is not None and (not isinstance(index, int) or not 0 <= index < 1024):
            raise WireError(f"expected a tool-call fragment's index to be a small number, got "
                            f"{_describe(index)}")
        if index is None:  # some servers leave it out: a new id starts a new call
            index = len(self._calls) - 1 if self._calls else 0
            if fragment.get("id") and self._calls and self._calls[index].id not in (
                None, fragment["id"]
            ):
                index += 1
        call = self._calls.setdefault(int(index), _PartialCall())
        if fragment.get("id"):
            call.id = str(fragment["id"])
        function = fragment.get("function") or {}
        if not isinstance(function, Mapping):
            raise WireError(f"expected a tool-call fragment's function to be an object, got "
                            f"{_describe(function)}")
        name = _text(function.get("name"), "a tool call's name")
        if name and name != call.name:  # some servers repeat the whole name in every fragment
            call.name += name
        arguments = function.get("arguments")
        if isinstance(arguments, Mapping):  # sent as an object, not as a string
            arguments = json.dumps(arguments, ensure_ascii=False)
        if arguments:
            call.arguments.append(_text(arguments, "a tool call's arguments") or "")

    @property
    def complete(self) -> bool:
        """Whether the stream said how it finished (a cut stream never does)."""
        return self.finish_reason is not None

    def message(self) -> Message:
        calls = []
        for position, (_, partial) in enumerate(sorted(self._calls.items())):
            if not partial.name:
                raise WireError(f"streamed tool call {position + 1} never got a function name")
            arguments, raw = parse_arguments("".join(partial.arguments))
            calls.append(ToolCall(partial.id or f"call_{position}", partial.name, arguments,
                                  raw_arguments=raw))
        return build_message(
            "".join(self._content) or None, calls,
            finish_reason=self.finish_reason,
            refusal="".join(self._refusal) or None,
            usage=self.usage,
        )


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {_short(value)}"


def _short(value: Any, limit: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
