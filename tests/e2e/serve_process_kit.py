"""Shared by the tests of this folder that run `convo serve` as real processes: ``Server`` (one
process on a free port, healthy before it is handed over), ``contents`` (a conversation's
messages' texts), ``post_in_background``/``wait_until`` (a message whose turn blocks, sent
from a process of its own, and a bounded wait for what it should have caused),
``killed_in_its_turn`` (a worker killed inside that turn) and
``retried_once_the_lease_lapses`` (a retry on another worker once the dead one's lease is
over)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import process_kit
from postgres_server import free_port

BOT = str(Path(__file__).resolve().parents[1] / "serve_fixtures" / "counting_bot.py")
WAIT_S = 30.0


class Server:
    """One `convo serve` process."""

    def __init__(self, store: str, workdir: Path, bot: str = BOT, *options: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY",
                                                                 "OPENAI_BASE_URL")}
        env["CONVO_TEST_DIR"] = str(workdir)
        self.log = workdir / f"serve-{self.port}.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "convo", "serve", bot, "--port", str(self.port),
                 "--store", store, *options], env=env, stdout=subprocess.DEVNULL, stderr=log)
        self.client = httpx.Client(base_url=self.url, timeout=WAIT_S)
        self._wait_until_healthy()

    def _wait_until_healthy(self) -> None:
        with httpx.Client(base_url=self.url, timeout=1.0) as probe:
            for _ in range(int(WAIT_S / 0.1)):
                if self.process.poll() is not None:
                    raise AssertionError(f"convo serve exited: {self.log.read_text()!r}")
                try:
                    if probe.get("/api/health").status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                try:
                    self.process.wait(timeout=0.1)
                except subprocess.TimeoutExpired:
                    pass
        raise AssertionError("convo serve did not become healthy")

    def post(self, path: str, body: dict[str, Any] | None = None) -> httpx.Response:
        return self.client.post(path, json=body or {})

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self.client.close()

    def stop(self) -> int | None:
        """Ctrl-C; the exit status."""
        process_kit.stop(self.process, WAIT_S)
        self.client.close()
        return self.process.returncode


def contents(server: Server, cid: str) -> list[str]:
    return [m["content"] for m in server.client.get(f"/api/conversations/{cid}").json()[
        "messages"]]


def post_in_background(url: str, cid: str, content: str,
                       print_status: bool = False) -> subprocess.Popen[str]:
    """A process of its own that sends ``content`` to conversation ``cid`` of the server at
    ``url`` (its turn may block as long as the bot likes); with ``print_status`` it prints the
    answer's status code on its stdout (a pipe), else its errors are dropped."""
    if print_status:
        return subprocess.Popen([sys.executable, "-c", (
            "import httpx,sys; print(httpx.post(sys.argv[1], json={'content': sys.argv[2]}, "
            "timeout=60).status_code)"), f"{url}/api/conversations/{cid}/messages", content],
            stdout=subprocess.PIPE, text=True)
    return subprocess.Popen([sys.executable, "-c", (
        "import httpx,sys; httpx.post(sys.argv[1], json={'content': sys.argv[2]}, timeout=60)"),
        f"{url}/api/conversations/{cid}/messages", content], stderr=subprocess.DEVNULL,
        text=True)


def wait_until(ready: Callable[[], bool], process: subprocess.Popen[str]) -> None:
    """Until ``ready()`` (checked every 0.05 s, waiting on ``process`` in between), for at most
    WAIT_S; the caller asserts what it needs afterwards."""
    for _ in range(int(WAIT_S / 0.05)):
        if ready():
            return
        try:
            process.wait(timeout=0.05)
        except subprocess.TimeoutExpired:
            pass


def retried_once_the_lease_lapses(server: Server, cid: str) -> httpx.Response:
    """Retry conversation ``cid`` on ``server`` until the dead worker's lease has lapsed (409
    until then, for at most WAIT_S): the answer, 200 asserted."""
    retried = server.post(f"/api/conversations/{cid}/retry")
    deadline = time.monotonic() + WAIT_S
    while retried.status_code == 409 and time.monotonic() < deadline:
        time.sleep(0.05)  # polling until the lease lapses, not timing the test
        retried = server.post(f"/api/conversations/{cid}/retry")
    assert retried.status_code == 200, retried.text
    return retried


def killed_in_its_turn(server: Server, sender: subprocess.Popen[str], workdir: Path) -> None:
    """SIGKILL ``server`` once the bot's turn has entered its gate (``workdir``/entered),
    then end ``sender``, the process whose message started the turn, and open the gate (for
    any process left behind)."""
    wait_until((workdir / "entered").exists, sender)
    assert (workdir / "entered").exists()
    server.kill()
    sender.kill()
    sender.wait()
    (workdir / "gate").touch()
