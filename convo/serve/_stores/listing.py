"""The conversation list (API.md §19): what one row of it holds, the query, and the cursor.

A list is read from the conversation rows alone — ``owner``, ``title`` and ``updated_at`` are
columns of the row (schema version 5), so listing never loads a message. ``updated_at`` is the
time of the last message added (or of the creation), in whole microseconds since the epoch,
UTC; the list is newest first, ties ordered by id (also descending), and a cursor carries both,
so a walk page by page never skips or repeats a conversation.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import attrs

from ..._messages import Message

TITLE_CHARS: Final = 80
DEFAULT_LIMIT: Final = 50
MAX_LIMIT: Final = 200
WAITING_KINDS: Final = ("approval", "operator")
EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


def now_us() -> int:
    """The time now, in microseconds since the epoch (a store's default clock)."""
    return time.time_ns() // 1000


def iso(us: int) -> str:
    """``us`` microseconds since the epoch as ISO 8601 UTC (``2026-11-25T03:22:54.123456Z``)."""
    return (EPOCH + timedelta(microseconds=us)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def as_datetime(us: int) -> datetime:
    return EPOCH + timedelta(microseconds=us)


def micros(moment: datetime) -> int:
    """A datetime (aware) in microseconds since the epoch, exactly."""
    delta = moment - EPOCH
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


# The times a cursor may name: those a datetime holds (years 1 to 9999), in microseconds.
FIRST_US: Final = micros(datetime.min.replace(tzinfo=UTC))
LAST_US: Final = micros(datetime.max.replace(tzinfo=UTC))


def parse_iso(text: str, what: str) -> int:
    """An ISO 8601 time (UTC when it names no zone) in microseconds; ``ValueError`` naming
    ``what`` otherwise."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ValueError(f"{what} must be an ISO 8601 time such as 2026-11-25T03:00:00Z, "
                         f"got {text!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return micros(moment)


def title_of(messages: Iterable[tuple[int, Message]]) -> str | None:
    """The title a conversation takes from these messages: the first user message's text,
    cut at 80 characters (``None`` if none is a user message)."""
    for _, message in messages:
        if message.role == "user":
            return message.text[:TITLE_CHARS]
    return None


def text_of_record(record: Any) -> str:
    """The text of a stored message's JSON (its parts' text joined; binaries left out)."""
    content = record.get("content") if isinstance(record, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content
                       if isinstance(p, dict) and p.get("type") == "text")
    return ""


@attrs.frozen(slots=True)
class Summary:
    """One conversation as a list shows it."""

    id: str
    title: str | None
    status: str
    waiting_for: dict[str, Any] | None
    updated: int  # microseconds since the epoch
    owner: str
    parent: dict[str, Any] | None = None  # a branch's ``{"id", "before"}``

    def to_dict(self, *, with_user: bool) -> dict[str, Any]:
        item = {"id": self.id, "title": self.title, "status": self.status,
                "waiting_for": self.waiting_for, "updated_at": iso(self.updated),
                "parent": self.parent}
        if with_user:
            item["user"] = self.owner
        return item

    @property
    def key(self) -> tuple[int, str]:
        return (self.updated, self.id)


@attrs.frozen(slots=True, kw_only=True)
class Query:
    """Which conversations to list: ``owner`` (``None``: everybody's), a page of ``limit``
    after the cursor ``before``, optionally only those of one ``status`` or waiting for one
    kind of thing (``waiting_for``: ``approval`` or ``operator``)."""

    owner: str | None
    limit: int = DEFAULT_LIMIT
    before: tuple[int, str] | None = None
    status: str | None = None
    waiting_for: str | None = None

    def admits(self, row: Summary) -> bool:
        """Whether ``row`` is on this list (the memory store's filter)."""
        waiting = row.waiting_for.get("type") if isinstance(row.waiting_for, dict) else None
        return (self.owner is None or row.owner == self.owner) \
            and (self.before is None or row.key < self.before) \
            and (self.status is None or row.status == self.status) \
            and (self.waiting_for is None or waiting == self.waiting_for)


def newest(rows: Iterable[Summary], query: Query) -> list[Summary]:
    """The page ``query`` asks for, from all the rows (the memory store): ``limit + 1`` of
    them at most, so the caller knows whether there is a next page."""
    chosen = sorted((r for r in rows if query.admits(r)), key=lambda r: r.key, reverse=True)
    return chosen[:query.limit + 1]


def cursor(row: Summary) -> str:
    """The opaque cursor of the page after ``row``."""
    raw = json.dumps([row.updated, row.id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def read_cursor(text: str) -> tuple[int, str]:
    """The position a cursor names; ``ValueError`` when it is not one this server gave. A
    forged one never reaches a store: its time must be one a datetime holds (which fits 64
    bits, as SQLite and Postgres take it) and its id text every store takes (no NUL, no lone
    surrogate)."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        updated, conversation_id = json.loads(raw)
        if type(updated) is int and FIRST_US <= updated <= LAST_US \
                and isinstance(conversation_id, str) and "\0" not in conversation_id:
            conversation_id.encode()  # UnicodeEncodeError (a ValueError) for a surrogate
            return updated, conversation_id
    except (ValueError, binascii.Error, TypeError, RecursionError):
        pass
    raise ValueError(f'"before" must be a cursor from a list\'s "next", got {text!r}')


def page(rows: list[Summary], query: Query, *, with_user: bool) -> dict[str, Any]:
    """The list's JSON body from the rows a store gave for ``query`` (``limit + 1`` at most)."""
    shown = rows[:query.limit]
    more = len(rows) > query.limit
    return {"conversations": [r.to_dict(with_user=with_user) for r in shown],
            "next": cursor(shown[-1]) if more and shown else None}
