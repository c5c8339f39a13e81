"""CPU time per served turn in one process (issue 25): the app through ASGI
(``httpx.ASGITransport``, no sockets), SQLite (or ``--store memory``), the standard turn of
``serve_bot.py`` (a model call, the tool, a model call), five turns per conversation.

    python benchmarks/serve_cpu.py [--turns 3000] [--store sqlite|memory] [--inline]
                                   [--openai] [--rounds 5]

The model is a ``FunctionModel`` (convo's own cost, the HTTP client's included), or with
``--openai`` the real ``OpenAIModel`` against the fake model server in a process of its own
(``model_server.py``). CPU time is this process's (``time.process_time``): the figure other
processes on a shared machine disturb least. Prints each round's ms per turn and the median.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent


def reply(messages: list, tools: object) -> str:
    return "It is sunny." if messages[-1].role == "tool" else "{get_weather(city='Oslo')}"


def app(args: argparse.Namespace, base_url: str | None) -> object:
    import serve_bot

    from convo import FunctionModel, OpenAIModel
    from convo.serve import create_app

    store = f"sqlite:///{tempfile.mkdtemp()}/cpu.db" if args.store == "sqlite" else "memory"
    model = OpenAIModel("bench-model", base_url=base_url, api_key="x", start_wait=0) \
        if base_url else FunctionModel(reply)
    bot = serve_bot.inline_template if args.inline else serve_bot.template
    return create_app(bot, model, store=store)


async def rounds(served: object, args: argparse.Namespace) -> list[float]:
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=served), base_url="http://t")

    async def turns(n: int) -> None:
        for i in range(n):
            if i % 5 == 0:
                cid = (await client.post("/api/conversations", json={})).json()["id"]
            r = await client.post(f"/api/conversations/{cid}/messages", json={"content": "Hi"})
            assert r.status_code == 200, r.text

    async with served.router.lifespan_context(served):  # type: ignore[attr-defined]
        await turns(100)  # warm up
        out = []
        for _ in range(args.rounds):
            started = time.process_time()
            await turns(args.turns)
            out.append(1000 * (time.process_time() - started) / args.turns)
    await client.aclose()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--store", choices=("sqlite", "memory"), default="sqlite")
    parser.add_argument("--inline", action="store_true", help="the tool marked inline=True")
    parser.add_argument("--openai", action="store_true", help="OpenAIModel, fake server")
    args = parser.parse_args()
    fake = None
    if args.openai:
        fake = subprocess.Popen([sys.executable, str(HERE / "model_server.py")], cwd=HERE,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert fake.stdout is not None
    try:
        base_url = fake.stdout.readline().strip() if fake and fake.stdout else None
        os.environ.pop("OPENAI_API_KEY", None)
        ms = asyncio.run(rounds(app(args, base_url), args))
    finally:
        if fake is not None and fake.stdin is not None:
            fake.stdin.close()
            fake.wait()
    print(f"CPU per served turn: {' '.join(f'{m:.3f}' for m in ms)} ms; "
          f"median {statistics.median(ms):.3f} ms")


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    main()
