"""EndTemplate: ends the whole conversation, with its own farewell."""

from __future__ import annotations

import attrs

from .._errors import ReachedEndTemplateException
from .._messages import Message
from .._requests import Flow
from .._session import Session
from ._base import Template


@attrs.define(slots=True, eq=False)
class EndTemplate(Template):
    """Appends the farewell (if any) as one assistant message, then ends the conversation."""

    farewell_message: str | None = None

    def render(self, session: Session) -> Flow:
        if self.farewell_message:
            yield Message("assistant", self.farewell_message)
        raise ReachedEndTemplateException(self.farewell_message)
