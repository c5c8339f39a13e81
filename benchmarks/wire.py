"""Wire level: convo's OpenAIModel against the raw openai SDK, over HTTP to the fake server.

Both sides make the same two calls per conversation (Chat Completions, or with
``api="responses"`` the Responses API), to the same server (in its own process), in the same
run. They take turns, round by round (ABBA order), so
that changes in the machine's load hit both alike; each side keeps one client (one
connection pool) for the whole run, warmed up before the first round.
"""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import openai
from conversation import (
    MODEL,
    TEMPLATE,
    check,
    raw_async,
    raw_async_responses,
    raw_sync,
    raw_sync_responses,
)

from convo import OpenAIModel, Runner

HERE = Path(__file__).resolve().parent
API_KEY = "bench"
Times = dict[str, list[float]]  # side ("convo", "raw") -> seconds per conversation, per round


@contextmanager
def server() -> Iterator[str]:
    """The fake server in a child process; yields its base URL."""
    process = subprocess.Popen([sys.executable, str(HERE / "model_server.py")],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=HERE)
    try:
        assert process.stdout is not None
        base_url = process.stdout.readline().strip()
        if not base_url.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"the benchmark server did not start (said {base_url!r})")
        yield base_url
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _order(round_number: int) -> tuple[str, str]:
    return ("convo", "raw") if round_number % 2 == 0 else ("raw", "convo")


def sequential_sync(base_url: str, conversations: int, rounds: int,
                    api: str = "chat") -> Times:
    """Conversations one after another, blocking: ``Runner.run`` vs ``OpenAI``."""
    model = OpenAIModel(MODEL, base_url=base_url, api_key=API_KEY, api=api)
    runner = Runner(model, TEMPLATE)
    client = openai.OpenAI(base_url=base_url, api_key=API_KEY)
    raw = raw_sync_responses if api == "responses" else raw_sync
    sides: dict[str, Callable[[], Any]] = {
        "convo": lambda: check(runner.run()),
        "raw": lambda: raw(client),
    }
    for side in sides.values():  # warm up: connections, caches
        side()
    times: Times = {"convo": [], "raw": []}
    for r in range(rounds):
        for name in _order(r):
            side = sides[name]
            gc.collect()
            started = time.perf_counter()
            for _ in range(conversations):
                side()
            times[name].append((time.perf_counter() - started) / conversations)
    model.close()
    client.close()
    return times


async def _async_suite(
    base_url: str, conversations: int, rounds: int, levels: Sequence[tuple[int, int]],
    api: str,
) -> dict[int, Times]:
    model = OpenAIModel(MODEL, base_url=base_url, api_key=API_KEY, api=api)
    runner = Runner(model, TEMPLATE)
    client = openai.AsyncOpenAI(base_url=base_url, api_key=API_KEY)
    raw = raw_async_responses if api == "responses" else raw_async

    async def convo_one() -> None:
        check(await runner.arun())

    async def raw_one() -> None:
        await raw(client)

    sides: dict[str, Callable[[], Awaitable[None]]] = {"convo": convo_one, "raw": raw_one}

    async def batch(side: Callable[[], Awaitable[None]], concurrency: int) -> None:
        if concurrency == 1:
            await side()
        else:
            await asyncio.gather(*(side() for _ in range(concurrency)))

    async def measure(concurrency: int, batches: int, rounds: int) -> Times:
        times: Times = {"convo": [], "raw": []}
        for r in range(rounds):
            for name in _order(r):
                gc.collect()
                started = time.perf_counter()
                for _ in range(batches):
                    await batch(sides[name], concurrency)
                elapsed = time.perf_counter() - started
                times[name].append(elapsed / (batches * concurrency))
        return times

    for name in sides:  # warm up: both pools hold their 100 keep-alive connections
        await batch(sides[name], 100)
    results = {1: await measure(1, conversations, rounds)}
    for concurrency, level_rounds in levels:
        results[concurrency] = await measure(concurrency, 1, level_rounds)
    await model.aclose()
    await client.close()
    return results


def async_suite(
    base_url: str, conversations: int, rounds: int, levels: Sequence[tuple[int, int]],
    api: str = "chat",
) -> dict[int, Times]:
    """On one event loop: sequential ``arun`` vs ``AsyncOpenAI`` (key 1), then for each
    ``(concurrency, rounds)`` in ``levels`` that many conversations at once (wall time per
    conversation). One ``Runner`` and one ``OpenAIModel`` serve every convo conversation."""
    return asyncio.run(_async_suite(base_url, conversations, rounds, levels, api))
