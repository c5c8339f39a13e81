"""Feedback on replies (API.md §19): a rating (1 or -1) and an optional comment on one
assistant message, by the conversation's owner; a second rating of a message replaces the
first. Stored in a ``feedback`` table (schema version 5) keyed by conversation and message
index; read back by operators (``GET /api/feedback``) and by ``convo feedback export``."""

from __future__ import annotations

from typing import Any

import attrs

from .listing import iso

MAX_COMMENT_CHARS = 4000


@attrs.frozen(slots=True)
class Feedback:
    """One rating as read back, with the text of the message it rates."""

    conversation: str
    message_index: int
    message: str
    rating: int
    comment: str | None
    user: str
    time: int  # microseconds since the epoch

    def to_dict(self) -> dict[str, Any]:
        return {"conversation": self.conversation, "message_index": self.message_index,
                "message": self.message, "rating": self.rating, "comment": self.comment,
                "user": self.user, "time": iso(self.time)}


@attrs.frozen(slots=True)
class Rating:
    """A user's rating of one message as their page shows it (``"feedback"`` of a
    conversation's view)."""

    rating: int
    comment: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"rating": self.rating, "comment": self.comment}


def view_of(ratings: dict[int, Rating]) -> dict[str, dict[str, Any]]:
    """The ``"feedback"`` field of a conversation's view: ratings by message index (as JSON
    object keys are strings)."""
    return {str(index): rating.to_dict() for index, rating in sorted(ratings.items())}


def checked(body: dict[str, Any]) -> tuple[int, int, str | None]:
    """The message index, rating and comment of a feedback body; ``ValueError`` saying what
    was expected otherwise."""
    index, rating, comment = body.get("message"), body.get("rating"), body.get("comment")
    if type(index) is not int or index < 0:
        raise ValueError('"message" must be the 0-based index of an assistant message in '
                         f'"messages", got {index!r}')
    if type(rating) is not int or rating not in (1, -1):
        raise ValueError(f'"rating" must be 1 or -1, got {rating!r}')
    if comment is not None and not isinstance(comment, str):
        raise ValueError(f'"comment" must be a string, got {type(comment).__name__}')
    if comment is not None and len(comment) > MAX_COMMENT_CHARS:
        raise ValueError(f'"comment" may hold at most {MAX_COMMENT_CHARS} characters, got '
                         f"{len(comment)}")
    unknown = sorted(set(body) - {"message", "rating", "comment"})
    if unknown:
        raise ValueError(f"unknown fields {', '.join(map(repr, unknown))}: a feedback body "
                         'is {"message": INDEX, "rating": 1|-1, "comment"?: "..."}')
    return index, rating, comment
