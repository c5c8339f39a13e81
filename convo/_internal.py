"""convo's own records about a conversation, kept in ``Session.internal``, apart from ``state``.

``session.state`` is the conversation's variables: what Jinja sees, what tools write, and what a
served client sends at create and reads back. convo's own records live in ``session.internal``
instead, so that no client, tool or template text can forge them::

    {"context": {"summary": "...", "upto": 40, "check": "user:212:3954207421",
                 "calls": 2, "usage": {"prompt_tokens": 1830, ...}},   # convo._summary
     "machine": "billing",                                  # convo.templates._states
     "unsaid": [2],          # convo.serve._live: where a cancelled empty reply was dropped
     "state_undo": {"set": {"step": 1}, "delete": ["total"]}}  # below

Every writer of ``state`` (a tool through its ``ToolContext``, a template, a hook, an
``ExecuteToolTemplate(store_as=)``, a subroutine's child) is followed the same way, by the run
(``convo._run.state``), not by the writer: each message the conversation adds carries, in
``metadata["state_undo"]``, what undoes the changes made to ``state`` since the message before it
(``{"set": {key: value before}, "delete": [keys added]}``; none when nothing changed), and
``internal["state_undo"]`` holds what undoes the changes made since the last message, while there
are some. With them the state as it was when any message was added is known
(``rewound``): what a branch starts from (``Runner.branch``). A conversation recorded before
convo kept them has none (``recorded`` is false).

Before they moved here (session format 1, transcript format 1, serve schema 3) they were the
state keys ``"convo.context"`` and ``"_convo_state"``: ``from_legacy_state`` moves them out of
a state read from such a file or row. Whatever is read back is checked (``checked``): a
malformed record (a negative count, a summary that is not text) is dropped with a warning that
names where it was read, so a bad file costs a summary made again, never a crash or a budget.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

CONTEXT: Final = "context"
"""The ``ContextWindow``'s summary record (``convo._summary``)."""
MACHINE: Final = "machine"
"""The state the innermost running ``StateMachineTemplate`` is in (``convo.templates._states``)."""
STATE_UNDO: Final = "state_undo"
"""What undoes the latest changes of ``state``: a message's metadata key (the changes made before
it was added, since the message before it) and a record here (the changes since the last
message)."""

LEGACY_KEYS: Final = {"convo.context": CONTEXT, "_convo_state": MACHINE}
"""Where earlier versions kept each record: in ``session.state``, under these keys."""

_USAGE_FIELDS: Final = ("prompt_tokens", "completion_tokens", "total_tokens", "unreported",
                         "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")


def reserved_keys(state: Mapping[str, Any]) -> list[str]:
    """The keys of ``state`` that name convo's own records (``convo.*``, ``_convo_state``): a
    served client may not send them."""
    return [key for key in state if key.startswith("convo.") or key in LEGACY_KEYS]


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def context_problem(record: Any) -> str | None:
    """Why ``record`` is not a summary record (``None``: it is one)."""
    if not isinstance(record, dict):
        return f"expected an object, got {type(record).__name__}"
    expected = {"summary": (str, "text"), "check": (str, "text")}
    for field, (kind, what) in expected.items():
        if not isinstance(record.get(field), kind):
            return f"{field!r} is {record.get(field)!r}, expected {what}"
    upto = record.get("upto")
    if not _count(upto) or upto == 0:
        return f"'upto' is {upto!r}, expected a count of messages above 0"
    if not _count(record.get("calls", 0)):
        return f"'calls' is {record.get('calls')!r}, expected a count of calls (0 or more)"
    usage = record.get("usage") or {}
    if not isinstance(usage, dict):
        return f"'usage' is {usage!r}, expected an object of token counts"
    for field in _USAGE_FIELDS:
        if not _count(usage.get(field, 0)):
            return f"'usage.{field}' is {usage.get(field)!r}, expected a count (0 or more)"
    return None


def _machine_problem(value: Any) -> str | None:
    if isinstance(value, str) and value:
        return None
    return f"expected a state's name (a non-empty string), got {value!r}"


def undo_problem(record: Any) -> str | None:
    """Why ``record`` is not a ``STATE_UNDO`` record (``None``: it is one)."""
    if not isinstance(record, dict) or set(record) - {"set", "delete"}:
        return f"expected an object with 'set' and 'delete', got {record!r}"
    if not isinstance(record.get("set", {}), dict):
        return f"'set' is {record.get('set')!r}, expected an object of values"
    added = record.get("delete", [])
    if not isinstance(added, list) or not all(isinstance(key, str) for key in added):
        return f"'delete' is {added!r}, expected a list of keys"
    return None


_CHECKS: Final[dict[str, Callable[[Any], str | None]]] = {
    CONTEXT: context_problem, MACHINE: _machine_problem, STATE_UNDO: undo_problem}


def checked(internal: Any, where: str) -> dict[str, Any]:
    """The records of ``internal`` (as read from ``where``) that are well formed; each other
    one is dropped with a ``UserWarning`` naming ``where`` and what is wrong. Records this
    version does not know are kept as they are (a later version may have written them)."""
    if not isinstance(internal, dict):
        _warn(where, "the internal records", f"expected an object, got "
                                             f"{type(internal).__name__}")
        return {}
    kept: dict[str, Any] = {}
    for name, record in internal.items():
        check = _CHECKS.get(name)
        problem = None if check is None else check(record)
        if problem is None:
            kept[name] = record
        else:
            _warn(where, f"the {name!r} record", problem)
    return kept


def from_legacy_state(state: Mapping[str, Any], where: str
                      ) -> tuple[dict[str, Any], dict[str, Any]]:
    """A state as an earlier convo kept it, split into the variables and convo's own records
    (checked as ``checked`` does)."""
    variables = dict(state)
    internal = {LEGACY_KEYS[key]: variables.pop(key) for key in LEGACY_KEYS if key in state}
    return variables, checked(internal, where)


def _warn(where: str, what: str, problem: str) -> None:
    warnings.warn(f"{where}: convo ignored {what} it keeps for itself ({problem}); a summary "
                  "is made again when one is needed", UserWarning, stacklevel=3)


# -- what undoes the state's changes ---------------------------------------------------------

def state_undo(was: Mapping[str, Any], now: Mapping[str, Any]) -> dict[str, Any] | None:
    """What undoes the change from ``was`` to ``now`` (``None``: nothing changed)."""
    changed = {key: value for key, value in was.items() if key not in now or now[key] != value}
    added = [key for key in now if key not in was]
    if not changed and not added:
        return None
    return {"set": copy.deepcopy(changed), "delete": added}


def undo_state(state: dict[str, Any], undo: Any) -> None:
    """Apply one ``STATE_UNDO`` record to ``state`` (a malformed one changes nothing)."""
    if undo is None or undo_problem(undo) is not None:
        return
    for key in undo.get("delete", ()):
        state.pop(key, None)
    state.update(copy.deepcopy(undo.get("set", {})))


def rewound(state: Mapping[str, Any], internal: Mapping[str, Any], messages: Sequence[Any],
            count: int) -> dict[str, Any]:
    """A conversation's ``state`` (with its ``internal`` and ``messages``) as it was just after
    its first ``count`` messages were added: every change recorded since undone, newest
    first (a copy; what was not recorded stays as it is)."""
    rewinding = copy.deepcopy(dict(state)) if state else {}  # (a new run's: nothing to copy)
    if STATE_UNDO in internal:
        undo_state(rewinding, internal[STATE_UNDO])
    for message in reversed(messages[count:]):
        undo = message.metadata.get(STATE_UNDO)
        if undo is not None:
            undo_state(rewinding, undo)
    return rewinding


def recorded(internal: Mapping[str, Any], messages: Sequence[Any]) -> bool:
    """Whether a conversation has records of its state's changes (a conversation recorded
    before convo kept them has none; nor has one whose state never changed)."""
    return STATE_UNDO in internal or any(STATE_UNDO in m.metadata for m in messages)
