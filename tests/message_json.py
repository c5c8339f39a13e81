"""Served messages as JSON, for tests that compare what they say: every stored message has an
`id` (API.md §24 Details), checked here and then set aside."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

#: A stored message's id as the server gives it (``convo.serve._live.new_message_id``).
SERVER_ID = re.compile(r"msg_[0-9a-f]{32}")


def unnumbered(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` without their ids, after checking each has its own."""
    ids = [m.get("id") for m in messages]
    assert all(isinstance(i, str) and i for i in ids), f"a stored message without an id: {ids}"
    assert len(set(ids)) == len(ids), f"two stored messages share an id: {ids}"
    return [{k: v for k, v in m.items() if k != "id"} for m in messages]


def unnumbered_text(text: str) -> str:
    """JSON text (an SSE stream, a body) with the server's message ids taken out."""
    return re.sub(r', "id": "msg_[0-9a-f]{32}"', "", text)
