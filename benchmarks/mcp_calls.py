"""MCP tool calls: convo's ``MCPTool`` against the raw ``mcp`` SDK, to the same stdio server.

``python benchmarks/mcp_calls.py [--calls N]`` starts ``examples/mcp_units_server.py`` twice and
times, in one run, interleaved in rounds:

- ``raw_ms``: ``await ClientSession.call_tool("convert", ...)`` on a session of the caller's
  own loop (the floor);
- ``convo_async_ms``: ``await tool.ainvoke(args)`` of the ``MCPTool`` under a running loop
  (what ``arun()`` and ``convo serve`` do: the call hops to the MCP loop's thread and back);
- ``convo_sync_ms``: what a blocking ``Runner.run()`` does for an async tool
  (``asyncio.run(tool.ainvoke(args))``: a fresh loop per call, then the same hop);
- ``listings``: how often the server was asked for its tools over all the calls (target 1).

Target (issue 28): ``convo_async_ms / raw_ms <= 1.05``. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
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
    start = time.perf_counter()
    for _ in range(calls):
        asyncio.run(tool.ainvoke(ARGS))
    return (time.perf_counter() - start) / calls * 1000


async def measure(calls: int, rounds: int) -> dict[str, Any]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    from convo.tools.mcp.connection import Connection

    server = MCPServer.stdio(sys.executable, [SERVER], timeout=60)
    listed = 0
    original = Connection.list_tools

    async def counting(self: Connection) -> list[Any]:
        nonlocal listed
        listed += 1
        return await original(self)

    Connection.list_tools = counting  # type: ignore[method-assign]
    [tool] = [t for t in await server.atools() if t.name == "convert"]
    raw_ms, async_ms, sync_ms = [], [], []
    params = StdioServerParameters(command=sys.executable, args=[SERVER])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await _raw_round(session, 20)  # warm both up
        await _convo_round(tool, 20)
        for _ in range(rounds):
            raw_ms.append(await _raw_round(session, calls))
            async_ms.append(await _convo_round(tool, calls))
            sync_ms.append(await asyncio.to_thread(_sync_round, tool, calls))
            await server.atools()  # what each turn would do: served from the cache
    await server.aclose()
    raw, conv, sync = (statistics.median(x) for x in (raw_ms, async_ms, sync_ms))
    return {"calls": calls * rounds, "raw_ms": round(raw, 3), "convo_async_ms": round(conv, 3),
            "convo_sync_ms": round(sync, 3), "async_ratio": round(conv / raw, 3),
            "sync_ratio": round(sync / raw, 3), "listings": listed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="calls per round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(args.calls, args.rounds))))


if __name__ == "__main__":
    main()
