"""A small bot for the Temporal tests, and a worker of it in this process."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from convo import (
    FinishTool,
    FunctionModel,
    LinearTemplate,
    LoopTemplate,
    Message,
    ModelError,
    SystemTemplate,
    ToolingTemplate,
    UserTemplate,
    tool,
)
from convo.runner import Runner
from convo.serve.stores import open_store

_queues = itertools.count()


@tool(needs_approval=True)
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


class Counted:
    """The bot's model: its replies by the last message, and every call it was asked."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, messages: Sequence[Message], tools: Any) -> str:
        last = messages[-1]
        self.calls.append(last.content if isinstance(last.content, str) else "")
        if last.role == "tool":
            return f"Done: {last.content} {{finish()}}"
        if last.content.startswith("refund "):
            return f"{{refund(order='{last.content[7:]}')}}"
        if last.content.startswith("fail"):
            raise ModelError("the model server answered 500")
        return f"You said {last.content[:20]!r}"


TEMPLATE = LinearTemplate([SystemTemplate("Be brief."), LoopTemplate([
    UserTemplate(), ToolingTemplate([refund, FinishTool()])])])


@contextlib.asynccontextmanager
async def worker(address: str, tmp_path: Path, **bot: Any
                 ) -> AsyncIterator[tuple[Any, str, Any, Counted]]:
    """A client, the task queue, the store and the model of a worker of the bot, running."""
    from temporalio.client import Client

    from convo.temporal.bots import Bot
    from convo.temporal.worker import running

    counted = Counted()
    store = open_store(f"sqlite:///{tmp_path / 'convo.db'}")
    await store.open()
    client = await Client.connect(address)
    queue = f"q{next(_queues)}-{tmp_path.name}"
    runner = Runner(FunctionModel(counted), bot.pop("template", TEMPLATE), raise_errors=False)
    try:
        async with running(client, Bot(runner, store, **bot), task_queue=queue):
            yield client, queue, store, counted
    finally:
        await store.close()


async def start(client: Any, queue: str, conversation_id: str) -> Any:
    return await client.start_workflow("ConvoConversation", {"conversation_id": conversation_id},
                                       id=f"convo-{conversation_id}", task_queue=queue)


def texts(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in messages]
