"""The chat page under an output guard (API.md §27), in Chromium: under ``hold`` nothing of a
hostile streamed reply ever reaches the page (every text node it drew is watched); under
``live`` the streamed bubble shows at once and is replaced by the guard's message."""

from __future__ import annotations

import os
import pathlib
import socket
import subprocess
import sys
from collections.abc import Iterator

import process_kit
import pytest

sync_api = pytest.importorskip("playwright.sync_api")
from playwright.sync_api import Browser, Page, expect  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-dev-shm-usage"]
if not os.path.exists(CHROMIUM):
    pytest.skip(f"the browser tests need Debian's chromium at {CHROMIUM}",
                allow_module_level=True)
expect.set_options(timeout=15_000)

BOT = '''
import asyncio, os
from convo import Guard, LinearTemplate, LoopTemplate, Message, ToolingTemplate, UserTemplate

HOSTILE = "Sure! Your card is 4111 1111 1111 1111, expiry 12/29. Anything else?"

class Streaming:
    """Streams the hostile reply a few characters at a time, as a slow model does."""
    def complete(self, messages, tools=(), *, on_delta=None):
        raise RuntimeError("served: acomplete only")
    async def acomplete(self, messages, tools=(), *, on_delta=None):
        for i in range(0, len(HOSTILE), 8):
            if on_delta is not None:
                on_delta(HOSTILE[i:i + 8])
            await asyncio.sleep(0.15)
        return Message("assistant", HOSTILE)

def no_cards(value, ctx):
    return "4111" not in value or "a card number"

template = LinearTemplate([LoopTemplate([UserTemplate(), ToolingTemplate([])])])
mock_model = Streaming()
guards = [Guard(no_cards, on="output", stream=os.environ["GUARD_STREAM"],
                message="I can't share that.")]
'''

WATCH = """() => { window.seen = [];
  new MutationObserver((records) => { for (const r of records) {
    if (r.type === 'characterData') window.seen.push(r.target.data);
    for (const n of r.addedNodes) window.seen.push(n.textContent || ''); } })
  .observe(document.body, {subtree: true, childList: true, characterData: true}); }"""


class Served:
    def __init__(self, workdir: pathlib.Path, stream: str) -> None:
        (workdir / "bot.py").write_text(BOT)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/"
        env = {k: v for k, v in os.environ.items()
               if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CONVO_SERVE_TOKEN")}
        env["GUARD_STREAM"] = stream
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "convo", "serve", str(workdir / "bot.py"), "--port",
             str(port), "--store", "memory"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if process_kit.answers_health(self.url, self.proc, 30):
            return
        self.proc.kill()
        raise RuntimeError("convo serve did not answer /api/health within 30 s")

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Served]]:
    started = {stream: Served(tmp_path_factory.mktemp(stream), stream)
               for stream in ("hold", "live")}
    yield started
    for s in started.values():
        s.stop()


@pytest.fixture(scope="module")
def browser(servers: dict[str, Served]) -> Iterator[Browser]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def _ask(page: Page, url: str) -> None:
    page.goto(url)
    expect(page.locator("#box")).to_be_editable()
    page.evaluate(WATCH)
    page.locator("#box").fill("what is my card?")
    page.keyboard.press("Enter")


def test_the_page_never_shows_a_held_card_and_replaces_a_live_one(
        browser: Browser, servers: dict[str, Served]) -> None:
    context = browser.new_context(viewport={"width": 900, "height": 800})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    _ask(page, servers["hold"].url)
    expect(page.locator("#log .msg.assistant .body")).to_have_text("I can't share that.")
    seen = page.evaluate("window.seen.join('\\n')")
    assert "I can't share that." in seen and "4111" not in seen and "Your card" not in seen
    assert "4111" not in page.content()

    _ask(page, servers["live"].url)
    expect(page.locator("#log .msg.streaming .body")).to_contain_text("4111")  # shown at once
    expect(page.locator("#log .msg.assistant .body")).to_have_text("I can't share that.")
    expect(page.locator("#log .msg.streaming")).to_have_count(0)
    assert "4111" not in page.locator("#log").inner_text()
    context.close()
    assert errors == []
