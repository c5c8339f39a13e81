"""The chat page while a turn runs (API.md §26), in real Chromium: the send box stays open, a
message typed during a slow reply is sent with ``"while_busy": "steer"``, shown dimmed until a
turn takes it, and answered; a queued message can be withdrawn (gone from the page, never seen
by the model), also when it is no longer queued (404).

The app runs under uvicorn in this process; its model waits for a message starting "slow" at
a gate the test opens (a ``threading.Event``), and keeps every request it was sent."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
import pytest
from openai_kit import uvicorn_app
from serve_kit import CHROMIUM, type_in

sync_api = pytest.importorskip("playwright.sync_api")
from playwright.sync_api import Locator, Page, expect  # noqa: E402
from weather_tools import chat_loop  # noqa: E402

from convo import (  # noqa: E402
    FinishTool,
    FunctionModel,
    Message,
    tool,
)
from convo.serve import create_app  # noqa: E402

if not os.path.exists(CHROMIUM):
    pytest.skip(f"the browser tests need Debian's chromium at {CHROMIUM}",
                allow_module_level=True)
expect.set_options(timeout=30_000)
WAIT_S = 30.0


class SlowBot:
    """"slow …" holds the model at ``gate`` (``held`` says it is there); "slow look X" then
    calls ``lookup``; anything else is answered "re: …". ``seen``: each request's messages."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.held = threading.Event()
        self.seen: list[list[tuple[str, str]]] = []

        @tool
        def lookup(q: str) -> str:
            """Look something up."""
            return f"found {q}"

        self.template = chat_loop(lookup, FinishTool())

    async def reply(self, messages: Sequence[Message], tools: Any) -> str:
        self.seen.append([(m.role, m.text) for m in messages])
        last = messages[-1]
        if last.role == "tool":
            return f"after {last.text}"
        if last.text.startswith("slow"):
            self.held.set()
            opened = await asyncio.to_thread(self.gate.wait, WAIT_S)
            assert opened, "the test never opened the gate"
            if last.text.startswith("slow look "):
                return f"{{lookup(q='{last.text[10:]}')}}"
        return f"re: {last.text}"

    def said_by_users(self) -> set[str]:
        return {text for request in self.seen for role, text in request if role == "user"}


@pytest.fixture
def bot() -> Iterator[SlowBot]:
    made = SlowBot()
    yield made
    made.gate.set()  # nothing stays held


@pytest.fixture
def url(bot: SlowBot) -> Iterator[str]:
    app = create_app(bot.template, FunctionModel(bot.reply), store="memory")
    with uvicorn_app(app) as base:
        yield base


def _opacity(locator: Locator) -> str:
    return str(locator.evaluate("(e) => getComputedStyle(e).opacity"))


def _users(page: Page) -> list[str]:
    return page.locator("#log .msg.user .body").all_inner_texts()


def _start_slow(page: Page, url: str, bot: SlowBot, text: str) -> None:
    page.goto(url)
    expect(page.locator("#box")).to_be_focused()
    type_in(page, text)
    assert bot.held.wait(WAIT_S), "the model was never called"
    expect(page.locator("#thinking")).to_be_visible()


def test_a_message_sent_during_a_slow_reply_is_dimmed_then_taken_by_the_turn(
        page: Page, url: str, bot: SlowBot) -> None:
    _start_slow(page, url, bot, "slow look A")
    sent: list[dict[str, Any]] = []
    page.on("request", lambda r: sent.append(r.post_data_json)
            if r.method == "POST" and r.url.endswith("/messages") else None)
    type_in(page, "the order number is A7")  # the send box is open while the turn runs
    queued = page.locator("#queued .msg.user")
    expect(queued.locator(".body")).to_have_text(["the order number is A7"])
    expect(queued.get_by_role("button", name="Withdraw")).to_be_visible()
    assert _opacity(queued.locator(".body")) == "0.6"
    expect(page.locator("#box")).to_have_value("")
    assert sent == [{"content": "the order number is A7", "while_busy": "steer"}]
    cid = page.evaluate("new URLSearchParams(location.search).get('c')")
    shown = httpx.get(f"{url}/api/conversations/{cid}", timeout=WAIT_S).json()
    assert [m["content"] for m in shown["queued"]] == ["the order number is A7"]

    bot.gate.set()
    expect(page.locator("#log .msg.assistant .body")).to_have_text(
        ["re: the order number is A7"])
    expect(queued).to_have_count(0)
    assert _users(page) == ["slow look A", "the order number is A7"]
    assert _opacity(page.locator("#log .msg.user .body").last) == "1"
    # Taken by the running turn: its next model call saw it, after the tool's result.
    assert len(bot.seen) == 2
    assert bot.seen[1][-3:] == [("assistant", ""), ("tool", "found A"),
                                ("user", "the order number is A7")]


def test_queued_messages_are_answered_after_the_turn_or_withdrawn(
        page: Page, url: str, bot: SlowBot) -> None:
    _start_slow(page, url, bot, "slow one")
    for text in ("two", "three", "four"):
        type_in(page, text)
    queued = page.locator("#queued .msg.user")
    expect(queued.locator(".body")).to_have_text(["two", "three", "four"])
    cid = page.evaluate("new URLSearchParams(location.search).get('c')")
    listed = httpx.get(f"{url}/api/conversations/{cid}", timeout=WAIT_S).json()["queued"]
    assert [m["content"] for m in listed] == ["two", "three", "four"]

    queued.filter(has_text="two").get_by_role("button", name="Withdraw").click()
    expect(queued.locator(".body")).to_have_text(["three", "four"])
    expect(page.locator("#box")).to_be_focused()
    # "four" is withdrawn elsewhere (another tab): the page's withdraw then meets a 404.
    gone = httpx.delete(f"{url}/api/conversations/{cid}/queued/{listed[2]['id']}",
                        timeout=WAIT_S)
    assert gone.status_code == 204
    queued.filter(has_text="four").get_by_role("button", name="Withdraw").click()
    expect(queued.locator(".body")).to_have_text(["three"])
    expect(page.locator("#panel .card.error")).to_have_text(
        "That message is no longer waiting to be taken: it could not be withdrawn.")
    listed = httpx.get(f"{url}/api/conversations/{cid}", timeout=WAIT_S).json()["queued"]
    assert [m["content"] for m in listed] == ["three"]

    bot.gate.set()  # the turn ends before a safe point: "three" gets a turn of its own
    expect(page.locator("#log .msg.assistant .body")).to_have_text(
        ["re: slow one", "re: three"])
    expect(queued).to_have_count(0)
    expect(page.locator("#thinking")).to_be_hidden()
    assert _users(page) == ["slow one", "three"]
    assert bot.said_by_users() == {"slow one", "three"}  # withdrawn: never seen by the model
    assert len(bot.seen) == 2
