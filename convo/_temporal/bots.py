"""The bots a worker process runs, by task queue: how a conversation's workflow finds its
template (the workflow code is the same for every bot; what it pumps is the worker's).

This module is passed through the workflow sandbox with the rest of convo: the bot was loaded
once, outside the sandbox, by the worker.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import attrs

if TYPE_CHECKING:
    from .._runner import Runner
    from ..serve._stores.base import Store

CONTINUE_EVERY: Final = 100
HEARTBEAT_S: Final = 10.0


@attrs.frozen(slots=True)
class Bot:
    """What a worker runs: the bot's ``runner`` on ``store``. ``continue_every``: Updates that
    ran a turn before a workflow continues as new; ``heartbeat_s``: the heartbeat timeout of
    the model and tool activities (a worker lost mid-call is noticed after it)."""

    runner: Runner
    store: Store
    continue_every: int = CONTINUE_EVERY
    heartbeat_s: float = HEARTBEAT_S


_BOTS: dict[str, Bot] = {}


def register(task_queue: str, bot: Bot) -> Callable[[], None]:
    """Run ``bot`` for the workflows of ``task_queue`` in this process; returns the undo."""
    _BOTS[task_queue] = bot

    def undo() -> None:
        if _BOTS.get(task_queue) is bot:
            del _BOTS[task_queue]

    return undo


def judges(runner: Runner) -> tuple[Any, ...]:
    """The bot's ``ModelGuard``s: the runner's, then its template's nodes' (depth first). A
    judge's model call is the activity ``convo.judge``, which names the guard by its place here
    (the workflow and the worker load the same bot)."""
    from ..guards._base import ModelGuard
    from ..templates._tree import walk

    found = [g for g in runner.guards if isinstance(g, ModelGuard)]
    for node, _, _ in walk(runner.template):
        found.extend(g for g in getattr(node, "guards", ()) if isinstance(g, ModelGuard))
    return tuple(found)


def bot(task_queue: str) -> Bot:
    try:
        return _BOTS[task_queue]
    except KeyError:
        raise LookupError(f"no bot runs for the task queue {task_queue!r} in this worker "
                          "(convo._temporal.worker makes the worker and registers it)") from None
