"""The Responses API wire format, as plain dicts: the sibling of ``wire.py`` (STYLE habit 3).

(Over 300 lines: both directions and the stream accumulator share the shape checks of
``wire.py`` and the output reader below; splitting them would scatter one format.)

Messages go out as the ``input`` items ``responses.create`` takes, in order: system, user and
assistant text as ``{"role", "content"}`` message items, an assistant's tool calls as
``function_call`` items, tool results as ``function_call_output`` items, and the reasoning
items a reply came with (``metadata["reasoning"]``, as the server sent them) back in place,
before that reply's own items. A response (a dict, or an SDK object, dumped) comes back as an
assistant ``Message``; ``ResponsesAccumulator`` rebuilds the same ``Message`` from the typed
stream events. Nothing here does I/O or imports the SDK; the server's side is the fake
server's, in ``convo.testing._server.responses_wire``.

The reply's metadata is that of a Chat Completions reply, so nothing downstream asks which API
it came from: ``finish_reason`` (``"stop"``, ``"tool_calls"``, or ``"length"`` for a reply
``incomplete`` at ``max_output_tokens``), ``usage`` in Chat Completions' keys (plus
``cache_read_tokens`` and ``reasoning_tokens`` when the server counts them), ``refusal``, and
``reasoning``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

import attrs

from ..._errors import ModelError
from ..._messages import Message, ToolCall
from ..._parts import Audio, Document, Image, Part, Text, binaries, text_of
from .wire import (
    WireError,
    _describe,
    _short,
    as_dict,
    build_message,
    identity,
    parse_arguments,
    usage_details,
)

ENCRYPTED_REASONING: Final = "reasoning.encrypted_content"
_INCOMPLETE_REASONS: Final = {"max_output_tokens": "length", "content_filter": "content_filter"}


class ReplyFailed(WireError):
    """The server said that the reply failed (``status: "failed"``, an ``error`` event)."""


# -- out: Message -> input items -----------------------------------------------------------


def message_items(message: Message) -> list[dict[str, Any]]:
    """One message as ``input`` items (an assistant reply may be several, or none)."""
    if message.role == "tool":
        return [{"type": "function_call_output", "call_id": message.tool_call_id or "",
                 "output": _output(message.content)}]
    if message.role != "assistant":
        return [{"role": message.role, "content": _content(message)}]
    # only OpenAI's own items (another provider's, after a switch, mean nothing here)
    items = [dict(item) for item in reasoning_of(message) if item.get("type") == "reasoning"]
    if message.content or not message.tool_calls:
        items.append({"role": "assistant", "content": _content(message)})
    items += [{"type": "function_call", "call_id": call.id, "name": call.name,
               "arguments": call.arguments_json()} for call in message.tool_calls]
    return items


def _content(message: Message) -> str | list[dict[str, Any]]:
    """A message's content: its ``str``, or its parts (images and files only from the user)."""
    content = message.content
    if isinstance(content, str):
        return content
    if message.role != "user":
        for part in binaries(content):
            raise ModelError(f"the Responses API takes images and files only in user "
                             f"messages; a {message.role} message has a "
                             f"{type(part).__name__} part ({part.label})")
    return [part_item(p) for p in content]


def _output(content: str | tuple[Part, ...]) -> str | list[dict[str, Any]]:
    """A tool's output: its text, then its images and files as input items."""
    if isinstance(content, str):
        return content
    found = binaries(content)
    if not found:
        return text_of(content)
    return [{"type": "input_text", "text": text_of(content)}, *map(part_item, found)]


def part_item(part: Part) -> dict[str, Any]:
    """One part as a Responses input item (``input_text``, ``input_image``, ``input_file``)."""
    if isinstance(part, Text):
        return {"type": "input_text", "text": part.text}
    if isinstance(part, Image):
        return {"type": "input_image", "image_url": part.data_url(),
                "detail": part.detail or "auto"}
    if isinstance(part, Document):
        if part.data is None:
            return {"type": "input_file", "file_url": part.url}
        item = {"type": "input_file", "file_data": part.data_url()}
        return item if part.filename is None else {**item, "filename": part.filename}
    assert isinstance(part, Audio)
    raise ModelError(f"the Responses API takes no audio input; an Audio part ({part.label}) "
                     "can go to a model on the Chat Completions API (api='chat')")


def input_to_wire(messages: Iterable[Message]) -> list[dict[str, Any]]:
    return [item for message in messages for item in message_items(message)]


def reasoning_of(message: Message) -> list[Mapping[str, Any]]:
    """The reasoning items kept on an assistant message (none: an empty list)."""
    items = message.metadata.get("reasoning") if message.metadata else None
    if items is None:
        return []
    if not isinstance(items, list) or not all(isinstance(i, Mapping) for i in items):
        raise WireError(f"expected metadata['reasoning'] to be a list of reasoning items "
                        f"(objects), got {_describe(items)}")
    return items


def tool_to_wire(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A tool schema as a flat Responses function tool; other tool types pass as they are."""
    function = schema.get("function")
    if isinstance(function, Mapping):
        flat: dict[str, Any] = {"type": "function"}
        for key in ("name", "description", "parameters", "strict"):
            if key in function:
                flat[key] = function[key]
        return flat
    if schema.get("type") not in (None, "function"):
        return dict(schema)
    if "name" in schema:
        return {"type": "function", **schema}
    raise WireError(f"a tool schema needs a 'function' (or a 'name'); got {dict(schema)!r}")


def tools_to_wire(schemas: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [tool_to_wire(s) for s in schemas]


def tool_choice_to_wire(choice: Any) -> Any:
    """A Chat Completions ``tool_choice`` as the Responses one (a named function is flat)."""
    if isinstance(choice, Mapping) and isinstance(choice.get("function"), Mapping):
        return {"type": "function", "name": choice["function"].get("name")}
    return choice


# -- in: response dict -> Message ----------------------------------------------------------


def usage_from_wire(usage: Any) -> dict[str, int] | None:
    """Token counts in Chat Completions' keys, or ``None`` when the reply has none."""
    if not isinstance(usage, Mapping):
        return None
    prompt, completion = usage.get("input_tokens") or 0, usage.get("output_tokens") or 0
    total = usage.get("total_tokens") or 0
    if not all(isinstance(v, int | float) and v >= 0 for v in (prompt, completion, total)):
        return None
    counts = {"prompt_tokens": int(prompt), "completion_tokens": int(completion),
              "total_tokens": int(total) or int(prompt) + int(completion)}
    return counts | usage_details(usage, "input_tokens_details", "output_tokens_details")


def message_from_response(response: Any) -> Message:
    """The assistant ``Message`` of a (non-streamed) Responses API response."""
    d = as_dict(response)
    output = d.get("output")
    if not isinstance(output, list):
        if d.get("error"):
            raise ReplyFailed(f"the reply is an error, not a response: {_error_text(d['error'])}")
        raise WireError(f"expected a Responses API response with an 'output' list, got "
                        f"{_short(d)}")
    status = d.get("status")
    if status == "failed":
        raise ReplyFailed(f"the response failed: {_error_text(d.get('error'))}")
    return read_output(output, finish_reason=_finish_reason(d),
                       usage=usage_from_wire(d.get("usage")))


def read_output(output: Sequence[Any], *, finish_reason: str | None,
                usage: Mapping[str, int] | None) -> Message:
    """A response's ``output`` items as one assistant ``Message``."""
    texts: list[str] = []
    refusals: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[dict[str, Any]] = []
    for position, item in enumerate(output):
        if not isinstance(item, Mapping):
            raise WireError(f"expected output item {position + 1} to be an object, got "
                            f"{_describe(item)}")
        kind = item.get("type")
        if kind == "message":
            _read_parts(item.get("content"), texts, refusals)
        elif kind == "function_call":
            calls.append(_call(item, len(calls)))
        elif kind == "reasoning":
            reasoning.append(dict(item))
    if finish_reason == "stop" and calls:
        finish_reason = "tool_calls"
    message = build_message("".join(texts) or None, calls, finish_reason=finish_reason,
                            refusal="".join(refusals) or None, usage=usage)
    if not reasoning:
        return message
    return attrs.evolve(message, metadata={**message.metadata, "reasoning": reasoning})


def _read_parts(content: Any, texts: list[str], refusals: list[str]) -> None:
    if isinstance(content, str):  # some servers send a message's content as a string
        texts.append(content)
        return
    if not isinstance(content, list):
        raise WireError(f"expected a message item's content to be a list, got "
                        f"{_describe(content)}")
    for part in content:
        if not isinstance(part, Mapping):
            raise WireError(f"expected a content part to be an object, got {_describe(part)}")
        if part.get("type") == "refusal":
            refusals.append(_text(part.get("refusal"), "a refusal part's refusal"))
        elif part.get("type") in ("output_text", "text", None):
            texts.append(_text(part.get("text"), "an output_text part's text"))


def _call(item: Mapping[str, Any], position: int) -> ToolCall:
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise WireError(f"function_call item {position + 1} has no name: {_short(dict(item))}")
    call_id = item.get("call_id") or item.get("id") or f"call_{position}"
    arguments, raw = parse_arguments(item.get("arguments"))
    return ToolCall(str(call_id), name, arguments, raw_arguments=raw)


def _finish_reason(d: Mapping[str, Any]) -> str:
    if d.get("status") != "incomplete":
        return "stop"
    details = d.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, Mapping) else None
    return _INCOMPLETE_REASONS.get(str(reason), str(reason or "incomplete"))


def _text(value: Any, what: str) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    raise WireError(f"expected {what} to be a string, got {_describe(value)}")


def _error_text(error: Any) -> str:
    if isinstance(error, Mapping):
        code = error.get("code")
        return f"{error.get('message') or _short(dict(error))}" + (f" ({code})" if code else "")
    return _short(error)


# -- streaming -----------------------------------------------------------------------------


class ResponsesAccumulator:
    """Rebuilds a reply from the Responses API's typed stream events.

    ``add(event)`` takes one event (a dict or an SDK object) and returns the text it carries,
    so that it can be shown at once; reasoning summary text goes to ``on_reasoning``.
    ``message()`` gives the final ``Message``, equal to what the non-streamed response gives:
    read from the final response's ``output`` when it carries one, else from the items the
    stream sent (``response.output_item.done``) and, for items never finished, from their
    deltas, keyed by ``output_index``.
    """

    END: Final = "a response.completed event"

    __slots__ = ("_arguments", "_done", "_items", "_texts", "chunks", "finish_reason",
                 "identity", "on_reasoning", "response", "usage")

    def __init__(self, on_reasoning: Callable[[str], None] | None = None) -> None:
        self.on_reasoning = on_reasoning
        self._items: dict[int, dict[str, Any]] = {}
        self._done: set[int] = set()
        self._texts: dict[int, list[str]] = {}
        self._arguments: dict[int, list[str]] = {}
        self.response: dict[str, Any] | None = None
        self.finish_reason: str | None = None
        self.usage: dict[str, int] | None = None
        self.identity: tuple[str | None, str | None] = (None, None)  # the final response's
        self.chunks = 0

    def add(self, event: Any) -> str:
        d = as_dict(event)
        self.chunks += 1
        kind = d.get("type")
        if kind == "response.output_text.delta":
            delta = _text(d.get("delta"), "an output_text delta")
            self._texts.setdefault(self._index(d, "message"), []).append(delta)
            return delta
        if kind == "response.function_call_arguments.delta":
            delta = _text(d.get("delta"), "a function_call_arguments delta")
            self._arguments.setdefault(self._index(d, "function_call"), []).append(delta)
        elif kind == "response.reasoning_summary_text.delta":
            delta = _text(d.get("delta"), "a reasoning summary delta")
            if delta and self.on_reasoning is not None:
                self.on_reasoning(delta)
        elif kind in ("response.output_item.added", "response.output_item.done"):
            self._item(d, done=kind.endswith("done"))
        elif kind in ("response.completed", "response.incomplete"):
            self._finish(d)
        elif kind in ("response.failed", "error"):
            error: Any = d  # an "error" event carries its message and code itself
            if kind == "response.failed":
                response = d.get("response")
                error = response.get("error") if isinstance(response, Mapping) else None
            raise ReplyFailed(f"the stream said the reply failed ({kind}): "
                              f"{_error_text(error)}")
        return ""

    def _index(self, d: Mapping[str, Any], kind: str) -> int:
        index = d.get("output_index", 0)
        if not isinstance(index, int) or not 0 <= index < 1024:
            raise WireError(f"expected an event's output_index to be a small number, got "
                            f"{_describe(index)}")
        self._items.setdefault(index, {"type": kind})
        return index

    def _item(self, d: Mapping[str, Any], *, done: bool) -> None:
        item = d.get("item")
        if not isinstance(item, Mapping):
            raise WireError(f"expected {d.get('type')}'s item to be an object, got "
                            f"{_describe(item)}")
        index = self._index(d, str(item.get("type")))
        self._items[index] = dict(item)
        if done:
            self._done.add(index)

    def _finish(self, d: Mapping[str, Any]) -> None:
        response = d.get("response")
        if not isinstance(response, Mapping):
            raise WireError(f"expected {d.get('type')}'s response to be an object, got "
                            f"{_describe(response)}")
        self.response = dict(response)
        self.identity = identity(response)
        self.finish_reason = _finish_reason(response)
        self.usage = usage_from_wire(response.get("usage"))

    @property
    def complete(self) -> bool:
        """Whether the stream said how it finished (a cut stream never does)."""
        return self.response is not None

    def message(self) -> Message:
        output = self.response.get("output") if self.response is not None else None
        if not isinstance(output, list) or not output:
            output = [self._streamed(index) for index in sorted(self._items)]
        return read_output(output, finish_reason=self.finish_reason, usage=self.usage)

    def _streamed(self, index: int) -> dict[str, Any]:
        item = self._items[index]
        if index in self._done:
            return item
        if item.get("type") == "function_call":
            return {**item, "arguments": "".join(self._arguments.get(index, ()))}
        if item.get("type") == "message":
            text = "".join(self._texts.get(index, ()))
            return {**item, "content": [{"type": "output_text", "text": text}]}
        return item

