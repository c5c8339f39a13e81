"""The Temporal worker of a bot: its conversations' workflows and activities on one task queue.

The workflows of a bot file run in Temporal's default workflow sandbox, convo's code and the
bot file's imported again inside it for each run, only a few third-party libraries passed
through (``sandbox.py``): the pump reads no clock, randomness or id of the process (its clock
and ids are the workflow's), and one that did would fail the workflow task. A bot made in this
process (no file: tests, an embedding) is the worker's own objects, so its workflows see convo
passed through (``sandboxed``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any, Final

from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner
from temporalio.workflow import NondeterminismError

from . import sandbox
from .activities import Activities
from .bots import Bot, register
from .workflow import ConvoConversation

TASK_QUEUE: Final = "convo"
HEARTBEAT_THROTTLE: Final = timedelta(seconds=1)


def make_worker(client: Client, bot: Bot, *, task_queue: str = TASK_QUEUE,
                **options: Any) -> Worker:
    """A worker for ``bot`` on ``task_queue`` (run it with ``async with`` or ``run()``);
    ``options`` go to ``temporalio.worker.Worker``."""
    activities = Activities(bot)
    restrictions = sandbox.restrictions(bot.file is not None)
    # A cancel reaches an activity with the answer to its next heartbeat: sent every second
    # (the SDK's default would wait up to 80% of the heartbeat timeout).
    # A workflow task left on this worker's sticky queue (the worker died) goes to another
    # worker after the bot's heartbeat timeout too: both bound how long its conversations wait.
    # A run its worker's template cannot replay (a deploy changed the template under it)
    # fails instead of waiting for a worker that can: the HTTP front starts a new run from the
    # store (``engine.py``).
    options = {"max_heartbeat_throttle_interval": HEARTBEAT_THROTTLE,
               "default_heartbeat_throttle_interval": HEARTBEAT_THROTTLE,
               "sticky_queue_schedule_to_start_timeout": timedelta(seconds=bot.heartbeat_s),
               "workflow_failure_exception_types": [NondeterminismError], **options}
    return Worker(client, task_queue=task_queue, workflows=[ConvoConversation],
                  activities=[activities.create, activities.load, activities.write,
                              activities.model, activities.tools, activities.hooks,
                              activities.list_tools, activities.queued, activities.judge,
                              activities.branch, activities.guard],
                  workflow_runner=SandboxedWorkflowRunner(restrictions=restrictions),
                  **options)


def _nothing() -> None:
    pass


def sandboxed(bot: Bot) -> str:
    """What the worker says of its workflow sandbox: ``default``, or ``default, convo passed
    through`` for a bot made in this process."""
    return sandbox.DEFAULT if bot.file is not None else sandbox.PASSED_CONVO


@contextlib.asynccontextmanager
async def running(client: Client, bot: Bot, *, task_queue: str = TASK_QUEUE,
                  **options: Any) -> AsyncIterator[Worker]:
    """``bot``'s worker polling ``task_queue`` while the block runs (a bot file is
    registered for the sandbox's importer first: the worker checks its workflow there)."""
    unregister = register(task_queue, bot)
    unfile = _nothing if bot.file is None else sandbox.register(
        task_queue, bot.file.path, bot.file.name, max_messages=bot.file.max_messages,
        continue_every=bot.continue_every, heartbeat_s=bot.heartbeat_s)
    try:
        async with make_worker(client, bot, task_queue=task_queue, **options) as worker:
            yield worker
    finally:
        unfile()
        unregister()
