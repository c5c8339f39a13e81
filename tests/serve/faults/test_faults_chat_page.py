"""The chat page in real Chromium when a turn is stopped or cut off (API.md §20): a Stop button
while a turn runs, and Retry for a conversation whose server was killed during a model call."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from serve_kit import CHROMIUM, retry_offered, type_in

sync_api = pytest.importorskip("playwright.sync_api")
from playwright.sync_api import Page, expect  # noqa: E402

if not os.path.exists(CHROMIUM):
    pytest.skip(f"the browser tests need Debian's chromium at {CHROMIUM}",
                allow_module_level=True)
expect.set_options(timeout=30_000)


def test_the_stop_button_stops_a_running_turn(
        page: Page, serve: Callable[..., Any], entered: Callable[[], None],
        calls: Callable[[], list[str]], folder: Path) -> None:
    worker = serve(f"sqlite:///{folder / 'convo.db'}")
    page.goto(worker.url)
    expect(page.locator("#box")).to_be_focused()
    stop = page.get_by_role("button", name="Stop")
    expect(stop).to_be_hidden()
    type_in(page, "wait")
    expect(stop).to_be_visible()
    entered()
    stop.click()
    expect(page.locator("#log .msg.assistant .body")).to_have_text(["partial"])
    expect(stop).to_be_hidden()
    expect(page.locator("#thinking")).to_be_hidden()
    assert calls() == ["model wait", "cancelled wait"]
    type_in(page, "hi")
    expect(page.locator("#log .msg.assistant .body")).to_have_text(["partial", "You said 'hi'"])


def killed_in_a_model_call(page: Page, serve: Callable[..., Any],
                           entered: Callable[[], None], folder: Path) -> tuple[str, Any]:
    """Serve on a SQLite store, send "wait" from the page and kill the server once the model
    call has begun: the store's URL (for the server started next) and the killed server."""
    store = f"sqlite:///{folder / 'convo.db'}"
    first = serve(store)
    page.goto(first.url)
    expect(page.locator("#box")).to_be_focused()
    type_in(page, "wait")
    entered()
    first.kill()
    return store, first


def test_killed_during_a_model_call_the_page_shows_retry(
        page: Page, serve: Callable[..., Any], entered: Callable[[], None],
        folder: Path) -> None:
    store, _ = killed_in_a_model_call(page, serve, entered, folder)
    cid = page.evaluate("new URLSearchParams(location.search).get('c')")
    second = serve(store)
    retry = retry_offered(page, f"{second.url}/?c={cid}")
    (folder / "gate").touch()
    retry.click()
    expect(page.locator("#log .msg.assistant .body")).to_have_text(["partial after wait"])
    expect(retry).to_have_count(0)


def test_the_page_left_open_while_the_server_is_killed_offers_retry(
        page: Page, serve: Callable[..., Any], entered: Callable[[], None],
        calls: Callable[[], list[str]], folder: Path) -> None:
    store, first = killed_in_a_model_call(page, serve, entered, folder)
    card = page.locator("#panel .card.error")
    expect(card).to_have_text("The connection to the server was lost.Retry")
    expect(page.locator("#thinking")).to_be_hidden()
    page.get_by_role("button", name="Retry").click()  # the server is still away
    expect(card).to_have_text("The server could not be reached.Retry")
    serve(store, port=first.port)  # back, where it was
    (folder / "gate").touch()
    page.get_by_role("button", name="Retry").click()
    expect(page.locator("#log .msg.assistant .body")).to_have_text(["partial after wait"])
    expect(page.get_by_role("button", name="Retry")).to_have_count(0)
    expect(page.locator("#panel .card.error")).to_have_count(0)
    assert calls() == ["model wait", "model wait"]
