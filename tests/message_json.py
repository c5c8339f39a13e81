"""Served messages as JSON, for tests that compare what they say: every stored message has an
`id` (API.md §24 Details), checked here and then set aside; and a served SSE stream read as
its events (``sse_events``, ``streamed``)."""

from __future__ import annotations

import json
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


def sse_events(raw: bytes) -> list[tuple[str, Any]]:
    """Every event of an SSE body, its data parsed."""
    events = []
    for frame in raw.decode().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in frame.splitlines() if ": " in line)
        if "event" in lines:
            events.append((lines["event"], json.loads(lines["data"])))
    return events


def streamed(client: Any, content: str) -> list[tuple[str, Any]]:
    """The events of ``content`` said, with an SSE stream asked for, in a new conversation of
    ``client`` (a test client of a served app)."""
    cid = client.post("/api/conversations", json={}).json()["id"]
    with client.stream("POST", f"/api/conversations/{cid}/messages", json={"content": content},
                       headers={"Accept": "text/event-stream"}) as stream:
        return sse_events(stream.read())
