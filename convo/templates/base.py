"""The Template base class. Tree walks and build-time checks live in ``tree.py``."""

from __future__ import annotations

import attrs

from ..requests import Flow
from ..session import Session


@attrs.define(slots=True, eq=False)
class Template:
    """A building block of a conversation.

    ``render(session)`` returns a generator that yields messages, events and requests (see
    ``convo.requests``) and returns the session. Templates hold no per-run state, so one
    instance may appear in many trees and many runs at once.
    """

    template_id: str | None = attrs.field(default=None, kw_only=True)

    def render(self, session: Session) -> Flow:
        raise NotImplementedError(f"{type(self).__name__} must implement render()")

    def children(self) -> tuple[Template, ...]:
        """The templates this one renders (for validation and tree walks)."""
        return ()

    def label(self) -> str:
        name = type(self).__name__
        return f"{name}(template_id={self.template_id!r})" if self.template_id else name

