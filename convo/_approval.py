"""Approval of tool calls by a person (API.md §10): the decision, and how a rejection reads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs

REJECTED: Final = "Rejected by the user"
REJECTED_BY_STAFF: Final = "Rejected by staff"
DECIDERS: Final = ("user", "staff")


@attrs.frozen(slots=True)
class Approval:
    """A person's decision on one tool call; ``reason`` is passed on to the model. ``by``
    says who decided: ``"user"`` (the person in the conversation), or ``"staff"`` (an
    operator of a served conversation, API.md §19), whose rejection says so."""

    approved: bool
    reason: str | None = None
    by: str = attrs.field(default="user", kw_only=True, validator=attrs.validators.in_(DECIDERS))

    @classmethod
    def of(cls, value: Approval | bool) -> Approval:
        """A user interface may answer ``True``/``False`` or an ``Approval``."""
        if isinstance(value, Approval):
            return value
        if isinstance(value, bool):
            return cls(value)
        raise TypeError(f"approve() must return an Approval or a bool, got {value!r}")

    @property
    def rejection(self) -> str:
        """The tool message of a rejected call."""
        said = REJECTED_BY_STAFF if self.by == "staff" else REJECTED
        return f"{said}: {self.reason}" if self.reason else said

    def to_dict(self) -> dict[str, Any]:
        # "by" only when staff decided: a user's decision reads as it did before it existed
        return {"approved": self.approved, "reason": self.reason,
                **({"by": self.by} if self.by != "user" else {})}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Approval:
        return cls(bool(d["approved"]), d.get("reason"), by=d.get("by") or "user")
