"""``resume(template, saved)``: the lower-level way to continue a saved conversation.

``Runner.resume(saved)`` is the way to use (docs/runner.md); this function stays for code
written before it: it returns a template and a session to run with a ``Runner``, which replays
``saved`` (``convo._run.replay``) and then goes on live.
"""

from __future__ import annotations

import attrs

from ._requests import Flow
from ._session import Session
from .templates._base import Template


@attrs.define(slots=True, eq=False)
class Resume(Template):
    """``template``, to be run continuing ``saved`` (a ``Runner`` replays it first)."""

    template: Template
    saved: Session

    def children(self) -> tuple[Template, ...]:
        return (self.template,)

    def render(self, session: Session) -> Flow:
        raise TypeError("a Resume is run by a Runner (Runner(model, resumed_template)), not "
                        "rendered inside another template; use Runner.resume(saved)")


def resume(template: Template, saved: Session) -> tuple[Template, Session]:
    """The template and session that continue ``saved``.

    The new session starts with ``saved``'s state, approvals and internal records and no
    messages; the run rebuilds the saved messages (and turns) as it replays them.
    """
    session = Session(state=dict(saved.state), approvals=dict(saved.approvals),
                      internal=dict(saved.internal))
    return Resume(template, saved), session
