"""The bot's guards whose check is not a plain function (an ``async def`` check: it may do
I/O), which a conversation's workflow runs as the activity ``convo.guard``, naming each by its
place here: the workflow and the worker load the same bot, so the place names the same guard
in both. A plain function's check is answered inside the pump, in workflow code (it must do
no I/O, as a template must not); a ``ModelGuard``'s judge is the activity ``convo.judge``
(``bots.judges``).

A guard outside the template's tree (made while a conversation runs, by a template built
inside another's ``render``, or held by a template that does not list it among its
``children()``) has no place here: on Temporal its async check (or its judge) would run in
workflow code, so it trips instead, saying why (``Unplaced``), and is logged as a check that
raised is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from .._runner import Runner

UNPLACED: Final = ("guard {name!r} is not one of the bot's guards (it was made while the "
                   "conversation ran): on Temporal its check would run in workflow code, so "
                   "it is not run; give it to the runner or to a template the bot file makes")


def checks(runner: Runner) -> tuple[Any, ...]:
    """The bot's guards with an ``async def`` check: the runner's, then its template's nodes'
    (depth first)."""
    from ..guards._base import Guard
    from ..templates._tree import walk

    found = [g for g in runner.guards if isinstance(g, Guard) and not g.inline]
    for node, _, _ in walk(runner.template):
        found.extend(g for g in getattr(node, "guards", ())
                     if isinstance(g, Guard) and not g.inline)
    return tuple(found)


class Unplaced:
    """The check (or a ``ModelGuard``'s model) of a guard with no place among the bot's: it
    raises, saying why (``UNPLACED``), so the guard trips instead of running in workflow
    code."""

    def __init__(self, name: str) -> None:
        self.why = UNPLACED.format(name=name)

    async def __call__(self, value: Any, ctx: Any) -> Any:
        raise RuntimeError(self.why)

    def complete(self, messages: Any, tools: Any = (), **options: Any) -> Any:
        raise RuntimeError(self.why)

    async def acomplete(self, messages: Any, tools: Any = (), **options: Any) -> Any:
        raise RuntimeError(self.why)
