"""The chat page attaches files (API.md §16): a real file chooser, paste and drop; previews
before sending; the size limit said before anything is sent; a vision model (the fake OpenAI
server, exact request bodies) answers about the image, and a reload shows it again."""

from __future__ import annotations

import base64
import os
import pathlib
from collections.abc import Iterator

import pytest
from parts_files import png
from serve_kit import CHROMIUM, CHROMIUM_ARGS, Served

sync_api = pytest.importorskip("playwright.sync_api")
from playwright.sync_api import Browser, Page, expect  # noqa: E402

from convo.testing import OpenAIServer  # noqa: E402

if not os.path.exists(CHROMIUM):
    pytest.skip(f"the browser tests need Debian's chromium at {CHROMIUM}",
                allow_module_level=True)
expect.set_options(timeout=15_000)
PNG = png(4, 4)
B64 = base64.b64encode(PNG).decode()
BOT = """
from convo import AssistantTemplate, LinearTemplate, LoopTemplate, UserTemplate
template = LinearTemplate([LoopTemplate([UserTemplate(), AssistantTemplate()])])
"""


@pytest.fixture(scope="module")
def model_server() -> Iterator[OpenAIServer]:
    # Started before the browser: Playwright's sync API keeps an event loop running on this
    # thread, and the server starts its own.
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def vision(model_server: OpenAIServer) -> OpenAIServer:
    model_server.requests.clear()
    return model_server


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, model_server: OpenAIServer
           ) -> Iterator[Served]:
    workdir = tmp_path_factory.mktemp("bot")
    (workdir / "bot.py").write_text(BOT)
    s = Served(str(workdir / "bot.py"), workdir, "--store", "memory", "--base-url",
               model_server.base_url, "--no-stream", "--max-attachment-bytes", "2000")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def browser(model_server: OpenAIServer) -> Iterator[Browser]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def test_an_image_chosen_with_the_file_chooser_reaches_the_model(
        page: Page, served: Served, vision: OpenAIServer, tmp_path: pathlib.Path) -> None:
    (tmp_path / "screenshot.png").write_bytes(PNG)
    vision.add("A tiny picture.")
    page.goto(served.url)
    expect(page.locator("#box")).to_be_focused()
    with page.expect_file_chooser() as chooser:
        page.get_by_role("button", name="Attach").click()
    chooser.value.set_files(str(tmp_path / "screenshot.png"))
    preview = page.locator("#atts img.thumb")
    expect(preview).to_have_attribute("alt", "screenshot.png")
    page.locator("#box").fill("What is this?")
    page.keyboard.press("Enter")
    expect(page.locator("#log .msg.assistant .body")).to_have_text("A tiny picture.")
    expect(page.locator("#atts")).to_be_empty()  # sent: the previews go
    assert vision.requests[0]["messages"] == [{"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64}"}}]}]
    shown = page.locator("#log .msg.user .body img.thumb")
    expect(shown).to_have_attribute("src", f"data:image/png;base64,{B64}")
    page.reload()  # the conversation comes back from the server with its image
    expect(page.locator("#log .msg.user .body img.thumb")).to_have_count(1)
    expect(page.locator("#log .msg.user .body")).to_contain_text("What is this?")


def test_a_dropped_file_previews_can_be_removed_and_a_big_one_is_refused(
        page: Page, served: Served, vision: OpenAIServer) -> None:
    page.goto(served.url)
    expect(page.locator("#box")).to_be_focused()
    drop = """([name, type, size]) => {
      const t = new DataTransfer();
      t.items.add(new File([new Uint8Array(size)], name, {type}));
      document.dispatchEvent(new DragEvent("drop", {dataTransfer: t, bubbles: true,
                                                    cancelable: true}));
    }"""
    page.evaluate(drop, ["notes.pdf", "application/pdf", 1500])
    expect(page.locator("#atts .note")).to_have_text("[document: notes.pdf, 1.5 KiB]")
    page.get_by_role("button", name="Remove notes.pdf").click()
    expect(page.locator("#atts")).to_be_empty()
    page.evaluate(drop, ["huge.pdf", "application/pdf", 2001])
    expect(page.locator("#panel .card.error")).to_have_text(
        "huge.pdf is 2001 B: over the limit of 2000 B per file.")  # the same in KiB
    expect(page.locator("#atts")).to_be_empty()
    assert vision.requests == []


def test_a_pasted_image_goes_with_the_message(page: Page, served: Served,
                                              vision: OpenAIServer) -> None:
    vision.add("Pasted, seen.")
    page.goto(served.url)
    expect(page.locator("#box")).to_be_focused()
    page.evaluate("""(b64) => {
      const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      const t = new DataTransfer();
      t.items.add(new File([bytes], "image.png", {type: "image/png"}));
      document.getElementById("box").dispatchEvent(new ClipboardEvent("paste", {
        clipboardData: t, bubbles: true, cancelable: true}));
    }""", B64)
    expect(page.locator("#atts img.thumb")).to_have_count(1)
    page.keyboard.press("Enter")  # an image alone may be sent
    expect(page.locator("#log .msg.assistant .body")).to_have_text("Pasted, seen.")
    assert vision.requests[0]["messages"][0]["content"] == [
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64}"}}]
