"""The termination family: the tools a model calls to end its turn, or the whole conversation
(what they return: a ``TerminateResponse``, a value of ``convo.tools._base``, or an
``EndConversation``, a value of ``convo.tools._endings``).

See docs/termination.md for which tool or setting ends what, with which status.
"""

from __future__ import annotations

import json
from typing import Any, Final, Literal

from .._errors import ReachedEndTemplateException
from .._reply import TERMINATED_KEY
from .._session import RunStatus
from ._base import TerminateResponse, Tool, ToolArgument
from ._context import ToolContext
from ._endings import EndConversation

_STATUS_TEXT: Final = {
    "done": "Task objective achieved",
    "partial": "Partial progress made",
    "blocked": "Task blocked - cannot proceed",
}

TERMINATED: Final = TERMINATED_KEY
"""The metadata key of a tool message whose tool ended the turn (``TerminateResponse.saved``;
``Message.terminated`` reads it)."""


class FinishTool(Tool):
    """``finish``: the standard way to end a turn, above all when output is restricted."""

    rerun_on_resume = True  # pure: a resumed run calls it again for its effect on the turn
    name = "finish"
    description = ("Signal the current task is complete. "
                   "Call this before ending when output is restricted.")
    arguments = {  # noqa: RUF012
        "note": ToolArgument("note", "Note about task completion", str, required=False),
    }

    def _execute(self, args: dict[str, Any]) -> TerminateResponse:
        note = args.get("note")
        return TerminateResponse(note, note=note)


class EndConversationTool(Tool):
    """``end_conversation``: ends the whole conversation with a farewell."""

    rerun_on_resume = True  # pure: a resumed run calls it again for its effect on the turn
    name = "end_conversation"
    description = ("End the current conversation. Use it when the user wants to stop; "
                   "`message` is your farewell to them.")
    arguments = {  # noqa: RUF012
        "message": ToolArgument("message", "Optional farewell message", str, required=False),
    }

    def _execute(self, args: dict[str, Any]) -> EndConversation:
        # The turn reads this value (the run never raises for it); ``execute`` raises.
        return EndConversation(args.get("message") or "Conversation ended.", self.name)

    def execute(self, context: ToolContext | None = None, /, **kwargs: Any) -> Any:
        """Raises ``ReachedEndTemplateException`` with the farewell (API.md §3)."""
        raise ReachedEndTemplateException(super().execute(context, **kwargs).farewell)


class FinishResponseTool(Tool):
    """``finish_response``: ends a turn in mode ``"response"`` with status ``completed``."""

    rerun_on_resume = True  # pure: a resumed run calls it again for its effect on the turn
    name = "finish_response"
    description = ("Signal that your response to the user is complete and you have no more "
                   "actions to take. Call it when you are done responding.")
    arguments = {  # noqa: RUF012
        "summary": ToolArgument("summary", "Optional brief summary of the response", str,
                                required=False),
    }
    finish_mode = "response"

    def _execute(self, args: dict[str, Any]) -> TerminateResponse:
        summary = args.get("summary")
        text = f"Response complete. Summary: {summary}" if summary else "Response complete."
        return TerminateResponse(text, summary=summary)


class FinishTaskTool(Tool):
    """``finish_task``: ends a turn in mode ``"task"`` with status ``pending_review``.

    The model may pass ``{summary?, status?}`` or a bare string (the summary). ``status`` is
    ``done`` (default), ``partial`` or ``blocked``. ``task_completed`` is a deprecated alias.
    """

    rerun_on_resume = True  # pure: a resumed run calls it again for its effect on the turn
    name = "finish_task"
    description = ("Signal that you believe the task objective is achieved; a human will "
                   "review it. `status` is done, partial or blocked.")
    arguments = {  # noqa: RUF012
        "summary": ToolArgument("summary", "What was accomplished", str, required=False),
        "status": ToolArgument("status", "done, partial or blocked (default done)",
                               Literal["done", "partial", "blocked"], required=False),
    }
    aliases = ("task_completed",)
    finish_mode = "task"

    def parse_raw(self, raw: str) -> dict[str, Any]:
        text = raw.strip()
        if text.startswith("{"):
            try:
                value = json.loads(text)
            except ValueError:
                return {"summary": raw}
            if isinstance(value, dict):
                return value
        elif text.startswith('"'):
            try:
                value = json.loads(text)
            except ValueError:
                value = None
            if isinstance(value, str):
                return {"summary": value} if value else {}
        return {"summary": raw} if text else {}

    def _execute(self, args: dict[str, Any]) -> TerminateResponse:
        summary = args.get("summary")
        status = args.get("status") or "done"
        head = f"{_STATUS_TEXT[status]}. Marked for human review."
        text = f"{head} Summary: {summary}" if summary else head
        return TerminateResponse(
            f"{text} [FINISH_STATUS:{status}]",
            status=RunStatus.PENDING_REVIEW, summary=summary, finish_status=status,
        )
