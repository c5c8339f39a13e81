"""The Temporal worker of a bot: its conversations' workflows and activities on one task queue.

The workflows run in Temporal's sandbox with convo passed through (convo and the bot were
imported once, outside it; the pump reads no clock, randomness or id of the process: its clock
and ids are the workflow's).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any, Final

from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions
from temporalio.workflow import NondeterminismError

from .activities import Activities
from .bots import Bot, register
from .workflow import ConvoConversation

TASK_QUEUE: Final = "convo"
SANDBOX: Final = "default, convo passed through"
HEARTBEAT_THROTTLE: Final = timedelta(seconds=1)


def make_worker(client: Client, bot: Bot, *, task_queue: str = TASK_QUEUE,
                **options: Any) -> Worker:
    """A worker for ``bot`` on ``task_queue`` (run it with ``async with`` or ``run()``);
    ``options`` go to ``temporalio.worker.Worker``."""
    activities = Activities(bot)
    restrictions = SandboxRestrictions.default.with_passthrough_modules("convo")
    # A cancel reaches an activity with the answer to its next heartbeat: sent every second
    # (the SDK's default would wait up to 80% of the heartbeat timeout).
    # A run its worker's template cannot replay (a deploy changed the template under it)
    # fails instead of waiting for a worker that can: the HTTP front starts a new run from the
    # store (``engine.py``).
    options = {"max_heartbeat_throttle_interval": HEARTBEAT_THROTTLE,
               "default_heartbeat_throttle_interval": HEARTBEAT_THROTTLE,
               "workflow_failure_exception_types": [NondeterminismError], **options}
    return Worker(client, task_queue=task_queue, workflows=[ConvoConversation],
                  activities=[activities.create, activities.load, activities.write,
                              activities.model, activities.tools, activities.hooks,
                              activities.list_tools, activities.queued, activities.judge,
                              activities.branch, activities.guard],
                  workflow_runner=SandboxedWorkflowRunner(restrictions=restrictions),
                  **options)


@contextlib.asynccontextmanager
async def running(client: Client, bot: Bot, *, task_queue: str = TASK_QUEUE,
                  **options: Any) -> AsyncIterator[Worker]:
    """``bot``'s worker polling ``task_queue`` while the block runs."""
    unregister = register(task_queue, bot)
    try:
        async with make_worker(client, bot, task_queue=task_queue, **options) as worker:
            yield worker
    finally:
        unregister()
