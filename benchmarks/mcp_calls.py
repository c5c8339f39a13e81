"""MCP tool calls: convo's ``MCPTool`` against the raw ``mcp`` SDK, to the same stdio server.

``python benchmarks/mcp_calls.py [--calls N] [--rounds R]`` starts
``examples/mcp_units_server.py`` four times and times, in one run:

- ``raw_ms``: ``await ClientSession.call_tool("convert", ...)`` on a session of the caller's
  own loop (the floor);
- ``convo_async_ms``: ``await tool.ainvoke(args)`` of the ``MCPTool`` under a running loop
  (what ``arun()`` and ``convo serve`` do): its server was first used on this loop, so its
  connection lives here and the call goes straight to the session;
- ``convo_sync_ms``: what a blocking ``Runner.run()`` does (``convo.tools._calls.execute``,
  in a thread without a loop), with a second ``MCPServer`` first used by that thread: its
  connection lives on convo's background loop, and each call is handed to it and back;
- ``control_ratio``: a second raw session (to its own server process) against the first: two
  identical sides, so how far this run's ratios stray by chance (its IQR too);
- ``listings``: how often the servers were asked for their tools over all the calls (target
  2, once per server; each round also asks both for their tools, as each turn does);
- ``handoff_us`` / ``handoff_cpu_us``: a no-op coroutine handed to the MCP loop and back, wall
  and CPU time (both threads): what convo's hop costs by itself, without the server.

The four take turns in short rounds (``--calls`` each, the order rotated every round, after
``gc.collect()``), so that a machine whose load drifts weighs on each alike. Each round gives a
ratio side / raw; ``async_ratio``, ``sync_ratio`` and ``control_ratio`` are the medians of
those ratios, with their interquartile range; the ``_ms`` figures are the medians of the rounds.

Target (issue 28): ``async_ratio <= 1.05``. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from convo import MCPServer

SERVER = str(Path(__file__).resolve().parent.parent / "examples" / "mcp_units_server.py")
ARGS = {"value": 42.195, "from_unit": "km", "to_unit": "mi"}


async def _raw_round(session: Any, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        await session.call_tool("convert", ARGS)
    return (time.perf_counter() - start) / calls * 1000


async def _convo_round(tool: Any, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        await tool.ainvoke(ARGS)
    return (time.perf_counter() - start) / calls * 1000


def _sync_round(tool: Any, calls: int) -> float:
    from convo._messages import ToolCall
    from convo.tools._calls import Invocation, execute

    invocation = Invocation(ToolCall("c1", "convert", ARGS), tool, dict(ARGS))
    start = time.perf_counter()
    for _ in range(calls):
        assert execute(invocation).error is None
    return (time.perf_counter() - start) / calls * 1000


async def _nothing() -> None:
    return None


async def _handoffs(rounds: int = 20, calls: int = 100) -> tuple[float, float]:
    """The median wall and CPU time, in µs, of handing a no-op to the MCP loop and back."""
    from convo.tools._mcp.loop import hand_off

    walls, cpus = [], []
    for _ in range(rounds):
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(calls):
            await hand_off(_nothing())
        walls.append((time.perf_counter() - wall) / calls * 1e6)
        cpus.append((time.process_time() - cpu) / calls * 1e6)
    return statistics.median(walls), statistics.median(cpus)


def _quartiles(values: list[float]) -> list[float]:
    q = statistics.quantiles(values, n=4)
    return [round(q[0], 3), round(q[2], 3)]


def _counted_listings() -> list[int]:
    """Count the server's tool listings from now on (one list, updated in place)."""
    from convo.tools._mcp.connection import Connection

    listed = [0]
    original = Connection.list_tools

    async def counting(self: Connection) -> list[Any]:
        listed[0] += 1
        return await original(self)

    Connection.list_tools = counting  # type: ignore[method-assign]
    return listed


async def measure(calls: int, rounds: int) -> dict[str, Any]:
    server = MCPServer.stdio(sys.executable, [SERVER], timeout=60)
    blocking = MCPServer.stdio(sys.executable, [SERVER], timeout=60)  # run()'s
    listed = _counted_listings()
    [tool] = [t for t in await server.atools() if t.name == "convert"]
    [sync_tool] = [t for t in await asyncio.to_thread(blocking.tools) if t.name == "convert"]
    times: dict[str, list[float]] = {"raw": [], "async": [], "sync": [], "raw2": []}
    async with contextlib.AsyncExitStack() as stack:
        session, control = [await _raw_session(stack) for _ in range(2)]
        sides = {"raw": lambda: _raw_round(session, calls),
                 "async": lambda: _convo_round(tool, calls),
                 "sync": lambda: asyncio.to_thread(_sync_round, sync_tool, calls),
                 "raw2": lambda: _raw_round(control, calls)}
        for side in sides.values():  # warm every path up
            await side()
        for n in range(rounds):
            order = list(sides)[n % 4:] + list(sides)[:n % 4]
            for name in order:
                gc.collect()
                times[name].append(await sides[name]())
            await server.atools()  # what each turn does: served from the cache
            await asyncio.to_thread(blocking.tools)
    handoff_us, handoff_cpu_us = await _handoffs()
    await server.aclose()
    await asyncio.to_thread(blocking.close)
    return {"calls": calls * rounds, **_figures(times), "listings": listed[0],
            "handoff_us": round(handoff_us, 1), "handoff_cpu_us": round(handoff_cpu_us, 1),
            "load_average": [round(x, 2) for x in os.getloadavg()]}


async def _raw_session(stack: contextlib.AsyncExitStack) -> Any:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=[SERVER])
    read, write = await stack.enter_async_context(stdio_client(params))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    return session


def _figures(times: dict[str, list[float]]) -> dict[str, Any]:
    """The medians of the rounds, and each side's median ratio to ``raw`` with its IQR."""
    figures: dict[str, Any] = {
        "raw_ms": round(statistics.median(times["raw"]), 3),
        "convo_async_ms": round(statistics.median(times["async"]), 3),
        "convo_sync_ms": round(statistics.median(times["sync"]), 3)}
    for side, name in (("async", "async_ratio"), ("sync", "sync_ratio"),
                       ("raw2", "control_ratio")):
        ratios = [t / r for t, r in zip(times[side], times["raw"], strict=True)]
        figures[name] = round(statistics.median(ratios), 3)
        figures[f"{name}_iqr"] = _quartiles(ratios)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=25, help="calls per round and side")
    parser.add_argument("--rounds", type=int, default=45)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(args.calls, args.rounds))))


if __name__ == "__main__":
    main()
