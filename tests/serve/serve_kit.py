"""Shared by the serving tests (their conftest hands on the fixtures): a small bot, its
stores (memory, SQLite, a throwaway Postgres started here with initdb/pg_ctl), and `convo
serve` processes on free ports. The fault suite (faults/) gets `convo serve` workers of
``gated_bot.py`` (a model and a tool held at a gate), killed with SIGKILL or started with a
file-size limit (a full disk for SQLite). In process: an httpx client of an app
(``asgi_client``), a model held at a gate (``held_model``), two workers of one store
(``said_on_two_workers``), and the frontend-tool model (``Picking``); in the browser, the chat
page's Retry (``retry_offered``)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import process_kit
import pytest
from postgres_server import Postgres, free_port, throwaway_postgres
from refund_bot import (  # noqa: F401  (handed on to the serving tests)
    TEMPLATE,
    Counted,
    fails_once,
    model,
    refund,
    reply,
)
from starlette.testclient import TestClient

from convo import Message
from convo.models import FunctionModel
from convo.serve import create_app

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    with throwaway_postgres() as server:
        yield server


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each store kind in turn."""
    if request.param == "memory":
        return "memory"
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'convo.db'}"
    return str(request.getfixturevalue("postgres").fresh())


def healthy(process: subprocess.Popen[bytes], client: httpx.Client, log: Path,
            seconds: float) -> bool:
    """Whether `convo serve` answered /api/health within ``seconds`` (it failing the test
    with its stderr if it exited first)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"convo serve exited: {log.read_text()!r}")
        try:
            if client.get("/api/health").status_code == 200:
                return True
        except httpx.TransportError:
            time.sleep(0.05)  # polling for the server to listen, not timing the test
    return False


class Served:
    """One `convo serve` process on a free port; its stderr is kept in ``log``."""

    def __init__(self, bot: str, workdir: Path, *options: str,
                 env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        environ = {k: v for k, v in os.environ.items()
                   if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CONVO_SERVE_TOKEN")}
        environ.update(env or {})
        self.log = workdir / f"serve-{self.port}.log"
        store = options[options.index("--store") + 1] if "--store" in options else ""
        self.store_path = store[len("sqlite:///"):] if store.startswith("sqlite:///") else ""
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "convo", "serve", bot, "--port", str(self.port),
                 *options], env=environ, stdout=subprocess.DEVNULL, stderr=log)
        self.client = httpx.Client(base_url=self.url, timeout=20.0)
        if not healthy(self.process, self.client, self.log, 30):
            self.stop()
            raise AssertionError("convo serve did not become healthy")

    def stop(self) -> str:
        """Ctrl-C; what it wrote on stderr."""
        process_kit.stop(self.process, 30)
        self.client.close()
        return self.log.read_text()

    def __enter__(self) -> Served:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


# -- the fault suite (faults/) ------------------------------------------------------------

GATED_BOT = str(ROOT / "tests" / "serve_fixtures" / "gated_bot.py")
GATED_WAIT_S = 30.0


class Worker:
    """One `convo serve` process of the gated bot; its stderr in ``log``."""

    def __init__(self, folder: Path, store: str, *options: str,
                 file_size: int | None = None, port: int | None = None) -> None:
        self.folder = folder
        self.port = port or free_port()
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
                [sys.executable, "-m", "convo", "serve", GATED_BOT, "--port", str(self.port),
                 "--store", store, *options], env=env, stdout=subprocess.DEVNULL, stderr=log,
                preexec_fn=limit)
        self.client = httpx.Client(base_url=self.url, timeout=GATED_WAIT_S)
        self.pool = concurrent.futures.ThreadPoolExecutor(4)
        if not healthy(self.process, self.client, self.log, GATED_WAIT_S):
            self.stop()  # not left behind by the test it failed
            raise AssertionError("convo serve did not become healthy")

    def post(self, path: str, body: dict[str, Any] | None = None, **kw: Any) -> httpx.Response:
        return self.client.post(path, json=body or {}, **kw)

    def later(self, method: str, path: str, body: dict[str, Any] | None = None,
              **kw: Any) -> concurrent.futures.Future[httpx.Response]:
        """A request on its own connection, in a thread: its answer when it comes."""
        def send() -> httpx.Response:
            with httpx.Client(base_url=self.url, timeout=GATED_WAIT_S) as client:
                return client.request(method, path, json=body, **kw)

        return self.pool.submit(send)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        process_kit.stop(self.process, GATED_WAIT_S)
        self.client.close()
        self.pool.shutdown(wait=False, cancel_futures=True)


@contextlib.asynccontextmanager
async def asgi_client(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client of ``app`` in this process, the app's lifespan run around it."""
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        yield client


def held_model(gate: asyncio.Event, entered: asyncio.Event) -> FunctionModel:
    """A model that sets ``entered`` when it is called and answers "answered" once ``gate``
    is set: a turn held running while a test does something else."""
    async def held(messages: Sequence[Message], tools: Any) -> str:
        entered.set()
        await gate.wait()
        return "answered"
    return FunctionModel(held)


def said_on_two_workers(template: Any, llm: Any, store: str, first: str, then: str) -> None:
    """Says ``first`` in a new conversation on one worker of ``store``, then ``then`` on
    another that has never seen it (so it rebuilds it from the store); both answered."""
    one_app, two_app = create_app(template, llm, store=store), \
        create_app(template, llm, store=store)
    with TestClient(one_app) as one, TestClient(two_app) as two:
        cid = one.post("/api/conversations", json={}).json()["id"]
        said = one.post(f"/api/conversations/{cid}/messages", json={"content": first})
        assert said.status_code == 200, said.text
        again = two.post(f"/api/conversations/{cid}/messages", json={"content": then})
        assert again.status_code == 200, again.text


class Picking:
    """A model for the frontend-tool tests: "pick" -> a call of the front end's
    ``pick_color``, its result -> "You picked …", else refund_bot's reply; ``offered`` holds
    the names of the tools each call was offered."""

    def __init__(self) -> None:
        self.offered: list[list[str]] = []

    def __call__(self, messages: Sequence[Message], tools: Any) -> str:
        self.offered.append([t["function"]["name"] for t in tools])
        last = messages[-1]
        if last.role == "user" and last.content == "pick":
            return "{pick_color(hint='warm')}"
        if last.role == "tool" and last.name == "pick_color":
            return f"You picked {last.content}"
        return reply(messages, tools)


def _until(check: Callable[[], Any], what: str) -> Any:
    """Poll ``check`` until it gives something true (at most GATED_WAIT_S): what it gave."""
    deadline = time.monotonic() + GATED_WAIT_S
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
    """Start workers of the gated bot (``serve(store, *options, file_size=None,
    port=None)``: a port of a killed worker to come back where it was); all are stopped
    after the test."""
    workers: list[Worker] = []

    def start(store: str, *options: str, file_size: int | None = None,
              port: int | None = None) -> Worker:
        worker = Worker(folder, store, *options, file_size=file_size, port=port)
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


# -- a browser ---------------------------------------------------------------------------------

CHROMIUM = "/usr/bin/chromium"  # Debian's, driven by Playwright (no browser download)
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium per test module (the tests skip without it, or without Playwright)."""
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"the browser tests need Debian's chromium at {CHROMIUM}")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def page_of(browser: Any, *, width: int = 900, height: int = 800,
            init_script: str | None = None) -> Iterator[Any]:
    """A tab in a browser context of its own (``init_script`` run in it before the page's);
    a script error in it fails the test when it is closed."""
    context = browser.new_context(viewport={"width": width, "height": height})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    if init_script is not None:
        pg.add_init_script(init_script)
    yield pg
    context.close()
    assert errors == []


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    yield from page_of(browser)


def retry_offered(page: Any, url: str) -> Any:
    """The chat page opened at ``url``, a conversation whose turn failed or was cut off: it
    offers Retry, shows no thinking dots and says the assistant could not answer. The
    Retry button."""
    from playwright.sync_api import expect

    page.goto(url)
    retry = page.get_by_role("button", name="Retry")
    expect(retry).to_be_visible()
    expect(page.locator("#thinking")).to_be_hidden()
    expect(page.locator("#panel .card.error")).to_contain_text(
        "The assistant could not answer. Please try again.")
    return retry


class Person:
    """One person's browser context and tab at ``url``, signed in with ``token`` (or not: the
    sign-in prompt shows); a script error in it fails the test when it is closed."""

    def __init__(self, browser: Any, url: str, token: str | None, **options: Any) -> None:
        self.context = browser.new_context(**({"viewport": {"width": 1100, "height": 720}}
                                              | options))
        if token is not None:
            key = "convo-operator-token" if "/operator" in url else "convo-token"
            self.context.add_init_script(f"sessionStorage.setItem({key!r}, {token!r})")
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(url)

    def close(self) -> None:
        self.context.close()
        assert self.errors == []


def say(page: Any, text: str) -> None:
    """Fill the message box and send it."""
    page.locator("#box").fill(text)
    page.locator("#box").press("Enter")


def type_in(page: Any, text: str) -> None:
    """Type into the message box key by key and press Enter, as a person would."""
    page.locator("#box").focus()
    page.keyboard.type(text)
    page.keyboard.press("Enter")


def served_with_tokens(bot: str, folder: Path, tokens: dict[str, Any], store: str = "",
                       *options: str) -> Served:
    """`convo serve` of ``bot`` signing people in with a table of ``tokens`` (SQLite in
    ``folder`` unless ``store`` is named)."""
    users = folder / "users.json"
    users.write_text(json.dumps(tokens))
    return Served(bot, folder, "--store", store or f"sqlite:///{folder / 'convo.db'}",
                  "--users", str(users), *options)
