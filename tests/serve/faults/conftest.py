"""The fault-injection suite's fixtures: `convo serve` processes of ``gated_bot.py`` (a model
and a tool held at a gate), killed with SIGKILL, started with a file-size limit (a full disk
for SQLite), and a throwaway Postgres (``postgres``, from tests/serve/conftest.py) whose
backends are terminated or which is stopped and started again."""

from __future__ import annotations

import concurrent.futures
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

BOT = str(Path(__file__).resolve().parents[2] / "serve_fixtures" / "gated_bot.py")
WAIT_S = 30.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Worker:
    """One `convo serve` process of the gated bot; its stderr in ``log``."""

    def __init__(self, folder: Path, store: str, *options: str,
                 file_size: int | None = None) -> None:
        self.folder = folder
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items()
               if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CONVO_SERVE_TOKEN")}
        env["CONVO_TEST_DIR"] = str(folder)
        self.log = folder / f"serve-{self.port}.log"

        def limit() -> None:  # a full disk: no file of this process grows past file_size
            if file_size is not None:
                resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))

        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "convo", "serve", BOT, "--port", str(self.port),
                 "--store", store, *options], env=env, stdout=subprocess.DEVNULL, stderr=log,
                preexec_fn=limit)
        self.client = httpx.Client(base_url=self.url, timeout=WAIT_S)
        self.pool = concurrent.futures.ThreadPoolExecutor(4)
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"convo serve exited: {self.log.read_text()!r}")
            try:
                if self.client.get("/api/health").status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.05)  # polling until the server listens
        raise AssertionError("convo serve did not become healthy")

    def post(self, path: str, body: dict[str, Any] | None = None, **kw: Any) -> httpx.Response:
        return self.client.post(path, json=body or {}, **kw)

    def later(self, method: str, path: str, body: dict[str, Any] | None = None,
              **kw: Any) -> concurrent.futures.Future[httpx.Response]:
        """A request on its own connection, in a thread: its answer when it comes."""
        def send() -> httpx.Response:
            with httpx.Client(base_url=self.url, timeout=WAIT_S) as client:
                return client.request(method, path, json=body, **kw)

        return self.pool.submit(send)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=WAIT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.client.close()
        self.pool.shutdown(wait=False, cancel_futures=True)


def _until(check: Callable[[], Any], what: str) -> Any:
    """Poll ``check`` until it gives something true (at most WAIT_S): what it gave."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.02)  # polling for a state the test waits for, not timing it
    raise AssertionError(f"gave up waiting for {what}")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
def serve(folder: Path) -> Iterator[Callable[..., Worker]]:
    """Start workers of the gated bot (``serve(store, *options, file_size=None)``); all are
    stopped after the test."""
    workers: list[Worker] = []

    def start(store: str, *options: str, file_size: int | None = None) -> Worker:
        worker = Worker(folder, store, *options, file_size=file_size)
        workers.append(worker)
        return worker

    yield start
    (folder / "gate").touch()  # nothing stays held at the gate
    for worker in workers:
        worker.stop()


@pytest.fixture
def entered(folder: Path) -> Callable[[], None]:
    """Wait until a gated call started."""
    return lambda: _until((folder / "entered").exists, "a gated call to start")


@pytest.fixture
def calls(folder: Path) -> Callable[[], list[str]]:
    """The calls the bot saw so far, a line each."""
    path = folder / "calls.txt"
    return lambda: path.read_text().splitlines() if path.exists() else []


@pytest.fixture
def until() -> Callable[[Callable[[], Any], str], Any]:
    """Poll a check until it gives something true (at most 30 s): what it gave."""
    return _until
