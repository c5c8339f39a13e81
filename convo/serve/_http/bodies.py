"""Request bodies: read, parsed and checked before anything is stored (API.md §20).

A body is a JSON object of at most a few hundred kB. Everything a store cannot keep, or would
keep as something else, is refused with 400 and the place it was found (``$.state.a[2]``):
NaN and infinite numbers (JSON has neither), lone surrogates (not UTF-8), NUL characters
(Postgres refuses them) and nesting deeper than ``MAX_DEPTH``.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Final, NoReturn

from starlette.requests import Request

from ..._parts import (
    Content,
    PartError,
    Text,
    binaries,
    content_to_json,
    human_size,
    normalize,
    part_from_dict,
    text_of,
)

MAX_DEPTH: Final = 64
DEFAULT_MAX_ATTACHMENT_BYTES: Final = 10 * 1024 * 1024
MAX_ATTACHMENTS: Final = 8
"""Images, sounds and files in one message at most (the body limit grows to fit them)."""
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


class HTTPProblem(Exception):
    """An error answered as JSON ``{"error": ...}`` with an HTTP status (the HTTP layer's own:
    the engine refuses with ``convo.serve._problems``)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class _Constant:
    """``NaN``, ``Infinity`` or ``-Infinity`` as parsed, so the check can say where it was."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


async def read_object(request: Request, limit: int) -> dict[str, Any]:
    """The JSON object in the body, checked; 413 past ``limit`` bytes (before parsing), 400 if
    it is not a JSON object or holds what no store keeps.

    A body over ``limit`` is refused unread when its ``Content-Length`` says so, else as soon
    as the bytes streamed in pass it (chunked). Reading and checking cost time in proportion
    to the body's size: chunks are joined once (adding each to the bytes so far copied them
    all again per chunk: 15 s of CPU for 100 MB), and the checks of long strings run in C."""
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > limit:
        raise HTTPProblem(413, f"the request body is over {limit} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise HTTPProblem(413, f"the request body is over {limit} bytes")
        chunks.append(chunk)
    body = b"".join(chunks)
    if not body.strip():
        return {}
    try:
        value = json.loads(body, parse_constant=_Constant)
    except RecursionError:
        raise HTTPProblem(400, f"the body is JSON nested deeper than {MAX_DEPTH} levels "
                               "(at $)") from None
    except ValueError as exc:
        raise HTTPProblem(400, f"the body must be a JSON object: {exc}") from exc
    if not isinstance(value, dict):
        raise HTTPProblem(400, f"the body must be a JSON object, got {type(value).__name__}")
    check_json(value)
    return value


def check_json(value: Any) -> None:
    """400 naming the first place in ``value`` that a store cannot keep as it is."""
    stack: list[tuple[Any, str, int]] = [(value, "$", 0)]
    while stack:
        item, where, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= MAX_DEPTH:
                raise HTTPProblem(400, f"the body is JSON nested deeper than {MAX_DEPTH} levels "
                                       f"(at {where})")
            if isinstance(item, dict):
                for key, inner in item.items():
                    if "\x00" in key or (not key.isascii() and _has_surrogate(key)):
                        _refuse_text(key, f"{where} (a key)")
                    stack.append((inner, f"{where}.{key}", depth + 1))
            else:
                stack.extend((inner, f"{where}[{i}]", depth + 1) for i, inner in enumerate(item))
        elif isinstance(item, str):
            # (checked here, not in a function of its own: a body holds many strings)
            if "\x00" in item or (not item.isascii() and _has_surrogate(item)):
                _refuse_text(item, where)
        elif isinstance(item, _Constant):
            raise HTTPProblem(400, f"{item.name} is not a JSON number: send a finite number "
                                   f"or null (at {where})")
        elif isinstance(item, float) and not math.isfinite(item):
            raise HTTPProblem(400, f"a number too large for a 64-bit float (at {where})")


def _refuse_text(text: str, where: str) -> NoReturn:
    """The 400 for a string with a NUL character or a lone surrogate in it."""
    if "\x00" in text:
        raise HTTPProblem(400, f"a NUL character (\\u0000) in a string: remove it (at {where})")
    raise HTTPProblem(400, "a lone UTF-16 surrogate (\\ud800-\\udfff without its pair) in "
                           f"a string: it is not text (at {where})")


def _has_surrogate(text: str) -> bool:
    # UTF-8 cannot encode a surrogate code point: the encoder finds one at C speed.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.search(text) is not None
    return False


WHILE_BUSY: Final = ("reject", "queue", "interrupt", "steer")  # (the engine's, API.md §26)


def while_busy(body: dict[str, Any], default: str, where: str = "while_busy") -> str:
    """What a message asks to happen if a turn runs (``"while_busy"``, API.md §26); 400 for
    anything but the four names, whether or not a turn runs (``where``: the field's name in
    the error, AG-UI's ``forwardedProps.while_busy``)."""
    mode = body.get("while_busy", default)
    if mode not in WHILE_BUSY:
        raise HTTPProblem(400, f'"{where}" must be one of "reject", "queue", "interrupt", '
                               f'"steer", got {json.dumps(mode)[:80]}')
    return str(mode)


def content_of(body: dict[str, Any], max_bytes: int,
               max_attachment_bytes: int = DEFAULT_MAX_ATTACHMENT_BYTES) -> Content:
    """The message of a ``{"content": ...}`` body: a string with some text, or a list of
    parts (API.md §16). 400 for anything else or a malformed part (named); 413 when its text
    is over ``max_bytes`` UTF-8 bytes or a part's data over ``max_attachment_bytes``."""
    content = body.get("content")
    if isinstance(content, list):
        return _parts_of(content, max_bytes, max_attachment_bytes)
    if not isinstance(content, str):
        # (or a list of parts: docs/parts.md; the common case is what the message shows)
        raise HTTPProblem(400, '"content" must be a string: send {"content": "your message"}')
    if not content.strip():
        raise HTTPProblem(400, '"content" is empty or only whitespace: send some text')
    if len(content) > max_bytes or len(content.encode("utf-8")) > max_bytes:
        raise HTTPProblem(413, f'"content" is over {max_bytes} bytes')
    return content


def content_digest_source(content: Content) -> bytes:
    """What a message's idempotency digest is taken over: its text, or its parts' JSON."""
    if isinstance(content, str):
        return content.encode("utf-8")
    return json.dumps(content_to_json(content), sort_keys=True).encode("utf-8")


def _parts_of(items: list[Any], max_bytes: int, max_attachment_bytes: int) -> Content:
    parts = []
    for position, item in enumerate(items):
        if not isinstance(item, dict):
            raise HTTPProblem(400, f"content part {position + 1} must be an object such as "
                                   f'{{"type": "text", "text": "..."}}; got '
                                   f"{type(item).__name__}")
        try:
            part = part_from_dict(item, position)
        except PartError as exc:
            raise HTTPProblem(400, str(exc)) from None
        size = 0 if isinstance(part, Text) else part.size
        if size > max_attachment_bytes:
            raise HTTPProblem(413, f"content part {position + 1} ({part.type}) is "
                                   f"{human_size(size)} ({size} bytes), over the limit of "
                                   f"{max_attachment_bytes} bytes per attachment "
                                   "(--max-attachment-bytes)")
        parts.append(part)
    content = normalize(parts)
    if len(binaries(content)) > MAX_ATTACHMENTS:
        raise HTTPProblem(400, f"a message carries at most {MAX_ATTACHMENTS} images, sounds or "
                               f"files; got {len(binaries(content))}")
    text = text_of(content)
    if not text.strip() and not binaries(content):
        raise HTTPProblem(400, '"content" has no text and no attachment: send some text')
    if len(text.encode("utf-8")) > max_bytes:
        raise HTTPProblem(413, f'the text of "content" is over {max_bytes} bytes')
    return content
