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
import gc
import json
import os
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
            out[str(level)] = {"rounds": rows, "ratio_p50": statistics.median(ratios),
                               "ratios": ratios, "load_average": os.getloadavg()[0]}
            print(f"{level:>4} concurrent: convo /v1 p50 "
                  f"{statistics.median(r['p50_ms'] for r in rows['convo /v1']):7.1f} ms, floor "
                  f"{statistics.median(r['p50_ms'] for r in rows['floor']):7.1f} ms, ratio "
                  f"{out[str(level)]['ratio_p50']:.2f} (rounds: "
                  f"{', '.join(f'{r:.2f}' for r in ratios)}; load average "
                  f"{os.getloadavg()[0]:.1f})", flush=True)
    return out


def _request(messages: int) -> bytes:
    """A stateless Chat Completions request: a ``messages``-message client history (user
    and assistant in turn, as the bot's turns answered) and the user's new message."""
    history = [{"role": "user" if i % 2 == 0 else "assistant",
                "content": f"message {i}: " + "about the weather in Oslo today. " * 3}
               for i in range(messages)]
    return json.dumps({"model": "bot", "messages": [
        *history, {"role": "user", "content": "And tomorrow?"}]}).encode()


def _replayed(url: str, raw: bytes, messages: int, repeats: int
              ) -> dict[str, list[tuple[float, float]]]:
    """On the store at ``url``: (wall, CPU) seconds of each reading, replay and rebuild."""
    from serve_bot import template
    from starlette.requests import Request

    from convo import FunctionModel, Runner
    from convo.serve._engine import Engine
    from convo.serve._http.openai_asks import chat_ask
    from convo.serve._stores import open_store

    request = Request({"type": "http", "method": "POST", "path": "/v1/chat/completions",
                       "headers": []})
    engine = Engine(Runner(FunctionModel(lambda m, t: "unused"), template,
                           raise_errors=False), open_store(url))
    times: dict[str, list[tuple[float, float]]] = {"read": [], "replay": [], "rebuild": []}

    def timed(what: str, started: tuple[float, float]) -> None:
        times[what].append((time.perf_counter() - started[0], time.thread_time() - started[1]))

    async def main() -> None:
        await engine.store.open()
        for n in range(repeats + 10):  # the first 10 warm up
            gc.collect()
            started = time.perf_counter(), time.thread_time()
            ask = chat_ask(request, json.loads(raw), 1 << 20)
            timed("read", started)
            conversation = uuid.uuid4().hex
            started = time.perf_counter(), time.thread_time()
            async with engine.adopted(conversation, ask.history):
                pass
            timed("replay", started)
            stored = await engine.store.load(conversation)
            assert stored is not None and len(stored.messages) == messages + 1
            engine._cache.pop(conversation, None)  # (a rebuild on another worker)
            started = time.perf_counter(), time.thread_time()
            await engine._rebuilt(stored)
            timed("rebuild", started)
            engine._cache.pop(conversation, None)
            if n < 10:
                for kept in times.values():
                    kept.clear()
        await engine.store.close()

    asyncio.run(main())
    return times


def replay(messages: int, repeats: int, folder: str) -> dict[str, Any]:
    """Per store (memory, SQLite): reading the request (JSON, then the face's own reading
    into an ``Ask``), then ``Engine.adopted`` of the history it holds (the stateless replay:
    the served rebuild's replay over the client's messages, then the conversation stored),
    and a served rebuild of the conversation so stored; in turns, wall and CPU time."""
    raw = _request(messages)
    out: dict[str, Any] = {"messages": messages, "repeats": repeats}
    for store_name, url in (("memory", "memory"), ("sqlite", f"sqlite:///{folder}/replay.db")):
        row: dict[str, Any] = {}
        for what, pairs in _replayed(url, raw, messages, repeats).items():
            for i, kind in ((0, "wall"), (1, "cpu")):
                values = sorted(1000 * p[i] for p in pairs)
                q1, q2, q3 = statistics.quantiles(values, n=4)
                row[f"{what}_{kind}_ms"] = {"p50": q2, "q1": q1, "q3": q3}
        out[store_name] = row
    return out


def _said_replay(result: dict[str, Any]) -> None:
    for store in ("memory", "sqlite"):
        row = result[store]
        print(f"{store:>6}: " + "; ".join(
            f"{what} {row[f'{what}_wall_ms']['p50']:.2f} ms wall "
            f"(IQR {row[f'{what}_wall_ms']['q1']:.2f}–{row[f'{what}_wall_ms']['q3']:.2f}), "
            f"{row[f'{what}_cpu_ms']['p50']:.2f} ms CPU"
            for what in ("read", "replay", "rebuild")), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true",
                        help="1 and 50 concurrent (else 1, 50 and 200), 2 rounds each")
    parser.add_argument("--replay-only", action="store_true", help="only the replay")
    parser.add_argument("--rounds", type=int, help="AB BA rounds per level (default 6; 2 quick)")
    parser.add_argument("--levels", help="concurrent conversations, comma-separated")
    args = parser.parse_args()
    levels, rounds = ([1, 50], 2) if args.quick else ([1, 50, 200], 6)
    rounds = args.rounds or rounds
    if args.levels:
        levels = [int(n) for n in args.levels.split(",")]
    results: dict[str, Any] = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    with tempfile.TemporaryDirectory() as folder:
        results["replay_100"] = replay(100, 50 if args.quick else 300, folder)
    print(f"a 100-message history (load average {os.getloadavg()[0]:.1f}):", flush=True)
    _said_replay(results["replay_100"])
    if not args.replay_only:
        with tempfile.TemporaryDirectory() as folder:
            results["latency"] = latency(levels, rounds, folder)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    if not args.replay_only:
        RESULTS.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
