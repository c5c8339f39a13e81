"""docs/models.md's provider of one's own (the ``python acme.py`` block), taken from the page
as it is and run against a fake Acme server on 127.0.0.1: in the runner, through
``convo run --model acme:parrot-1`` from a bot file that registers it, recorded and replayed,
served by ``convo serve``, and evaluated by ``convo eval``."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_readme import code_blocks

from convo import Runner, ScriptedInterface, Usage
from convo._reply import Finish
from convo.models import resolve
from convo.models._providers import _registered
from convo.testing import ReplayModel

ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 30.0

TEMPLATE = '''

from convo import LoopTemplate, ToolingTemplate, UserTemplate, tool


@tool
def shout(text: str) -> str:
    """Say it loudly.

    Args:
        text: What to say.
    """
    return text.upper()


template = LoopTemplate([UserTemplate(), ToolingTemplate([shout])])
demo_input = ["hello there"]
'''


def provider_block() -> str:
    text = (ROOT / "docs" / "models.md").read_text(encoding="utf-8")
    [code] = [code for _, info, code in code_blocks(text) if info == "python acme.py"]
    return code


class AcmeServer:
    """The made-up Acme API: a call of the first tool offered for a user's turn, then
    ``Parrot: <tool result>``; token counts with a cache read."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        bodies = self.bodies

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                bodies.append(body)
                last = body["turns"][-1]
                if last["role"] == "user" and body["tools"]:
                    said = {"text": "", "stop": "tool", "calls": [
                        {"id": f"c{len(bodies)}", "name": body["tools"][0]["name"],
                         "args": {"text": last["text"]}}]}
                else:
                    said = {"text": f"Parrot: {last['text']}", "stop": "done", "calls": []}
                said |= {"id": f"acme-{len(bodies)}",
                         "tokens": {"in": 40, "out": 5, "cached": 32}}
                data = json.dumps(said).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()
        self.thread.join()


@pytest.fixture
def acme(monkeypatch: pytest.MonkeyPatch) -> Iterator[AcmeServer]:
    server = AcmeServer()
    monkeypatch.setenv("ACME_URL", server.url)
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(key, raising=False)
    try:
        yield server
    finally:
        server.close()
        _registered.pop("acme", None)


@pytest.fixture
def bot(tmp_path: Path) -> Path:
    path = tmp_path / "bot.py"
    path.write_text(provider_block() + TEMPLATE, encoding="utf-8")
    return path


def _load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location("acme_bot", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _convo(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "convo", *args], cwd=cwd, env=dict(os.environ),
                          capture_output=True, text=True, timeout=WAIT_S, check=False)


def test_the_block_is_a_complete_provider_in_at_most_60_lines() -> None:
    code = provider_block()
    assert len(code.splitlines()) <= 60
    assert 'register("acme", AcmeModel)' in code


def test_it_runs_in_the_runner(acme: AcmeServer, bot: Path) -> None:
    module = _load(bot)
    model = resolve("acme:parrot-1")
    session = Runner(model, module.template, ScriptedInterface(["hello there"])).run()
    assert [(m.role, m.text) for m in session.messages] == [
        ("user", "hello there"), ("assistant", ""), ("tool", "HELLO THERE"),
        ("assistant", "Parrot: HELLO THERE")]
    reply = session.messages[-1]
    assert (reply.finish, dict(reply.provider)) == (Finish.STOP, {"acme_id": "acme-2"})
    assert session.messages[1].finish is Finish.TOOL_CALLS
    assert session.outcome is not None
    assert session.outcome.usage == Usage(80, 10, 90, cache_read_tokens=64)
    assert [b["model"] for b in acme.bodies] == ["parrot-1", "parrot-1"]
    assert acme.bodies[0]["tools"][0]["name"] == "shout"


def test_convo_run_records_and_replay_answers_without_the_server(
        acme: AcmeServer, bot: Path, tmp_path: Path) -> None:
    done = _convo("run", str(bot), "--model", "acme:parrot-1", "--demo", "--no-log",
                  "--save", "t.jsonl", "--record", "rec.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "model parrot-1 from the acme: provider" in done.stderr
    assert "Parrot: HELLO THERE" in done.stdout
    lines = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    outcome = next(line["outcome"] for line in lines if line.get("outcome"))
    assert outcome["usage"] == {"prompt_tokens": 80, "completion_tokens": 10,
                                "total_tokens": 90, "unreported": 0,
                                "cache_read_tokens": 64}
    asked = len(acme.bodies)
    assert asked == 2
    module = _load(bot)
    session = Runner(ReplayModel(tmp_path / "rec.json"), module.template,
                     ScriptedInterface(["hello there"])).run()
    assert session.messages[-1].text == "Parrot: HELLO THERE"
    assert session.messages[-1].provider == {"acme_id": "acme-2"}
    assert len(acme.bodies) == asked  # replayed: the server was not asked again


def test_convo_serve_serves_it(acme: AcmeServer, bot: Path, tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    log = tmp_path / "serve.log"
    with open(log, "wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "convo", "serve", str(bot), "--model", "acme:parrot-1",
             "--port", str(port), "--store", "memory"], cwd=tmp_path,
            stdout=subprocess.DEVNULL, stderr=err)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=WAIT_S) as client:
            _wait_healthy(client, process, log)
            cid = client.post("/api/conversations", json={}).json()["id"]
            client.post(f"/api/conversations/{cid}/messages", json={"content": "hi acme"})
            messages = client.get(f"/api/conversations/{cid}").json()["messages"]
        assert [m["content"] for m in messages][-1] == "Parrot: HI ACME"
    finally:
        process.terminate()
        process.wait(timeout=WAIT_S)
    assert "model parrot-1 from the acme: provider" in log.read_text()


def _wait_healthy(client: httpx.Client, process: subprocess.Popen[bytes], log: Path) -> None:
    for _ in range(int(WAIT_S / 0.1)):
        if process.poll() is not None:
            raise AssertionError(f"convo serve exited: {log.read_text()!r}")
        try:
            if client.get("/api/health", timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        try:
            process.wait(timeout=0.1)
        except subprocess.TimeoutExpired:
            pass
    raise AssertionError("convo serve did not become healthy")


def test_convo_eval_evaluates_it(acme: AcmeServer, bot: Path, tmp_path: Path) -> None:
    (tmp_path / "evals.yaml").write_text(
        "scenarios:\n"
        "  - name: parrots\n"
        "    user: [\"polly\"]\n"
        "    checks:\n"
        "      tools_called: [shout]\n"
        "      reply_matches: \"Parrot: POLLY\"\n", encoding="utf-8")
    done = _convo("eval", str(bot), "evals.yaml", "--model", "acme:parrot-1",
                  "--json", "out.json", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    [result] = json.loads((tmp_path / "out.json").read_text())["scenarios"]
    assert (result["passes"], result["runs"], result["tokens"]) == (1, 1, 90)
    assert result["cache_read_tokens"] == 64 and "reasoning_tokens" not in result
    header, row = done.stdout.splitlines()[:2]
    assert header.split() == ["scenario", "passes", "pass", "rate", "model", "calls", "tokens",
                              "cache", "reads"]
    assert row.split() == ["parrots", "1/1", "100%", "2.0", "90", "64"]
