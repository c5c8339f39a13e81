"""Idempotency records: what a first answer added, kept by reference (API.md §20).

A record holds the answer's status, the range of messages it showed as ``added`` (and how many
the conversation had then) and its small fields (status, state, outcome, what it waits for,
the error) — never the messages themselves, so the records of a long conversation grow with
the number of keys, not with their square. A repeat rebuilds the same body from the stored
messages, which are append-only. Records written before schema version 3 hold the whole body
(``{"status", "body"}``) and are answered as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from ..._messages import Message
from ...guards._marks import public

_ORDER: Final = ("error", "id", "status", "messages", "state", "outcome", "waiting_for", "parent",
                  "queued", "added")


def reference(code: int, body: dict[str, Any]) -> dict[str, Any]:
    """The record of an answer: ``body`` without its messages, which it names by index."""
    end = len(body.get("messages", ()))
    start = end - len(body.get("added", ()))
    fields = {k: v for k, v in body.items() if k not in ("messages", "added")}
    return {"status": code, "messages": [start, end], "fields": fields}


def needs_messages(record: dict[str, Any]) -> bool:
    return "body" not in record


def answer(record: dict[str, Any], messages: Sequence[Message]) -> tuple[int, dict[str, Any]]:
    """The status and body the first request answered, from its record and the stored
    messages."""
    if "body" in record:  # a record of a convo before schema version 3
        return int(record["status"]), dict(record["body"])
    start, end = record["messages"]
    shown = [public(m) for m in messages[:end]]
    values = {**record["fields"], "messages": shown, "added": shown[start:end]}
    body = {k: values[k] for k in _ORDER if k in values}
    body.update((k, v) for k, v in values.items() if k not in body)
    return int(record["status"]), body
