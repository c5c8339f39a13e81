"""How a run applies its guards, worked out once per list of guards: where they look, where
the answerers check (a judge, an ``async def`` check), and whether the run's pump checks a
model's reply where it comes in (``convo._run.guarding.at_call``).

A runner built per conversation (a server's turn, a benchmark) gives each run the same tuple of
guards (``Runner``'s ``guards=`` converter returns the tuple it checked last), so the last plan
is kept and given again for that tuple: a guarded run starts without working it out.
"""

from __future__ import annotations

from typing import Any, Final

from ._base import AT_CALL

# A check that reads nothing of its ``ctx`` (the built-ins) is marked with this attribute: when
# every guard a reply is put to is so marked, the pump makes no ``GuardContext`` for the check.
CONTEXTLESS: Final = "_convo_contextless"

NO_KINDS: Final = frozenset[str]()

Plan = tuple[dict[str, tuple[Any, ...]], frozenset[str], frozenset[str], "tuple[Any, ...] | None",
             bool]
_last: list[tuple[tuple[Any, ...], Plan]] = [((), ({}, NO_KINDS, NO_KINDS, None, False))]


def contextless(check: Any) -> Any:
    """``check`` marked as reading nothing of its ``ctx`` (``CONTEXTLESS``)."""
    setattr(check, CONTEXTLESS, True)
    return check


def planned(guards: tuple[Any, ...]) -> Plan:
    """How a run applies ``guards``: ``(by_kind, judged_on, kinds, reply_guards, reply_context)``

    - ``by_kind``: the guards by where they look, in list order (shared by every run given
      this tuple: never changed);
    - ``judged_on``: where a guard is not a plain function (its checks go to the answerers);
    - ``kinds``: what the session tells its templates (``Session._guards_on``), ``AT_CALL``
      among them when the pump checks a model's reply;
    - ``reply_guards``: the output guards the pump checks a reply with (all plain functions),
      else ``None``;
    - ``reply_context``: whether any of those reads its ``ctx`` (else none is made)."""
    last = _last[0]
    if last[0] is guards:  # (the same tuple: its guards, frozen, are the same)
        return last[1]
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
    plan: Plan = (by_kind, frozenset(judged), kinds, reply_guards, reply_context)
    _last[0] = (guards, plan)
    return plan
