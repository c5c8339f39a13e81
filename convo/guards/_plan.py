"""How a run applies its guards, worked out once per list of guards (a ``Plan``): where they
look, where the answerers check (a judge, an ``async def`` check), and whether the run's pump
checks a model's reply where it comes in (``convo._run.guarding.at_call``).

A run keeps its plan in one place (``RunState.plan``): a run without guards is given
``NO_PLAN``, with nothing to work out or store. A runner built per conversation (a server's
turn, a benchmark) gives each run the same tuple of guards (``Runner``'s ``guards=`` converter
returns the tuple it checked last), so the last plan is kept and given again for that tuple: a
guarded run starts without working it out.
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from ._base import AT_CALL

# A check that reads nothing of its ``ctx`` (the built-ins) is marked with this attribute: when
# every guard a reply is put to is so marked, the pump makes no ``GuardContext`` for the check.
CONTEXTLESS: Final = "_convo_contextless"

NO_KINDS: Final = frozenset[str]()


@attrs.frozen(slots=True, eq=False)
class Plan:
    """How a run applies ``guards`` (shared by every run given the same tuple: never changed).

    - ``on``: the guards by where they look, in list order (a kind without any is not asked);
    - ``judged_on``: where a guard is not a plain function (its checks go to the answerers;
      the others are checked inside the pump);
    - ``kinds``: what the session tells its templates (``Session._guards_on``), ``AT_CALL``
      among them when the pump checks a model's reply;
    - ``reply_guards``: the output guards the pump checks a reply with as it comes in (all
      plain functions; templates do not ask for it), else ``None``;
    - ``reply_context``: whether any of those reads its ``ctx`` (else none is made)."""

    guards: tuple[Any, ...]
    on: dict[str, tuple[Any, ...]]
    judged_on: frozenset[str]
    kinds: frozenset[str]
    reply_guards: tuple[Any, ...] | None
    reply_context: bool


NO_PLAN: Final = Plan((), {}, NO_KINDS, NO_KINDS, None, False)
"""The plan of a run without guards."""

_last: list[Plan] = [NO_PLAN]


def contextless(check: Any) -> Any:
    """``check`` marked as reading nothing of its ``ctx`` (``CONTEXTLESS``)."""
    setattr(check, CONTEXTLESS, True)
    return check


def planned(guards: tuple[Any, ...]) -> Plan:
    """How a run applies ``guards`` (``NO_PLAN`` when there are none)."""
    last = _last[0]
    if last.guards is guards:  # (the same tuple: its guards, frozen, are the same)
        return last
    if not guards:
        return NO_PLAN
    by_kind: dict[str, tuple[Any, ...]] = {}
    judged: set[str] = set()
    for guard in guards:
        by_kind[guard.on] = (*by_kind.get(guard.on, ()), guard)
        if not guard.inline:
            judged.add(guard.on)
    kinds = frozenset(by_kind)
    reply_guards = None
    if "output" in kinds and "output" not in judged:
        reply_guards = by_kind["output"]
        kinds |= {AT_CALL}
    reply_context = reply_guards is not None and not all(
        getattr(g.check, CONTEXTLESS, False) for g in reply_guards)
    plan = Plan(guards, by_kind, frozenset(judged), kinds, reply_guards, reply_context)
    _last[0] = plan
    return plan
