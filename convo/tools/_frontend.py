"""Tools a front end offers for one conversation (AG-UI's frontend tools, API.md §24): the
model may call them beside the bot's own; the client runs them and sends the result back.

The tools offered are kept in the conversation's ``Session.internal`` (``FRONTEND_TOOLS``, a
list of ``{"name", "description", "parameters"}``), so that they are stored with it and a
rebuild offers the same; an agent turn (``ToolingTemplate``) adds them to its own at its
start. A served conversation waits at the ``RunTools`` of such a call until the client's
result comes (``convo.serve``); run anywhere else, such a call is an error result.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .._errors import ToolArgumentError
from ._base import Tool

#: Where a conversation keeps the tools its front end offers (``Session.internal``).
FRONTEND_TOOLS: Final = "frontend_tools"


class FrontendTool(Tool):
    """A tool its front end runs: the model sees its schema; nothing runs it here."""

    def __init__(self, name: str, description: str, parameters: Mapping[str, Any]) -> None:
        super().__init__()
        self.name = name
        self.description = description
        self.parameters = {**parameters, "type": "object"}
        self.parameters.setdefault("properties", {})

    def schema(self) -> dict[str, Any]:
        return {"type": "function", "function": {
            "name": self.name, "description": self.description, "parameters": self.parameters}}

    def signature_text(self) -> str:
        return ", ".join(self.parameters.get("properties") or ()) or "no arguments"

    def validate(self, args: Mapping[str, Any]) -> dict[str, Any]:
        if not isinstance(args, Mapping):
            raise ToolArgumentError(f"the arguments for {self.name!r} must be a JSON object, "
                                    f"got {args!r}")
        return dict(args)

    def _execute(self, args: dict[str, Any]) -> Any:
        raise ToolArgumentError(f"{self.name!r} is run by the front end that offered it, "
                                "and none is connected")

    def __repr__(self) -> str:
        return f"<FrontendTool {self.name!r}>"


def offered(internal: Mapping[str, Any]) -> list[FrontendTool]:
    """The tools a conversation's front end offers (none when it offers none, or the record is
    not a list of tools)."""
    found = internal.get(FRONTEND_TOOLS)
    if not isinstance(found, list):
        return []
    return [FrontendTool(t["name"], str(t.get("description", "")), t.get("parameters") or {})
            for t in found if isinstance(t, dict) and isinstance(t.get("name"), str)
            and isinstance(t.get("parameters") or {}, dict)]
