"""``HandoffTool``: the model hands the conversation to a person (API.md §19).

The tool itself only says so (``HandingOff``, the call's tool message); the turn that ran it
then asks ``HandOff`` (``convo._requests``) until the person hands the conversation back: the
user interface answers it (the terminal: the person at it, as the operator; a
``ScriptedInterface``: its ``operator`` lines), a served conversation waits for operators
(docs/serving.md), a replay answers it from the saved messages.
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from ._base import Tool, ToolArgument

HANDOFFS: Final = "handoffs"
"""The ``Session.internal`` record of the handoffs handed back: ``{call id: messages said}``
(a replay tells from it a handoff that ended from one that still goes on)."""


@attrs.frozen(slots=True)
class HandingOff:
    """What a ``handoff`` call returns: its tool message, and the reason given."""

    reason: str | None = None

    @property
    def text(self) -> str:
        said = f": {self.reason}" if self.reason else ""
        return f"The conversation was handed to a person{said}."


class HandoffTool(Tool):
    """``handoff``: hand the conversation to a person (staff), optionally saying why.

    After its batch the turn waits for the person; when they hand back, the turn ends and the
    bot waits for the user's next message, with everything said meanwhile in its history."""

    rerun_on_resume = True  # pure: a resumed run calls it again for its effect on the turn
    inline = True
    name = "handoff"
    description = ("Hand the conversation to a person (a member of staff) when you cannot "
                   "help the user further, or when they ask for a person.")
    arguments = {  # noqa: RUF012
        "reason": ToolArgument("reason", "Why a person should take over (shown to staff)",
                               str, required=False),
    }

    def _execute(self, args: dict[str, Any]) -> HandingOff:
        return HandingOff(args.get("reason"))


def handed_back(internal: dict[str, Any], call_id: str) -> int | None:
    """How many messages the handoff of ``call_id`` had when it was handed back, or ``None``
    when it was not (it still goes on)."""
    record = internal.get(HANDOFFS)
    said = record.get(call_id) if isinstance(record, dict) else None
    return said if isinstance(said, int) and not isinstance(said, bool) and said >= 0 else None
