"""Served turns: ``convo serve`` against the floor (a bare Starlette endpoint on the raw SDK,
history in a dict), both calling the fake OpenAI server, at 1, 50 and 200 concurrent
conversations, on the memory, SQLite and (with --postgres URL) Postgres stores; and the time to
rebuild a paused conversation of 10, 100 and 1,000 messages.

    python benchmarks/serve.py [--quick] [--postgres postgresql://...]

Every process runs on this machine (servers, fake model server, load generator): the numbers
compare convo with the floor under the same conditions; they are not capacity figures.
Besides latency, each row has the server's CPU time per served turn (Linux, from /proc):
on a shared machine it is the steadier figure. Results: benchmarks/results/serve.json and a
table on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "serve.json"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Process:
    def __init__(self, args: list[str], env: dict[str, str], port: int) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self.p = subprocess.Popen(args, env=env, cwd=HERE, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        for _ in range(300):
            try:
                if httpx.post(f"{self.url}/api/conversations", json={}, timeout=1).status_code \
                        == 201:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"{args} did not start")

    def stop(self) -> None:
        self.p.terminate()
        self.p.wait()


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) of a process and its live children, from /proc (Linux); a
    figure the other processes on the machine disturb far less than latency."""
    try:
        pids, total = [pid], 0.0
        while pids:
            p = pids.pop()
            fields = Path(f"/proc/{p}/stat").read_text().rpartition(")")[2].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            for task in Path(f"/proc/{p}/task").iterdir():
                pids += [int(c) for c in (task / "children").read_text().split()]
        return total
    except (OSError, ValueError):
        return None


def fake_server() -> tuple[subprocess.Popen[str], str]:
    p = subprocess.Popen([sys.executable, str(HERE / "model_server.py")], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, cwd=HERE)
    assert p.stdout is not None
    return p, p.stdout.readline().strip()


def convo_serve(base_url: str, store: str, workers: int = 1) -> Process:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    env.pop("OPENAI_API_KEY", None)
    return Process([sys.executable, "-m", "convo", "serve", str(HERE / "serve_bot.py"),
                    "--port", str(port), "--store", store, "--workers", str(workers),
                    "--base-url", base_url, "--model", "bench-model", "--no-stream"], env, port)


def floor(base_url: str) -> Process:
    port = free_port()
    env = {**os.environ, "FLOOR_BASE_URL": base_url, "PYTHONPATH": str(HERE)}
    return Process([sys.executable, "-m", "uvicorn", "floor_app:app", "--port", str(port),
                    "--log-level", "warning"], env, port)


async def load(url: str, conversations: int, turns: int) -> dict[str, float]:
    """Each conversation sends ``turns`` messages in a row; all run at once."""
    latencies: list[float] = []
    limits = httpx.Limits(max_connections=conversations + 10)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
        async def one() -> None:
            cid = (await client.post("/api/conversations", json={})).json()["id"]
            for i in range(turns):
                started = time.perf_counter()
                body = {"content": f"What is the weather in Oslo? ({i})"}
                try:
                    r = await client.post(f"/api/conversations/{cid}/messages", json=body)
                except (httpx.ReadError, httpx.RemoteProtocolError):
                    # the server closed an idle keep-alive connection as it was reused: the
                    # request never reached it, so it is sent again (and timed from here)
                    started = time.perf_counter()
                    r = await client.post(f"/api/conversations/{cid}/messages", json=body)
                latencies.append(time.perf_counter() - started)
                if r.status_code != 200:
                    raise RuntimeError(f"{r.status_code}: {r.text[:200]}")

        started = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(conversations)))
        elapsed = time.perf_counter() - started
    latencies.sort()
    return {"p50_ms": 1000 * statistics.median(latencies),
            "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
            "turns_per_s": len(latencies) / elapsed}


def rebuild_times(sizes: list[int]) -> dict[str, dict[str, float]]:
    """Rebuilding a paused conversation from a memory store: the time beyond reading it."""
    sys.path.insert(0, str(HERE))
    from serve_bot import template

    from convo import FunctionModel
    from convo.runner import Runner
    from convo.serve.engine import Engine
    from convo.serve.store import MemoryStore

    def reply(messages: Any, tools: Any) -> str:
        return "Sunny." if messages[-1].role == "tool" else "{get_weather(city='Oslo')}"

    async def measure(n: int) -> dict[str, float]:
        store = MemoryStore()
        engine = Engine(Runner(FunctionModel(reply), template, raise_errors=False,
                               max_messages=10**6), store)
        _, body = await engine.create({}, None)
        cid = body["id"]
        while len(engine._cache[cid].session.messages) < n:
            async with engine.turn(cid) as live:
                await engine.message(live, "weather?", None)
        count = len(engine._cache[cid].session.messages)
        reads, rebuilds = [], []
        for _ in range(20):
            started = time.perf_counter()
            await store.load(cid)
            reads.append(time.perf_counter() - started)
            started = time.perf_counter()
            await engine._rebuild(cid)
            rebuilds.append(time.perf_counter() - started)
        read, total = statistics.median(reads), statistics.median(rebuilds)
        return {"messages": count, "read_ms": 1000 * read, "rebuild_ms": 1000 * total,
                "beyond_read_ms": 1000 * (total - read)}

    return {str(n): asyncio.run(measure(n)) for n in sizes}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--postgres", help="a Postgres URL to bench that store too")
    parser.add_argument("--only", help="run only the targets whose name contains this")
    args = parser.parse_args()
    turns = 2 if args.quick else 5
    levels = [1, 50] if args.quick else [1, 50, 200]
    fake, base_url = fake_server()
    results: dict[str, Any] = {"turns_per_conversation": turns, "served": {}}
    tmp = tempfile.mkdtemp(prefix="convo-bench-")
    stores = {"memory": "memory", "sqlite": f"sqlite:///{tmp}/bench.db"}
    if args.postgres:
        stores["postgres"] = args.postgres
    try:
        targets: dict[str, Any] = {"floor": lambda: floor(base_url)}
        for name, url in stores.items():
            targets[f"convo/{name}"] = lambda url=url: convo_serve(base_url, url)
        if args.postgres:
            targets["convo/postgres x2"] = lambda: convo_serve(base_url, args.postgres, 2)
        if args.only:
            targets = {k: v for k, v in targets.items() if args.only in k}
        for name, start in targets.items():
            server = start()
            try:
                for level in levels:
                    cpu = cpu_seconds(server.p.pid)
                    row = asyncio.run(load(server.url, level, turns))
                    after = cpu_seconds(server.p.pid)
                    if cpu is not None and after is not None:
                        row["server_cpu_ms_per_turn"] = 1000 * (after - cpu) / (level * turns)
                    results["served"].setdefault(name, {})[str(level)] = row
                    print(f"{name:20} {level:4} at once: p50 {row['p50_ms']:7.2f} ms  "
                          f"p99 {row['p99_ms']:7.2f} ms  {row['turns_per_s']:7.1f} turns/s  "
                          f"server CPU {row.get('server_cpu_ms_per_turn', 0):5.2f} ms/turn",
                          flush=True)
            finally:
                server.stop()
    finally:
        assert fake.stdin is not None
        fake.stdin.close()
        fake.wait()
    if args.only:
        print(json.dumps(results["served"]))
        return
    results["rebuild"] = rebuild_times([10, 100] if args.quick else [10, 100, 1000])
    for row in results["rebuild"].values():
        print(f"rebuild {row['messages']:5} messages: read {row['read_ms']:.3f} ms, rebuild "
              f"{row['rebuild_ms']:.3f} ms, beyond reading {row['beyond_read_ms']:.3f} ms")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
