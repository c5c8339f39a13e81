"""Draws docs/telemetry-trace.png: the spans of one served turn as a trace waterfall, the way
Jaeger or Grafana Tempo show it (their servers cannot run here; this renders the very spans
convo emitted, collected in memory).

    python benchmarks/trace_picture.py      # needs the bench extra (matplotlib)

The turn: a served conversation (the app under uvicorn on 127.0.0.1, called with a
``traceparent``) whose model, ``OpenAIModel`` against the fake OpenAI server (replies delayed
like a real model's), looks up the weather twice and answers.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from convo import LinearTemplate, LoopTemplate, OpenAIModel, ToolingTemplate, UserTemplate, tool
from convo.serve import create_app
from convo.testing import OpenAIServer, SlowReply, captured_spans

PICTURE = Path(__file__).resolve().parent.parent / "docs" / "telemetry-trace.png"


@tool
def get_weather(city: str) -> str:
    """The current weather in a city."""
    time.sleep(0.12)  # a slow weather service
    return f"Sunny in {city}, 21 degrees."


TEMPLATE = LinearTemplate([LoopTemplate([UserTemplate(), ToolingTemplate([get_weather])])])
REPLIES = [SlowReply("{get_weather(city='Oslo')}{get_weather(city='Bergen')}", 0.45),
           SlowReply("Sunny in both, 21 degrees.", 0.6)]


def served_turn() -> list[Any]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    with OpenAIServer(REPLIES) as server, captured_spans() as spans, \
            OpenAIModel("gpt-4o-mini", base_url=server.base_url, api_key="-") as model:
        app = create_app(TEMPLATE, model)
        uv = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        thread = threading.Thread(target=uv.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        with httpx.Client(base_url=f"http://127.0.0.1:{sock.getsockname()[1]}") as client:
            conversation = client.post("/api/conversations", json={}).json()["id"]
            spans.clear()
            client.post(f"/api/conversations/{conversation}/messages",
                        json={"content": "Weather in Oslo and Bergen?"},
                        headers={"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-"
                                                "00f067aa0ba902b7-01"}, timeout=30)
        uv.should_exit = True
        thread.join(10)
    return sorted(spans, key=lambda s: s.start_time)


def draw(spans: list[Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    start = spans[0].start_time
    depth = {s.context.span_id: 0 for s in spans}
    for s in spans:
        if s.parent is not None and s.parent.span_id in depth:
            depth[s.context.span_id] = depth[s.parent.span_id] + 1
    colors = {"invoke_agent": "#5b8def", "chat": "#f2a541", "execute_tool": "#55b37a"}
    fig, ax = plt.subplots(figsize=(10, 0.55 * len(spans) + 1.2), dpi=110)
    for row, s in enumerate(spans):
        begin, took = (s.start_time - start) / 1e6, (s.end_time - s.start_time) / 1e6
        kind = str(s.attributes.get("gen_ai.operation.name"))
        ax.barh(row, took, left=begin, height=0.6, color=colors.get(kind, "#999"))
        label = f"{'   ' * depth[s.context.span_id]}{s.name}"
        ax.text(-0.36, row, label, ha="left", va="center", fontsize=9, family="monospace",
                transform=ax.get_yaxis_transform())
        detail = _detail(s)
        ax.text(begin + took + 8, row, f"{took:.0f} ms  {detail}", va="center", fontsize=8,
                color="#444")
    ax.set_yticks([])
    ax.invert_yaxis()
    ax.set_xlabel("ms since the turn began")
    ax.set_title("One served turn (POST …/messages with a traceparent): convo's spans",
                 fontsize=10)
    ax.spines[["top", "right", "left"]].set_visible(False)
    end = max((s.end_time - start) / 1e6 for s in spans)
    ax.set_xlim(0, end * 1.45)
    fig.subplots_adjust(left=0.3)
    fig.savefig(PICTURE)
    print(f"wrote {PICTURE}")


def _detail(span: Any) -> str:
    a = span.attributes
    if a.get("gen_ai.operation.name") == "chat":
        return (f"in {a.get('gen_ai.usage.input_tokens')} / out "
                f"{a.get('gen_ai.usage.output_tokens')} tokens, "
                f"{a.get('gen_ai.response.finish_reasons', ('?',))[0]}")
    if a.get("gen_ai.operation.name") == "execute_tool":
        return str(a.get("gen_ai.tool.call.id"))
    return f"conversation {str(a.get('gen_ai.conversation.id'))[:8]}…"


if __name__ == "__main__":
    draw(served_turn())
