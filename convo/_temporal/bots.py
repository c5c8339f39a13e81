"""The bots a worker process runs, by task queue: how a conversation's workflow finds its
template (the workflow code is the same for every bot; what it pumps is the worker's).

A bot loaded from a file (``convo worker``) is loaded twice: by the worker, outside the
sandbox, for the activities; and inside the sandbox, for each workflow run, when this module is
imported there (the file reached through the importer: ``sandbox.py``), so the pump and the
template run sandboxed. A bot made in this process (no file) is the worker's own objects: its
workflows see convo passed through.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import attrs
from temporalio import workflow

if TYPE_CHECKING:
    from .._runner import Runner
    from ..serve._stores.base import Store

CONTINUE_EVERY: Final = 100
HEARTBEAT_S: Final = 10.0
#: The module a sandbox imports to learn which bot file each task queue runs (``FILES``: by
#: task queue, the module name to import the file under, its path, its template's name and
#: the options of its ``Bot``): served by ``sandbox.py``'s finder.
REGISTRY: Final = "_convo_temporal_bots"


@attrs.frozen(slots=True)
class BotFile:
    """Where a bot comes from, for the workflow sandbox to load it again: the file's
    ``path``, its template's ``name``, and the ``Runner``'s ``max_messages``."""

    path: str
    name: str = "template"
    max_messages: int = 1000


@attrs.frozen(slots=True)
class Bot:
    """What a worker runs: the bot's ``runner`` on ``store``. ``continue_every``: Updates that
    ran a turn before a workflow continues as new; ``heartbeat_s``: the heartbeat timeout of
    the model and tool activities (a worker lost mid-call is noticed after it), and how long a
    workflow task waits on a worker's sticky queue before any worker takes it; ``file``:
    where the bot was loaded from (its workflows then run in Temporal's default sandbox)."""

    runner: Runner
    store: Store
    continue_every: int = CONTINUE_EVERY
    heartbeat_s: float = HEARTBEAT_S
    file: BotFile | None = None


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


def _loaded() -> None:
    """In a workflow sandbox, while it imports the workflow's code: the bots of the files the
    worker registered, loaded from their files here (their template and guards made of the
    sandbox's convo). Not at run time: the file is imported as workflow code is, before the
    sandbox's run-time restrictions (reading the environment, say) apply."""
    try:
        files = importlib.import_module(REGISTRY).FILES
    except ImportError:  # (no bot file registered: a bot made in this process)
        return
    from .._botfile import bot_bounds, find_template
    from .._runner import Runner

    for queue, said in files.items():
        module = importlib.import_module(said["module"])
        path = said["path"]
        # No model: a model call is an activity (``workflow.py``), made by the worker's bot.
        runner = Runner(None, find_template(module, path, said["name"]), raise_errors=False,
                        max_messages=said["max_messages"], **bot_bounds(module, path))
        _BOTS[queue] = Bot(runner, None,  # type: ignore[arg-type]  # (activities' store)
                           continue_every=said["continue_every"],
                           heartbeat_s=said["heartbeat_s"])


if workflow.unsafe.in_sandbox():
    _loaded()


def bot(task_queue: str) -> Bot:
    try:
        return _BOTS[task_queue]
    except KeyError:
        raise LookupError(f"no bot runs for the task queue {task_queue!r} in this worker "
                          "(convo._temporal.worker makes the worker and registers it)") from None
