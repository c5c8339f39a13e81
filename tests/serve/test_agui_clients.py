"""The AG-UI face with the real JavaScript client (API.md §24): `@ag-ui/client`'s HttpAgent runs
a thread against `convo serve` on a free port, is interrupted by an approval, resumes it, and
the thread then continues over the JSON API — and after a restart of the server (SQLite)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import process_kit
import pytest
from node_clients import run_node
from serve_kit import ROOT, free_port, healthy

pytestmark = pytest.mark.e2e  # a server process and node

BOT = str(ROOT / "tests" / "serve_fixtures" / "agui_bot.py")

SCRIPT = """
import { HttpAgent } from "@ag-ui/client";
const [url, threadId] = process.argv.slice(2);
const agent = new HttpAgent({ url: url + "/agui", threadId });
const seen = [];
const subscriber = { onEvent: ({ event }) => { seen.push(event.type); } };
const say = (id, content) => agent.addMessage({ id, role: "user", content });
const runs = [];
say("u1", "hello");
await agent.runAgent({ runId: "run-1" }, subscriber);
runs.push({ events: seen.splice(0), pending: agent.pendingInterrupts.length });
say("u2", "refund B2");
await agent.runAgent({ runId: "run-2" }, subscriber);
const interrupts = agent.pendingInterrupts.map((i) => ({ id: i.id, reason: i.reason }));
runs.push({ events: seen.splice(0), interrupts });
await agent.runAgent({ runId: "run-3", resume: interrupts.map((i) => ({
  interruptId: i.id, status: "resolved", payload: { approve: true } })) }, subscriber);
runs.push({ events: seen.splice(0), pending: agent.pendingInterrupts.length });
const messages = agent.messages.map((m) => ({ id: m.id, role: m.role,
  content: m.content ?? null, toolCallId: m.toolCallId ?? null }));
console.log(JSON.stringify({ runs, messages }));
"""


class Server:
    """`convo serve` of the AG-UI bot on a free port, stopped by the test that started it."""

    def __init__(self, store: str, log: Path) -> None:
        self.url = f"http://127.0.0.1:{free_port()}"
        env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY",
                                                                 "CONVO_SERVE_TOKEN")}
        with open(log, "ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "convo", "serve", BOT, "--port",
                 self.url.rsplit(":", 1)[1], "--store", store],
                env=env, stdout=subprocess.DEVNULL, stderr=out)
        with httpx.Client(base_url=self.url) as probe:
            if not healthy(self.process, probe, log, 60):
                raise AssertionError("convo serve did not become healthy")

    def stop(self) -> None:
        process_kit.stop(self.process, 30)


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for server in started:
        server.stop()


def test_http_agent_runs_is_interrupted_resumes_and_the_thread_goes_on_natively(
        tmp_path: Path, servers: list[Server]) -> None:
    store = f"sqlite:///{tmp_path}/agui.db"
    servers.append(Server(store, tmp_path / "serve.log"))
    found = run_node(SCRIPT, servers[0].url, "thread-7")
    first, asked, resumed = found["runs"]
    assert first == {"events": ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
                                "TEXT_MESSAGE_END", "RUN_FINISHED"], "pending": 0}
    assert asked["interrupts"] == [{"id": "call_1", "reason": "tool_approval"}]
    assert asked["events"][-1] == "RUN_FINISHED"
    assert "TOOL_CALL_RESULT" in resumed["events"] and resumed["pending"] == 0
    shown = httpx.get(servers[0].url + "/api/conversations/thread-7").json()["messages"]
    assert [m["id"] for m in shown[1:]] == [m["id"] for m in found["messages"]]
    assert [m["content"] for m in shown[1:]] == [
        "hello", "You said 'hello'", "refund B2", "", "refunded B2", "Done: refunded B2",
        "Finished"]
    servers[0].stop()
    servers.append(Server(store, tmp_path / "serve.log"))  # a restart: rebuilt from the store
    answer = httpx.post(servers[1].url + "/api/conversations/thread-7/messages",
                        json={"content": "thanks"}, timeout=30)
    assert answer.status_code == 200, answer.text
    assert [m["content"] for m in answer.json()["added"]] == ["thanks", "You said 'thanks'"]
    assert json.dumps(answer.json()["messages"][:8]) == json.dumps(shown)
