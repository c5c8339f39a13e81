"""A small bot for the Temporal tests, and a worker of it in this process; the gated bot's
`convo worker` and `convo serve --engine temporal://…` processes, and the pair of them that the
tests without a fault of their own share (``Gated``: the ``gated`` fixture)."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import pytest
from refund_bot import TEMPLATE, refund  # noqa: F401  (refund: for the tests)

from convo import FunctionModel, Message, ModelError
from convo._runner import Runner
from convo.serve._stores import open_store

_queues = itertools.count()
ROOT = Path(__file__).resolve().parents[2]
GATED_BOT = ROOT / "tests" / "serve_fixtures" / "gated_bot.py"


class Counted:
    """The bot's model: its replies by the last message, and every call it was asked."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, messages: Sequence[Message], tools: Any) -> str:
        last = messages[-1]
        self.calls.append(last.content if isinstance(last.content, str) else "")
        if last.role == "tool":
            return f"Done: {last.content} {{finish()}}"
        if last.content.startswith("refund "):
            return f"{{refund(order='{last.content[7:]}')}}"
        if last.content == "tools?":
            return ", ".join(sorted(_name(t) for t in tools))
        if last.content.startswith("fail"):
            raise ModelError("the model server answered 500")
        return f"You said {last.content[:20]!r}"


def _name(tool: Any) -> str:
    return str(tool["function"]["name"] if "function" in tool else tool["name"])




@contextlib.asynccontextmanager
async def worker(address: str, tmp_path: Path, **bot: Any
                 ) -> AsyncIterator[tuple[Any, str, Any, Counted]]:
    """A client, the task queue, the store and the model of a worker of the bot, running."""
    from temporalio.client import Client

    from convo._temporal.bots import Bot
    from convo._temporal.worker import running

    counted = Counted()
    store = open_store(f"sqlite:///{tmp_path / 'convo.db'}")
    await store.open()
    client = await Client.connect(address)
    queue = bot.pop("queue", None) or f"q{next(_queues)}-{tmp_path.name}"
    runner = Runner(FunctionModel(bot.pop("model", counted)), bot.pop("template", TEMPLATE),
                    raise_errors=False, **bot.pop("runner", {}))
    try:
        async with running(client, Bot(runner, store, **bot), task_queue=queue):
            yield client, queue, store, counted
    finally:
        await store.close()


async def start(client: Any, queue: str, conversation_id: str) -> Any:
    return await client.start_workflow("ConvoConversation", {"conversation_id": conversation_id},
                                       id=f"convo-{conversation_id}", task_queue=queue)


def texts(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in messages]


class _Process:
    """A convo process a test started, with its stderr log: killed, or stopped at the end."""

    process: subprocess.Popen[bytes]
    log: IO[str]

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()


class Worker(_Process):
    """A `convo worker` process of the gated bot (or of ``bot``; ``options``: more of its
    command-line options; ``more``: its environment), ready once it said so on stderr."""

    def __init__(self, address: str, tmp_path: Path, queue: str, *, bot: Path = GATED_BOT,
                 options: Sequence[str] = (), **more: str) -> None:
        env = {**os.environ, "CONVO_TEST_DIR": str(tmp_path), **more}
        env.pop("OPENAI_API_KEY", None)
        env.pop("OPENAI_BASE_URL", None)
        self.log = (tmp_path / f"worker-{time.monotonic_ns()}.log").open("w+")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "convo", "worker", str(bot), "--temporal", address,
             "--task-queue", queue, "--store", f"sqlite:///{tmp_path / 'convo.db'}",
             *options],
            env=env, stdout=subprocess.DEVNULL, stderr=self.log, stdin=subprocess.DEVNULL)
        until(lambda: "workflow sandbox: default" in Path(self.log.name).read_text(),
               f"the worker did not start: {Path(self.log.name).read_text()}")


class Front(_Process):
    """A `convo serve --engine temporal://…` process of the gated bot (the HTTP front), on the
    workers' store and task queue; ``client`` talks to it."""

    def __init__(self, address: str, tmp_path: Path, queue: str, **more: str) -> None:
        import httpx

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        env = {**os.environ, "CONVO_TEST_DIR": str(tmp_path), **more}
        for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CONVO_SERVE_TOKEN"):
            env.pop(name, None)
        self.log = (tmp_path / f"front-{self.port}.log").open("w+")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "convo", "serve", str(GATED_BOT), "--port", str(self.port),
             "--store", f"sqlite:///{tmp_path / 'convo.db'}", "--engine",
             f"temporal://{address}/default", "--task-queue", queue],
            env=env, stdout=subprocess.DEVNULL, stderr=self.log, stdin=subprocess.DEVNULL)
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=60.0)

        def healthy() -> bool:
            if self.process.poll() is not None:
                pytest.fail(f"convo serve --engine ended: {Path(self.log.name).read_text()}")
            try:
                return self.client.get("/api/health").status_code == 200
            except httpx.TransportError:
                return False

        until(healthy, f"convo serve --engine did not start: {Path(self.log.name).read_text()}")

    def stop(self) -> None:
        super().stop()
        self.client.close()


class Gated:
    """A `convo worker` and a `convo serve --engine temporal://…` process of the gated bot on
    one store, task queue and $CONVO_TEST_DIR (``folder``), shared by the tests that kill,
    redeploy or reconfigure nothing: starting the two processes is most of such a test's time.
    The tests keep apart by their conversations' ids; ``GatedTest`` is one test's view."""

    def __init__(self, address: str, folder: Path) -> None:
        self.address, self.dir = address, folder
        self.queue = f"gated-{folder.name}"
        self.store_url = f"sqlite:///{folder / 'convo.db'}"
        self.worker: Worker | None = None
        self.front: Front | None = None

    def running(self) -> tuple[Worker, Front]:
        """The two processes, (re)started when either is not running (a test that failed
        badly does not take the next tests down with it)."""
        if (self.worker is None or self.front is None or self.worker.process.poll() is not None
                or self.front.process.poll() is not None):
            self.stop()
            self.worker = Worker(self.address, self.dir, self.queue)
            self.front = Front(self.address, self.dir, self.queue)
        return self.worker, self.front

    def stop(self) -> None:
        (self.dir / "gate").touch()  # (a turn held at the gate ends)
        for process in (self.front, self.worker):
            if process is not None:
                process.stop()
        self.worker = self.front = None


class GatedTest:
    """One test's view of the shared ``Gated`` processes: its gate closed and ``entered``
    gone at its start, the gate opened at its end; ``calls()`` and ``new_conversations()`` say
    what happened since it began (the calls file and the store are the session's)."""

    def __init__(self, gated: Gated) -> None:
        self.worker, self.front = gated.running()
        self.dir, self.queue, self.store_url = gated.dir, gated.queue, gated.store_url
        self.address, self.client, self.port = gated.address, self.front.client, self.front.port
        self.gate, self.entered = self.dir / "gate", self.dir / "entered"
        self.gate.unlink(missing_ok=True)
        self.entered.unlink(missing_ok=True)
        self._calls = len(self._lines())
        self._listed = set(self._ids())

    def calls(self) -> list[str]:
        """The lines of the bot's calls file written since the test began."""
        return self._lines()[self._calls:]

    def new_conversations(self, client: Any = None) -> list[str]:
        """The ids of the conversations listed now (by ``client``, else the shared front) that
        were not at the test's start, newest activity first."""
        return [cid for cid in self._ids(client) if cid not in self._listed]

    def end(self) -> None:
        self.gate.touch()

    def _lines(self) -> list[str]:
        calls = self.dir / "calls.txt"
        return calls.read_text().splitlines() if calls.exists() else []

    def _ids(self, client: Any = None) -> list[str]:
        listed = (client or self.client).get("/api/conversations", params={"limit": 200})
        assert listed.status_code == 200, listed.text
        return [c["id"] for c in listed.json()["conversations"]]


def sse(lines: Iterable[str]) -> Iterator[tuple[str, Any]]:
    """The events of an SSE stream as they come: ``(event, data)``."""
    event = None
    for line in lines:
        if line.startswith("event: "):
            event = line[len("event: "):]
        elif line.startswith("data: ") and event is not None:
            yield event, json.loads(line[len("data: "):])
            event = None


#: A killed worker's call runs again on another worker after its heartbeat timeout: the tests
#: that kill one wait this long, not the default 10 s (``--heartbeat-timeout``).
SHORT_HEARTBEAT = ("--heartbeat-timeout", "3")


async def heartbeat_timeouts(handle: Any) -> dict[str, set[float]]:
    """The heartbeat timeouts (seconds) the workflow's model and tool activities were
    scheduled with, by activity type."""
    timeouts: dict[str, set[float]] = {}
    for event in (await handle.fetch_history()).events:
        if event.HasField("activity_task_scheduled_event_attributes"):
            scheduled = event.activity_task_scheduled_event_attributes
            if scheduled.activity_type.name in ("convo.model", "convo.tools"):
                timeouts.setdefault(scheduled.activity_type.name, set()).add(
                    scheduled.heartbeat_timeout.ToTimedelta().total_seconds())
    return timeouts


def until(ready: Callable[[], object], why: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            pytest.fail(why)
        time.sleep(0.05)
