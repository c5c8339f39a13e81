"""Each distinct image, sound or file once in a store, by its SHA-256 (API.md §16).

A message's row holds its JSON with each inline binary part's ``data`` replaced by its
``sha256``; the bytes go in the ``attachments`` table (one row per digest, however often it
is sent), and ``message_attachments`` notes which conversations use which digests, so that a
deleted conversation's attachments go too when no other conversation uses them. Rows of
earlier versions, with the data inline, are read as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..._messages import Message
from ..._parts import Text, part_from_dict
from .base import dumps


def message_row(message: Message) -> tuple[str, list[tuple[str, bytes]]]:
    """The message's JSON as a store keeps it, and the binaries ``(digest, bytes)`` it uses."""
    d = message.to_dict()
    content = message.content
    if isinstance(content, str):
        return dumps(d), []
    d["content"] = [p.to_dict() if isinstance(p, Text) else p.to_dict(inline=False)
                    for p in content]
    blobs = [(p.digest, p.data) for p in content
             if not isinstance(p, Text) and p.data is not None and p.digest is not None]
    return dumps(d), blobs


def read_message(d: Mapping[str, Any], blobs: Mapping[str, bytes]) -> Message:
    """A message from its row, its referenced binaries taken from ``blobs``."""
    content = d.get("content")
    if not isinstance(content, list) or not blobs:
        return Message.from_dict(d)
    parts = [part_from_dict(p, i, blobs) for i, p in enumerate(content)]
    return Message.from_dict({**d, "content": parts})
