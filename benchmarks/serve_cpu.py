"""CPU time per served turn in one process (issue 25): the app through ASGI
(``httpx.ASGITransport``, no sockets), SQLite (or ``--store memory``), the standard turn of
``serve_bot.py`` (a model call, the tool, a model call), five turns per conversation.

    python benchmarks/serve_cpu.py [--turns 3000] [--store sqlite|memory] [--inline]
                                   [--openai] [--rounds 5] [--face json|sse|agui|aisdk]
                                   [--while-busy queue|steer|...]

The model is a ``FunctionModel`` (convo's own cost, the HTTP client's included), or with
``--openai`` the real ``OpenAIModel`` against the fake model server in a process of its own
(``model_server.py``). CPU time is this process's (``time.process_time``): the figure other
processes on a shared machine disturb least. Prints each round's ms per turn and the median.

``--face``: how each turn is sent and read — ``json`` (the native JSON answer, the default),
``sse`` (the native API streamed: convo's SSE), ``agui`` (``POST /agui`` with the whole
history, as an AG-UI client sends it, and its events read back) or ``aisdk`` (``POST
/ai-sdk/chat`` with the whole chat as UI messages, as ``useChat`` sends it, its chunks read
back); the same bot, model and turns.

``--while-busy``: the server's default for messages sent while a turn runs (API.md §26,
``create_app(while_busy=…)``); each message is sent with it too. Nothing is ever queued (one
client, one turn at a time): it measures what the queue costs a turn when it is empty. Run
against an export of an earlier commit (``PYTHONPATH=that/export``) the same minutes to
compare; with an older convo the option is left out.

``--calls``: instead of CPU time, Python function calls per turn under ``cProfile`` (the calls
of ``2 × --turns`` turns less those of ``--turns`` turns): a count that a loaded machine does
not move. ``serve_cpu_pair.py`` runs this script under two Pythons (an earlier commit's venv
and this one's), alternating.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
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
    if args.while_busy is not None:
        return create_app(bot, model, store=store, while_busy=args.while_busy)
    return create_app(bot, model, store=store)


async def rounds(served: object, args: argparse.Namespace) -> list[float]:
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=served), base_url="http://t")

    async def turns(n: int) -> None:
        history: list[dict[str, object]] = []
        for i in range(n):
            if args.face == "agui":
                if i % 5 == 0:
                    cid, history = uuid.uuid4().hex, []
                history.append({"id": uuid.uuid4().hex, "role": "user", "content": "Hi"})
                r = await client.post("/agui", json={"threadId": cid, "runId": str(i),
                                                     "messages": history, "tools": []})
                assert r.status_code == 200, r.text
                history += _agui_messages(r.text)
                continue
            if args.face == "aisdk":
                if i % 5 == 0:
                    cid, history = uuid.uuid4().hex, []
                history.append({"id": uuid.uuid4().hex, "role": "user",
                                "parts": [{"type": "text", "text": "Hi"}]})
                r = await client.post("/ai-sdk/chat", json={
                    "id": cid, "messages": history, "trigger": "submit-message"})
                assert r.status_code == 200, r.text
                history.append(_ui_message(r.text))
                continue
            if i % 5 == 0:
                cid = (await client.post("/api/conversations", json={})).json()["id"]
            headers = {"Accept": "text/event-stream"} if args.face == "sse" else {}
            body = {"content": "Hi"} if args.while_busy is None else {
                "content": "Hi", "while_busy": args.while_busy}
            r = await client.post(f"/api/conversations/{cid}/messages", json=body,
                                  headers=headers)
            assert r.status_code == 200, r.text
            if args.face == "sse":  # read as a client does: each event's JSON
                shown = [json.loads(line[6:]) for line in r.text.splitlines()
                         if line.startswith("data: ")]
                assert "added" in shown[-1], r.text

    async with served.router.lifespan_context(served):  # type: ignore[attr-defined]
        await turns(100)  # warm up
        if args.calls:  # function calls per turn: 2N turns less N turns, under cProfile
            counted = []
            for n in (args.turns, 2 * args.turns):
                profile = cProfile.Profile()
                profile.enable()
                await turns(n)
                profile.disable()
                counted.append(sum(s[1] for s in profile.getstats()))
            await client.aclose()
            return [(counted[1] - counted[0]) / args.turns]
        out = []
        for _ in range(args.rounds):
            started = time.process_time()
            await turns(args.turns)
            out.append(1000 * (time.process_time() - started) / args.turns)
    await client.aclose()
    return out


def _agui_messages(text: str) -> list[dict[str, object]]:
    """The messages an AG-UI client keeps from a run's events (its next run sends them)."""
    kept: dict[str, dict[str, object]] = {}
    for line in text.splitlines():
        if not line.startswith("data: "):
            continue
        event = json.loads(line[6:])
        kind = event["type"]
        if kind == "TEXT_MESSAGE_CONTENT":
            said = kept.setdefault(event["messageId"], {"id": event["messageId"],
                                                        "role": "assistant", "content": ""})
            said["content"] = f"{said['content']}{event['delta']}"
        elif kind == "TOOL_CALL_START":
            asked = kept.setdefault(event["parentMessageId"], {
                "id": event["parentMessageId"], "role": "assistant"})
            asked.setdefault("toolCalls", []).append(  # type: ignore[union-attr]
                {"id": event["toolCallId"], "type": "function",
                 "function": {"name": event["toolCallName"], "arguments": "{}"}})
        elif kind == "TOOL_CALL_RESULT":
            kept[event["messageId"]] = {"id": event["messageId"], "role": "tool",
                                        "toolCallId": event["toolCallId"],
                                        "content": event["content"]}
        elif kind == "RUN_ERROR":
            raise AssertionError(event)
    return list(kept.values())


def _ui_message(text: str) -> dict[str, object]:
    """The UI message ``useChat`` keeps from a reply's chunks (its next request sends it)."""
    message: dict[str, object] = {"role": "assistant", "parts": []}
    parts: list[dict[str, object]] = message["parts"]  # type: ignore[assignment]
    for line in text.splitlines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        chunk = json.loads(line[6:])
        kind = chunk["type"]
        if kind == "start":
            message["id"] = chunk["messageId"]
        elif kind == "start-step":
            parts.append({"type": "step-start"})
        elif kind == "text-start":
            parts.append({"type": "text", "text": ""})
        elif kind == "text-delta":
            parts[-1]["text"] = f"{parts[-1]['text']}{chunk['delta']}"
        elif kind == "tool-input-available":
            parts.append({"type": f"tool-{chunk['toolName']}", "toolCallId": chunk["toolCallId"],
                          "state": "input-available", "input": chunk["input"]})
        elif kind == "tool-output-available":
            part = next(p for p in parts if p.get("toolCallId") == chunk["toolCallId"])
            part.update(state="output-available", output=chunk["output"])
        elif kind == "error":
            raise AssertionError(chunk)
    return message


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--store", choices=("sqlite", "memory"), default="sqlite")
    parser.add_argument("--inline", action="store_true", help="the tool marked inline=True")
    parser.add_argument("--openai", action="store_true", help="OpenAIModel, fake server")
    parser.add_argument("--face", choices=("json", "sse", "agui", "aisdk"), default="json",
                        help="the native JSON answer, convo's SSE, AG-UI or the AI SDK")
    parser.add_argument("--while-busy", choices=("reject", "queue", "interrupt", "steer"),
                        default=None, help="the server's and each message's while_busy")
    parser.add_argument("--calls", action="store_true",
                        help="count Python function calls per turn (cProfile) instead")
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
    if args.calls:
        print(f"Python function calls per served turn: {ms[0]:.1f}")
        return
    print(f"CPU per served turn: {' '.join(f'{m:.3f}' for m in ms)} ms; "
          f"median {statistics.median(ms):.3f} ms")


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    main()
