"""``--model smoke``: every command the README and the docs give for trying convo without a key
runs, as written, in a real ``convo`` process (piped), and does what the docs say: MCP tools
called, the Responses API's reasoning shown, a served conversation, an eval's cassette."""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "docs" / "cli.md", ROOT / "docs" / "testing.md"]
TIMEOUT = 120

RUN = "convo run examples/mcp_units_bot.py --model smoke"
CHAT = "convo chat --model smoke --api responses --reasoning low"
SERVE = "convo serve examples/mcp_units_bot.py --model smoke"
EVAL = ("convo eval examples/refund_bot.py examples/refund_bot.eval.yaml --model smoke "
        "--cassette smoke.cassette")


def documented() -> set[str]:
    """The concrete ``--model smoke`` commands of the pages (inline code or a bash block)."""
    found = set()
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        prose = re.sub(r"^\s*```.*?^\s*```", "", text, flags=re.M | re.S)
        flat = re.sub(r"\s*\n\s*", " ", prose)  # inline code may wrap
        found |= {m.removeprefix(".venv/bin/") for m in re.findall(r"`([^`]+)`", flat)
                  if "--model smoke" in m and m.split()[0].endswith("convo")}
        found |= {line.strip() for line in text.splitlines()
                  if line.strip().startswith("convo ") and "--model smoke" in line}
    return {c for c in found if not re.search(r"\b[A-Z]{2,}\b", c)}  # no FILE placeholders


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A folder whose ``examples`` are the repository's, and a home of its own."""
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    return tmp_path


def convo(command: str, cwd: Path, stdin: str = "", *, exits: int | None = None
          ) -> subprocess.CompletedProcess[str]:
    """``command`` run in ``cwd`` with ``stdin``; with ``exits``, its exit status asserted."""
    done = subprocess.run([sys.executable, "-m", *shlex.split(command)], cwd=cwd,
                          env=_env(cwd), input=stdin, capture_output=True, text=True,
                          timeout=TIMEOUT, check=False)
    if exits is not None:
        assert done.returncode == exits, done.stderr
    return done


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env.update(HOME=str(home), CONVO_HOME=str(home / "home"), NO_COLOR="1",
               PYTHONIOENCODING="utf-8")
    return env


def test_the_docs_give_these_commands() -> None:
    assert documented() == {RUN, CHAT, SERVE, EVAL}


def test_run_calls_the_tools_of_an_mcp_server(workdir: Path) -> None:
    done = convo(RUN, workdir, stdin="How far is a marathon?\n", exits=0)
    assert "--model smoke: an offline stand-in that calls the tools it is given" in done.stderr
    assert "  ↳ units_units: km mi kg lb C F\n" in done.stdout
    assert "Assistant: SmokeModel called 2 tools:\n" in done.stdout
    assert re.search(r"\(\d+ tokens in, \d+ out\)", done.stdout)


def test_chat_on_the_responses_api_shows_the_reasoning(workdir: Path) -> None:
    done = convo(CHAT, workdir, stdin="hello\n", exits=0)
    assert "(Responses API)" in done.stderr
    assert "Thinking: SmokeModel thinks about call 1.\n" in done.stdout
    assert "Assistant: SmokeModel reply 1.\n" in done.stdout


def test_serve_answers_with_the_tools_called(workdir: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-m", *shlex.split(SERVE), "--port", str(port)],
                               cwd=workdir, env=_env(workdir), stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=TIMEOUT) as client:
            deadline = time.monotonic() + TIMEOUT
            while True:  # readiness: the health route answers
                assert process.poll() is None, process.communicate()[1]
                try:
                    if client.get("/api/health").status_code == 200:
                        break
                except httpx.TransportError:
                    assert time.monotonic() < deadline, "convo serve did not start"
                    try:
                        process.wait(0.1)
                    except subprocess.TimeoutExpired:
                        pass
            cid = client.post("/api/conversations", json={}).json()["id"]
            answer = client.post(f"/api/conversations/{cid}/messages", json={"content": "hi"})
        assert answer.status_code == 200, answer.text
        said = [m["content"] for m in answer.json()["added"]]
        assert said[-1].startswith("SmokeModel called 2 tools:\n")
        assert said[-1].endswith("\n- units_units({}) -> km mi kg lb C F")
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=TIMEOUT)


def test_eval_records_a_cassette_and_replays_it(workdir: Path) -> None:
    first = convo(EVAL, workdir)
    assert first.returncode == 1, first.stderr  # SmokeModel is not the refund bot's model
    assert "4 scenarios, 5 runs" in first.stdout
    recorded = re.search(r"cassette smoke\.cassette: replayed 0 model calls, recorded (\d+) "
                         r"\(a new cassette\)", first.stderr)
    assert recorded is not None, first.stderr
    again = convo(EVAL, workdir)
    assert again.stderr == f"convo: cassette smoke.cassette: replayed {recorded[1]} model calls\n"
