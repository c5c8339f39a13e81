"""The OpenAI face (``/v1/chat/completions``) against the floor, and the stateless replay.

    python benchmarks/openai_face.py [--quick]

Served turns: ``convo serve`` on SQLite answering keyed ``/v1/chat/completions`` requests
(``X-Convo-Conversation``; each sends its new user message, the bot calls its tool, then
answers) against the floor of ``serve.py`` (a bare Starlette endpoint calling the raw SDK,
history in a dict), each with a fake model server of its own, at 1, 50 and 200 concurrent
conversations, in AB BA rounds; a round's ratio is convo's p50 over the floor's. The replay:
``Engine.adopted`` of a 100-message client history (what a request that names no
conversation costs beyond reading it), in process on the memory store, median of many.
Every process runs on this machine; the numbers compare, they are not capacities. Results:
benchmarks/results/openai_face.json and a table on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
from serve_parts import Fake, Process, convo_serve, cpu_seconds, floor, load

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "openai_face.json"
TURNS = 5


async def load_v1(url: str, conversations: int, turns: int) -> dict[str, Any]:
    """Each conversation sends ``turns`` chat completions in a row, keyed by its id."""
    latencies: list[float] = []
    failed: list[str] = []
    limits = httpx.Limits(max_connections=conversations + 10)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
        async def one() -> None:
            key = uuid.uuid4().hex
            for i in range(turns):
                body = {"model": "bot", "messages": [
                    {"role": "user", "content": f"What is the weather in Oslo? ({i})"}]}
                for attempt in range(5):
                    started = time.perf_counter()
                    try:
                        r = await client.post("/v1/chat/completions", json=body,
                                              headers={"X-Convo-Conversation": key})
                        break
                    except httpx.TimeoutException:
                        failed.append("no answer within 60 s")
                        return
                    except (httpx.ReadError, httpx.RemoteProtocolError):
                        # an idle keep-alive connection closed as it was reused: the request
                        # never reached the server (as serve_parts.load does)
                        if attempt == 4:
                            raise
                if r.status_code != 200:
                    failed.append(f"{r.status_code}: {r.text[:200]}")
                    return
                latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(conversations)))
        elapsed = time.perf_counter() - started
    latencies.sort()
    if not latencies:
        return {"p50_ms": float("nan"), "turns": 0, "failed": failed}
    return {"p50_ms": 1000 * statistics.median(latencies),
            "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
            "turns": len(latencies), "turns_per_s": len(latencies) / elapsed,
            "failed": failed}


def timed(server: Process, run: Any) -> dict[str, Any]:
    before = cpu_seconds(server.p.pid)
    row: dict[str, Any] = asyncio.run(run)
    after = cpu_seconds(server.p.pid)
    if before is not None and after is not None and row["turns"]:
        row["server_cpu_ms_per_turn"] = 1000 * (after - before) / row["turns"]
    return row


def latency(levels: list[int], rounds: int, folder: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with ExitStack() as stack:
        fakes = [Fake(), Fake()]
        for fake in fakes:
            stack.callback(fake.stop)
        served = convo_serve(fakes[0].base_url, f"sqlite:///{folder}/v1.db")
        stack.callback(served.stop)
        bare = floor(fakes[1].base_url)
        stack.callback(bare.stop)
        for level in levels:
            rows: dict[str, list[dict[str, Any]]] = {"convo /v1": [], "floor": []}
            for n in range(rounds):
                order = ["convo /v1", "floor"] if n % 2 == 0 else ["floor", "convo /v1"]
                for name in order:
                    if name == "floor":
                        rows[name].append(timed(bare, load([bare.url], level, TURNS)))
                    else:
                        rows[name].append(timed(served, load_v1(served.url, level, TURNS)))
            ratios = [c["p50_ms"] / f["p50_ms"] for c, f in zip(
                rows["convo /v1"], rows["floor"], strict=True)]
            out[str(level)] = {"rounds": rows, "ratio_p50": statistics.median(ratios)}
            print(f"{level:>4} concurrent: convo /v1 p50 "
                  f"{statistics.median(r['p50_ms'] for r in rows['convo /v1']):7.1f} ms, floor "
                  f"{statistics.median(r['p50_ms'] for r in rows['floor']):7.1f} ms, ratio "
                  f"{out[str(level)]['ratio_p50']:.2f}", flush=True)
    return out


def replay(messages: int, repeats: int) -> dict[str, Any]:
    """``Engine.adopted`` of a client history of ``messages`` messages (the bot's system
    prompt and tool calls are the template's own), in process on the memory store."""
    from serve_bot import template

    from convo import FunctionModel, Message, Runner
    from convo.serve._engine import Engine
    from convo.serve._stores import open_store

    history = [Message("user" if i % 2 == 0 else "assistant", f"message {i}")
               for i in range(messages)]
    engine = Engine(Runner(FunctionModel(lambda m, t: "unused"), template, raise_errors=False),
                    open_store("memory"))

    async def main() -> tuple[list[float], list[float]]:
        await engine.store.open()
        adopted, rebuilt = [], []
        for _ in range(repeats):  # interleaved: the machine's load weighs on both alike
            conversation = uuid.uuid4().hex
            started = time.perf_counter()
            async with engine.adopted(conversation, history):
                pass
            adopted.append(time.perf_counter() - started)
            stored = await engine.store.load(conversation)
            assert stored is not None
            started = time.perf_counter()
            await engine._rebuilt(stored)
            rebuilt.append(time.perf_counter() - started)
        return adopted, rebuilt

    adopted, rebuilt = asyncio.run(main())
    return {"messages": messages, "repeats": repeats,
            "p50_ms": 1000 * statistics.median(adopted),
            "rebuild_p50_ms": 1000 * statistics.median(rebuilt)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true",
                        help="1 and 50 concurrent (else 1, 50 and 200), 2 rounds each")
    parser.add_argument("--replay-only", action="store_true", help="only the replay")
    args = parser.parse_args()
    levels, rounds = ([1, 50], 2) if args.quick else ([1, 50, 200], 2)
    results: dict[str, Any] = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    results["replay_100"] = replay(100, 50 if args.quick else 200)
    print(f"replay of a 100-message history: p50 {results['replay_100']['p50_ms']:.2f} ms "
          f"(a served rebuild of the same conversation: "
          f"{results['replay_100']['rebuild_p50_ms']:.2f} ms)", flush=True)
    if not args.replay_only:
        with tempfile.TemporaryDirectory() as folder:
            results["latency"] = latency(levels, rounds, folder)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    if not args.replay_only:
        RESULTS.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
