"""Approval of tool calls by a person (API.md §10): the decision, and how a rejection reads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs

REJECTED: Final = "Rejected by the user"


@attrs.frozen(slots=True)
class Approval:
    """A person's decision on one tool call; ``reason`` is passed on to the model."""

    approved: bool
    reason: str | None = None

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
        return f"{REJECTED}: {self.reason}" if self.reason else REJECTED

    def to_dict(self) -> dict[str, Any]:
        return {"approved": self.approved, "reason": self.reason}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Approval:
        return cls(bool(d["approved"]), d.get("reason"))
