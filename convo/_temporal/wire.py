"""What crosses between a conversation's workflow and its activities, as JSON (the payloads of
temporalio's default converter): a store ``Change`` (each message once, and the queued ones it
takes), a ``Stored`` row (at a continue-as-new, with its queue), a queued message, and the
answers of the activities (a reply, tool runs, the state after).

Tool runs are pickled: their values and exceptions are whatever the tools returned or raised,
and the template renders them as it would in one process (the worker's own payloads only). In
the workflow sandbox they are unpickled as the sandbox's classes (``_Unpickler``).
"""

from __future__ import annotations

import base64
import importlib
import io
import pickle
from typing import Any

from .._messages import Message
from .._session import SubroutineRun
from ..serve._stores.base import Change, Queued, Stored
from ..tools._calls import ToolRun


def change_json(change: Change) -> dict[str, Any]:
    return {"messages": [[i, m.to_dict()] for i, m in change.messages],
            "subroutines": [[i, s.to_dict()] for i, s in change.subroutines],
            "state": change.state, "internal": change.internal, "approvals": change.approvals,
            "status": change.status, "waiting_for": change.waiting_for,
            "outcome": change.outcome, "dequeued": list(change.dequeued)}


def change_from(data: dict[str, Any]) -> Change:
    return Change(
        messages=tuple((i, Message.from_dict(m)) for i, m in data["messages"]),
        subroutines=tuple((i, SubroutineRun.from_dict(s)) for i, s in data["subroutines"]),
        state=data["state"], internal=data["internal"], approvals=data["approvals"],
        status=data["status"], waiting_for=data["waiting_for"], outcome=data["outcome"],
        dequeued=tuple(data.get("dequeued") or ()))


def stored_json(stored: Stored) -> dict[str, Any]:
    return {"id": stored.id, "state": stored.state, "status": stored.status,
            "internal": stored.internal, "waiting_for": stored.waiting_for,
            "outcome": stored.outcome, "approvals": stored.approvals,
            "messages": [m.to_dict() for m in stored.messages],
            "subroutines": [s.to_dict() for s in stored.subroutines],
            "owner": stored.owner, "parent": stored.parent,
            "queued": [queued_json(q) for q in stored.queued]}


def stored_from(data: dict[str, Any]) -> Stored:
    messages = [Message.from_dict(m) for m in data["messages"]]
    return Stored(data["id"], data["state"], data["status"], internal=data["internal"],
                  waiting_for=data["waiting_for"], outcome=data["outcome"],
                  approvals=data["approvals"], messages=messages, length=len(messages),
                  subroutines=[SubroutineRun.from_dict(s) for s in data["subroutines"]],
                  owner=data["owner"], parent=data["parent"],
                  queued=[queued_from(q) for q in data.get("queued") or ()])


def queued_json(queued: Queued) -> dict[str, Any]:
    return {"message": queued.message.to_dict(), "steer": queued.steer}


def queued_from(data: dict[str, Any]) -> Queued:
    return Queued(Message.from_dict(data["message"]), bool(data["steer"]))


def runs_json(runs: list[ToolRun]) -> str:
    return base64.b64encode(pickle.dumps(runs)).decode("ascii")


class _Unpickler(pickle.Unpickler):
    """Finds a pickled class through ``sys.modules`` as Python code sees it: in the workflow
    sandbox, the sandbox's own modules (the C unpickler would find the worker's, outside it,
    whose classes the sandbox's convo does not recognise: a ``ToolRun``, a finish). A module
    the sandbox cannot import (the bot file's, under the worker's name) is the worker's."""

    def find_class(self, module: str, name: str) -> Any:
        try:
            found: Any = importlib.import_module(module)
        except ImportError:
            return super().find_class(module, name)
        for part in name.split("."):
            found = getattr(found, part)
        return found


def runs_from(data: str) -> list[ToolRun]:
    runs: list[ToolRun] = _Unpickler(io.BytesIO(base64.b64decode(data))).load()
    return runs  # (the worker's own payload)
