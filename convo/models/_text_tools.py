"""Tool calls written as text: parsing ``<tool_call>`` blocks and recovering leaked calls.

Pure functions over strings (STYLE habit 3), shared by both tool formats of ``OpenAIModel``:

- ``parse_text_calls(text)``: the text protocol (``tool_format="text"``). Every
  ``<tool_call>{"name": …, "arguments": {…}}</tool_call>`` block becomes a ``ToolCall`` and is
  cut from the text; a block that does not parse becomes a call named ``MALFORMED_CALL`` whose
  problem is kept, so that the model can be told (``openai/text_protocol.py`` feeds it back).
- ``recover_tool_calls(text, names)``: a server that leaves a call in the message text
  (``tool_calls: []``). Only a reply whose *whole* text is a call of an offered tool is read
  as calls: ``<tool_call>`` blocks, a bare ``{"name", "arguments"}`` object or a list of them,
  or one fenced JSON block. Anything else stays text. Costs one look at the first and last
  character for a reply that cannot be a call.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable, Container, Mapping
from types import MappingProxyType
from typing import Any, Final, NamedTuple

from .._errors import ToolCallParseError
from .._messages import ToolCall

OPEN: Final = "<tool_call>"
CLOSE: Final = "</tool_call>"
# The name given to a block that does not parse: no tool has it, so it never runs.
MALFORMED_CALL: Final = "malformed_tool_call"

_STARTS: Final = frozenset("<{[`")
_ENDS: Final = frozenset(">}]`")


# Random per process, counted within it: ids stay unique across processes and restarts (a
# resumed or served conversation), at the cost of a counter step each.
_ID_PREFIX: Final = f"call_{os.urandom(5).hex()}_"
_ID_COUNTER: Final = itertools.count(1)


def new_call_id() -> str:
    """A fresh tool-call id, unique across processes (``call_<random>_<n>``)."""
    return f"{_ID_PREFIX}{next(_ID_COUNTER)}"


_NO_ERRORS: Final[Mapping[str, str]] = MappingProxyType({})


class TextReply(NamedTuple):
    """A reply read for text tool calls: the text left, the calls, and each malformed call's
    problem by call id."""

    content: str
    calls: tuple[ToolCall, ...] = ()
    errors: Mapping[str, str] = _NO_ERRORS


# -- one call ------------------------------------------------------------------------------


def _strip_fence(text: str) -> str:
    """The inside of a fenced code block (```json … ```), or the text as it is."""
    if not text.startswith("```"):
        return text
    body = text[3:]
    if body.endswith("```"):
        body = body[:-3]
    first, newline, rest = body.partition("\n")
    if newline and (not first.strip() or first.strip().isidentifier()):
        body = rest  # the language tag line
    return body.strip()


def call_from_object(value: Any, new_id: Callable[[], str], *,
                     strict: bool = False) -> ToolCall:
    """A ``ToolCall`` from a decoded ``{"name", "arguments"}`` object (``"parameters"`` and the
    API's own ``{"function": {...}}`` shape are read too); ``ToolCallParseError`` otherwise.
    ``strict``: the object must carry its arguments (recovery reads no bare ``{"name"}``)."""
    if not isinstance(value, dict):
        raise ToolCallParseError(
            f'expected a JSON object with "name" and "arguments", got {type(value).__name__}')
    if "function" in value and isinstance(value["function"], dict):
        value = value["function"]
    if strict and "arguments" not in value and "parameters" not in value:
        raise ToolCallParseError('the object has no "arguments"')
    name = value.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ToolCallParseError('the call has no "name" (the tool\'s name, a string)')
    arguments = value.get("arguments", value.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments, strict=False) if arguments.strip() else {}
        except ValueError as exc:
            raise ToolCallParseError(f'"arguments" of {name!r} is a string that is not JSON '
                                     f"({exc})") from exc
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ToolCallParseError(f'"arguments" of {name!r} must be a JSON object, got '
                                 f"{type(arguments).__name__}")
    return ToolCall(new_id(), name.strip(), arguments)


def parse_block(block: str, new_id: Callable[[], str] = new_call_id, *,
                strict: bool = False) -> list[ToolCall]:
    """The calls in the text of one ``<tool_call>`` block: an object, or a list of them."""
    text = _strip_fence(block.strip())
    if not text:
        raise ToolCallParseError("the <tool_call> block is empty")
    try:
        value = json.loads(text, strict=False)  # small models put raw newlines in strings
    except ValueError as exc:
        raise ToolCallParseError(f"the <tool_call> block is not valid JSON ({exc})") from exc
    if isinstance(value, list) and value:
        return [call_from_object(v, new_id, strict=strict) for v in value]
    return [call_from_object(value, new_id, strict=strict)]


# -- the text protocol ---------------------------------------------------------------------


def _blocks(text: str, start: int) -> tuple[list[str], list[str]]:
    """The text outside ``<tool_call>`` blocks and the blocks' insides, the first block
    starting at ``start``. A last block the model never closed (it stopped there) runs to the
    end of the text."""
    kept: list[str] = []
    blocks: list[str] = []
    pos = 0
    while True:
        if start == -1:
            kept.append(text[pos:])
            return kept, blocks
        kept.append(text[pos:start])
        end = text.find(CLOSE, start)
        if end == -1:
            blocks.append(text[start + len(OPEN):])
            return kept, blocks
        blocks.append(text[start + len(OPEN):end])
        pos = end + len(CLOSE)
        start = text.find(OPEN, pos)


def parse_text_calls(text: str, new_id: Callable[[], str] = new_call_id) -> TextReply:
    """Read ``<tool_call>`` blocks out of a reply (the text protocol); see the module doc."""
    start = text.find(OPEN)
    if start == -1:
        return TextReply(text)
    kept, blocks = _blocks(text, start)
    calls: list[ToolCall] = []
    errors: dict[str, str] = {}
    for block in blocks:
        try:
            calls.extend(parse_block(block, new_id))
        except ToolCallParseError as exc:
            call = ToolCall(new_id(), MALFORMED_CALL, {}, raw_arguments=block.strip())
            calls.append(call)
            errors[call.id] = str(exc)
    parts = [stripped for part in kept if (stripped := part.strip())]
    content = parts[0] if len(parts) == 1 else "\n".join(parts)
    return TextReply(content, tuple(calls), errors or _NO_ERRORS)


# -- recovery (native format) --------------------------------------------------------------


def could_be_call(text: str) -> bool:
    """Whether a reply might be a leaked call: a look at its first and last characters."""
    text = text.strip()
    return bool(text) and text[0] in _STARTS and text[-1] in _ENDS


def recover_tool_calls(text: str, names: Container[str],
                       new_id: Callable[[], str] = new_call_id
                       ) -> tuple[tuple[ToolCall, ...], str] | None:
    """The calls of a reply whose whole text is a call of an offered tool, and the form it
    took (``"tool_call_tags"``, ``"json"``, ``"fenced_json"``); ``None``: it is text."""
    text = text.strip()
    if not text or text[0] not in _STARTS or text[-1] not in _ENDS:
        return None
    try:
        if text[0] == "<":
            if not text.startswith(OPEN):
                return None
            reply = parse_text_calls(text, new_id)
            if reply.errors or reply.content:
                return None
            calls, form = list(reply.calls), "tool_call_tags"
        elif text[0] == "`":
            inner = _strip_fence(text)
            if inner is text or "```" in inner or inner[:1] not in ("{", "["):
                return None
            calls, form = parse_block(inner, new_id, strict=True), "fenced_json"
        else:
            calls, form = parse_block(text, new_id, strict=True), "json"
    except ToolCallParseError:
        return None
    if not calls or any(call.name not in names for call in calls):
        return None
    return tuple(calls), form
