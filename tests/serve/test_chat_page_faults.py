"""The chat page in real Chromium (API.md §19/§20): a streamed reply drawn in linear time, a
Retry button whenever the conversation waits for a retry, and convo's own turn-ending tools
hidden after every reply. Against `convo serve` on ``serve_fixtures/faults_bot.py``."""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Iterator

import pytest
from serve_kit import CHROMIUM, ROOT, Served, page_of, retry_offered, type_in

sync_api = pytest.importorskip("playwright.sync_api")
from playwright.sync_api import Browser, Page, expect  # noqa: E402

if not os.path.exists(CHROMIUM):
    pytest.skip(f"the browser tests need Debian's chromium at {CHROMIUM}",
                allow_module_level=True)
BOT = str(ROOT / "tests" / "serve_fixtures" / "faults_bot.py")
# Counts the characters of every node put into the page: a reply redrawn whole at each delta
# puts in the square of its length; one drawn by appending, about its length.
COUNT_ADDED = """window.__added = 0;
new MutationObserver((records) => { for (const r of records) for (const n of r.addedNodes)
  window.__added += (n.textContent || "").length; })
  .observe(document, {childList: true, subtree: true});"""
expect.set_options(timeout=30_000)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("served")
    s = Served(BOT, folder, "--store", f"sqlite:///{folder / 'convo.db'}")
    yield s
    s.stop()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    yield from page_of(browser, init_script=COUNT_ADDED)


def _open(page: Page, url: str) -> None:
    page.goto(url)
    expect(page.locator("#box")).to_be_focused()
    expect(page).not_to_have_url(re.compile(r"\?c="))  # nothing stored before a message


def test_a_large_streamed_reply_is_drawn_in_linear_time(page: Page, served: Served) -> None:
    _open(page, served.url)
    page.evaluate("window.__added = 0")
    type_in(page, "big 300")  # 30,000 characters in 300 deltas
    reply = page.locator("#log .msg.assistant:not(.streaming) .body")
    expect(reply).to_have_count(1)
    expect(page.locator("#thinking")).to_be_hidden()
    assert len(reply.inner_text()) >= 29_000
    added = page.evaluate("window.__added")
    # Linear: the stream once and the finished reply once (~60,000). Redrawn at each delta,
    # the stream alone put 4.5 million characters into the page.
    assert added < 90_000, added


def test_turn_ending_tools_are_hidden_after_every_reply(page: Page, served: Served) -> None:
    _open(page, served.url)
    for i in range(2):
        type_in(page, "done")
        expect(page.locator("#log .msg.assistant .body")).to_have_count(i + 1)
        expect(page.locator("#thinking")).to_be_hidden()
    assert page.locator("#log .msg.assistant .body").all_inner_texts() == ["All done."] * 2
    expect(page.locator("details.tool")).to_have_count(0)
    expect(page.locator("#log .msg.tool")).to_have_count(0)
    page.reload()  # as rebuilt from the stored messages
    expect(page.locator("#log .msg.assistant .body")).to_have_count(2)
    expect(page.locator("details.tool")).to_have_count(0)
    expect(page.locator("#log .msg.tool")).to_have_count(0)
    html = served.client.get("/").text
    assert '<meta name="convo-hidden-tools" content="[&quot;finish&quot;]">' in html


def test_a_retry_button_whenever_the_conversation_waits_for_a_retry(
        page: Page, served: Served) -> None:
    cid = served.client.post("/api/conversations", json={}).json()["id"]
    failed = served.client.post(f"/api/conversations/{cid}/messages",
                                json={"content": "fail once"})
    assert failed.status_code == 502
    # As a worker cut off mid-turn may leave it: still marked running, waiting for a retry.
    db = sqlite3.connect(served.store_path)
    with db:
        db.execute("UPDATE conversations SET status = 'running', waiting_for = ? WHERE id = ?",
                   (json.dumps({"type": "retry", "error": "cut off"}), cid))
    db.close()
    retry = retry_offered(page, f"{served.url}/?c={cid}")
    retry.click()
    expect(page.locator("#log .msg.assistant .body")).to_have_text(["You said 'fail once'"])
    expect(retry).to_have_count(0)
