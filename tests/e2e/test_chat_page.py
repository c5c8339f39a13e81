"""The chat page in a real browser: headless Chromium (Debian's) driven by Playwright, against
``convo serve`` on the scripted bot of ``cli_fixtures/chat_page.py``.

Nothing here sleeps for timing: every wait is a condition the page must reach. A streamed
reply is made observable by a model that stops half-way until the test opens a gate file.

``python tests/e2e/test_chat_page.py`` redraws the screenshots in docs/.
"""

from __future__ import annotations

import base64
import hashlib
import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

import process_kit
import pytest

sync_api = pytest.importorskip("playwright.sync_api")
from page_kit import sign_in_at_the_prompt  # noqa: E402
from playwright.sync_api import Browser, Page, expect  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
if not os.path.exists(CHROMIUM):
    pytest.skip(f"the browser tests need Debian's chromium at {CHROMIUM}",
                allow_module_level=True)

ROOT = pathlib.Path(__file__).resolve().parents[2]
BOT = ROOT / "tests" / "cli_fixtures" / "chat_page.py"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
expect.set_options(timeout=15_000)  # generous: the machine may be busy; passing tests are quick
EVIL = ('Look: <script>window.pwned = 1</script> and <img src=x onerror="window.pwned = 2"> '
        'and [click me](javascript:window.pwned=3) and <b>not bold</b>')


class Server:
    """``convo serve`` on the test bot, in a subprocess on a free port."""

    def __init__(self, gates: pathlib.Path, *extra: str, **environ: str) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/"
        self.gates = gates
        env = {k: v for k, v in os.environ.items()
               if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CONVO_SERVE_TOKEN")}
        env.update(environ, CHAT_PAGE_GATES=str(gates))
        cmd = [sys.executable, "-m", "convo", "serve", str(BOT), "--host", "127.0.0.1",
               "--port", str(port), "--store", "memory", *extra]
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        self._wait_healthy()

    def _wait_healthy(self) -> None:
        if process_kit.answers_health(self.url, self.proc, 30):
            return
        if self.proc.poll() is not None:
            raise RuntimeError(f"convo serve exited:\n{self.proc.stdout.read()}")
        self.stop()
        raise RuntimeError("convo serve did not answer /api/health within 30 s")

    def open_gate(self, name: str) -> None:
        (self.gates / name).touch()

    def stop(self) -> None:
        process_kit.stop(self.proc, 10, signal.SIGTERM)
        if self.proc.stdout:
            self.proc.stdout.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = Server(tmp_path_factory.mktemp("gates"))
    yield s
    s.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh tab (own sessionStorage); fails the test on any script error in the page.

    (The browser also logs HTTP errors to the console; 404, 401 and 502 are expected here.)
    """
    context = browser.new_context(viewport={"width": 900, "height": 800})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error"
          and not m.text.startswith("Failed to load resource") else None)
    yield pg
    context.close()
    assert errors == []


def streaming_half(page: Page, text: str) -> Any:
    """Say ``text`` ("stream …"): the reply streams its first part and waits at its gate.
    The streaming reply's body."""
    say(page, text)
    streaming = page.locator("#log .msg.streaming .body")
    expect(streaming).to_have_text("Streaming the first part.")
    return streaming


def open_chat(page: Page, url: str) -> None:
    """Open the page: the bot does not greet, so nothing is stored until the first message."""
    page.goto(url)
    expect(page.locator("#box")).to_be_focused()
    expect(page).to_have_url(url)


def say(page: Page, text: str) -> None:
    """Type into the box and press Enter, as a person would."""
    page.locator("#box").focus()
    page.keyboard.type(text)
    page.keyboard.press("Enter")


def replies(page: Page) -> list[str]:
    return page.locator("#log .msg.assistant:not(.streaming) .body").all_inner_texts()


def users(page: Page) -> list[str]:
    return page.locator("#log .msg.user .body").all_inner_texts()


def wait_idle(page: Page) -> None:
    expect(page.locator("#thinking")).to_be_hidden()


def test_three_turns_with_a_streamed_reply(page: Page, server: Server) -> None:
    open_chat(page, server.url)
    say(page, "hello")
    expect(page.locator("#log .msg.assistant .body")).to_have_text(["You said 'hello' (message 1)"])

    streaming = streaming_half(page, "stream three")  # before the turn ends:
    expect(page.locator("#thinking")).to_be_visible()
    assert replies(page) == ["You said 'hello' (message 1)"]
    server.open_gate("three")
    expect(page.locator("#log .msg.assistant .body").last).to_have_text(
        "Streaming the first part. And the rest.")
    expect(streaming).to_have_count(0)
    wait_idle(page)

    say(page, "weather")
    expect(page.locator("#log .msg.assistant .body").last).to_have_text(
        "The tool said: Sunny in Paris, 21 °C")
    tool = page.locator("details.tool")
    expect(tool).to_have_count(1)
    expect(tool.locator("summary")).to_have_text("Tool: weather (done)")
    expect(tool.locator(".result pre")).to_be_hidden()  # collapsed
    tool.locator("summary").click()
    expect(tool.locator("pre")).to_have_text(['{\n  "city": "Paris"\n}', "Sunny in Paris, 21 °C"])
    assert users(page) == ["hello", "stream three", "weather"]
    assert replies(page) == ["You said 'hello' (message 1)",
                             "Streaming the first part. And the rest.", "Let me look.",
                             "The tool said: Sunny in Paris, 21 °C"]


def test_a_reload_shows_the_same_conversation(page: Page, server: Server) -> None:
    open_chat(page, server.url)
    say(page, "one")
    expect(page.locator("#log .msg.assistant")).to_have_count(1)
    say(page, "weather")
    expect(page.locator("#log .msg.assistant")).to_have_count(3)
    url, before = page.url, page.locator("#log").inner_text()

    page.reload()
    expect(page.locator("#log .msg.assistant")).to_have_count(3)
    assert page.url == url
    assert page.locator("#log").inner_text() == before
    expect(page.locator("details.tool summary")).to_have_text("Tool: weather (done)")
    say(page, "three")
    expect(page.locator("#log .msg.assistant .body").last).to_have_text(
        "You said 'three' (message 3)")


def test_a_reload_during_a_turn_waits_for_it(page: Page, server: Server) -> None:
    open_chat(page, server.url)
    streaming_half(page, "stream reload")
    page.reload()  # the turn goes on on the server; the page shows what is committed so far
    expect(page.locator("#log .msg.user .body")).to_have_text(["stream reload"])
    expect(page.locator("#thinking")).to_be_visible()
    assert replies(page) == []
    server.open_gate("reload")
    expect(page.locator("#log .msg.assistant .body")).to_have_text(
        ["Streaming the first part. And the rest."])
    wait_idle(page)
    expect(page.locator("#box")).to_be_focused()


def test_an_unknown_conversation_in_the_url_says_so(page: Page, server: Server) -> None:
    page.goto(server.url + "?c=no-such-conversation")
    expect(page.locator("#panel .card.error p")).to_have_text(
        "This conversation is not one of yours, or it was deleted: nothing of it is shown "
        "here. Check the link, or start a new conversation.")
    expect(page).to_have_url(re.compile("no-such-conversation"))  # no other one instead
    page.get_by_role("button", name="Start a new conversation").click()
    expect(page).to_have_url(server.url)
    expect(page.locator("#box")).to_be_focused()
    say(page, "hi")
    expect(page.locator("#log .msg.assistant .body")).to_have_text(["You said 'hi' (message 1)"])
    expect(page).to_have_url(re.compile(r"\?c=[\w-]{16,}$"))


def test_retry_after_a_failed_model_call(page: Page, server: Server) -> None:
    open_chat(page, server.url)
    say(page, "fail retry")
    alert = page.locator("#panel .card.error")
    # Plain words for the user; the cause (an unreachable model) is in the server's log.
    expect(alert).to_contain_text("The assistant could not answer. Please try again.")
    assert users(page) == ["fail retry"]  # the user's message is kept
    assert replies(page) == []
    page.get_by_role("button", name="Retry").click()
    expect(page.locator("#log .msg.assistant .body")).to_have_text(
        ["You said 'fail retry' (message 1)"])
    expect(alert).to_have_count(0)
    assert users(page) == ["fail retry"]


def test_the_end_of_a_conversation_with_a_farewell(page: Page, server: Server) -> None:
    open_chat(page, server.url)
    say(page, "bye")
    expect(page.locator("#log .msg.assistant .body")).to_have_text(["Goodbye!"])
    first = page.url
    end = page.locator("#panel .card.end")
    expect(end).to_contain_text("The conversation has ended with a farewell.")
    expect(page.locator("#send")).to_be_disabled()
    say(page, "still here?")  # nowhere to send it: it stays in the box
    expect(page.locator("#box")).to_have_value("still here?")
    assert users(page) == ["bye"]

    end.get_by_role("button", name="Start a new conversation").click()
    expect(page).not_to_have_url(first)
    expect(page.locator("#log .msg")).to_have_count(0)
    expect(page.locator("#box")).to_have_value("still here?")
    page.locator("#box").press("Enter")
    expect(page.locator("#log .msg.assistant .body")).to_have_text(
        ["You said 'still here?' (message 1)"])
    page.go_back()  # the ended conversation again
    expect(page).to_have_url(first)
    expect(page.locator("#log .msg.assistant .body")).to_have_text(["Goodbye!"])
    expect(end).to_be_visible()


def test_the_model_ends_the_conversation_with_a_tool(page: Page, server: Server) -> None:
    open_chat(page, server.url)
    say(page, "leave")
    expect(page.locator("#panel .card.end")).to_contain_text(
        "The conversation has ended with a farewell.")
    assert replies(page) == ["Bye from the model!"]
    # convo's own turn-ending tool is not shown: its effect (the farewell, the end) is.
    expect(page.locator("details.tool")).to_have_count(0)


def test_a_conversation_that_ends_in_an_error(page: Page, server: Server) -> None:
    open_chat(page, server.url)
    say(page, "crash")
    expect(page.locator("#panel .card.end")).to_contain_text(
        "The conversation has ended because of an error:")
    expect(page.locator("#panel .card.end")).to_contain_text("the template broke")
    expect(page.locator("#send")).to_be_disabled()


def test_a_conversation_that_reaches_its_limit(browser: Browser, tmp_path: pathlib.Path) -> None:
    limited = Server(tmp_path, CHAT_PAGE_MODEL_CALLS="2")
    try:
        context = browser.new_context()
        pg = context.new_page()
        open_chat(pg, limited.url)
        say(pg, "one")
        say(pg, "two")
        expect(pg.locator("#log .msg.assistant")).to_have_count(2)
        say(pg, "three")
        expect(pg.locator("#panel .card.end p")).to_have_text(
            "The conversation has ended: the model_calls limit was reached.")
        assert users(pg) == ["one", "two", "three"]
        context.close()
    finally:
        limited.stop()


def test_model_html_is_shown_as_text_and_runs_nothing(page: Page, server: Server) -> None:
    open_chat(page, server.url)
    say(page, "evil")
    body = page.locator("#log .msg.assistant .body")
    expect(body).to_have_text(EVIL)
    wait_idle(page)
    assert page.locator("#log script, #log img, #log a, #log b").count() == 0
    assert page.evaluate("window.pwned") is None
    page.get_by_text("[click me](javascript:window.pwned=3)", exact=False).click()
    assert page.evaluate("window.pwned") is None


def test_the_content_security_policy_stops_html_that_got_in(browser: Browser,
                                                            server: Server) -> None:
    """Were the renderer ever wrong, the page's policy would still run nothing injected."""
    context = browser.new_context()
    pg = context.new_page()
    open_chat(pg, server.url)
    refused = lambda m: "Content Security Policy" in m.text  # noqa: E731
    with pg.expect_console_message(refused):
        pg.evaluate("""() => { const d = document.createElement("div");
            d.innerHTML = '<img src="data:," onerror="window.pwned = 1">';
            document.body.append(d); }""")
    with pg.expect_console_message(refused):
        pg.evaluate("""() => { const a = document.createElement("a");
            a.href = "javascript:window.pwned = 2"; a.id = "j"; a.textContent = "j";
            document.body.append(a); }""")
        pg.locator("#j").click()
    assert pg.evaluate("window.pwned") is None
    context.close()


def test_markdown_in_replies(page: Page, server: Server) -> None:
    open_chat(page, server.url)
    say(page, "markdown")
    body = page.locator("#log .msg.assistant .body")
    expect(body.locator("strong")).to_have_text("bold")
    expect(body.locator("em")).to_have_text("italic")
    expect(body.locator("p code")).to_have_text("code")
    expect(body.locator("ul li")).to_have_text(["one", "two"])
    expect(body.locator("ol li")).to_have_text(["first", "second"])
    expect(body.locator("pre code")).to_have_text("print('<hi>')")
    link = body.locator("a")
    expect(link).to_have_text("the docs")
    expect(link).to_have_attribute("href", "https://example.org/docs?a=1&b=2")
    expect(link).to_have_attribute("rel", "noopener noreferrer")


TRICKS = [
    "[x](javascript:alert(1))",
    "[x](JAVASCRIPT:alert(1))",
    '[x](https://a.example/"onmouseover="alert(1))',
    "[x](https://a.example/x_y_z**b**)",
    "<a href=javascript:alert(1)>x</a>",
    "**<img src=x onerror=alert(1)>**",
    "`<script>alert(1)</script>`",
    "```\n</code></pre><script>alert(1)</script>\n```",
    "- <svg onload=alert(1)>\n1. [y](data:text/html,<script>alert(1)</script>)",
    "*[z](https://a.example/?q=<b>&r='1')*",
]


def test_the_markdown_renderer_only_makes_its_own_tags(page: Page, server: Server) -> None:
    """The page's own renderer, on text a model might write to break out of it."""
    page.goto(server.url)
    allowed = {"P", "BR", "STRONG", "EM", "CODE", "PRE", "UL", "OL", "LI", "A"}
    links = 0
    for text in TRICKS:
        found = page.evaluate("""(text) => {
            const d = document.createElement("div");
            d.innerHTML = markdown(text);
            return [...d.querySelectorAll("*")].map((e) => [e.tagName,
                [...e.attributes].map((a) => a.name + "=" + a.value)]);
        }""", text)
        for tag, attributes in found:
            assert tag in allowed, (text, found)
            if tag == "A":
                links += 1
                href, target, rel = attributes
                assert href.startswith("href=https://a.example/"), (text, found)
                assert (target, rel) == ("target=_blank", "rel=noopener noreferrer")
            else:
                assert attributes == [], (text, found)
    assert links == 3  # the three https links; no other scheme makes one


def test_approving_a_tool_call(page: Page, server: Server) -> None:
    open_chat(page, server.url)
    say(page, "delete")
    card = page.locator("#panel .card.approval")
    expect(card.locator("p")).to_have_text("The assistant wants to use a tool:")
    expect(card.locator("legend")).to_have_text("delete_file")
    expect(card.locator("pre")).to_have_text('{\n  "path": "notes.txt"\n}')
    expect(page.locator("details.tool summary")).to_have_text(
        "Tool: delete_file (awaiting approval)")
    approve = card.get_by_role("button", name="Approve")
    expect(approve).to_be_focused()
    approve.click()
    expect(page.locator("#log .msg.assistant .body").last).to_have_text(
        "The tool said: Deleted notes.txt")
    expect(page.locator("details.tool summary")).to_have_text("Tool: delete_file (done)")
    expect(card).to_have_count(0)


def test_rejecting_one_of_two_tool_calls_with_a_reason(page: Page, server: Server) -> None:
    open_chat(page, server.url)
    say(page, "delete two")
    card = page.locator("#panel .card.approval")
    expect(card.locator("legend")).to_have_text(["delete_file", "delete_file"])
    say(page, "wait, no")  # nowhere to send it yet: it stays in the box
    expect(page.locator("#box")).to_have_value("wait, no")
    first, second = card.locator("fieldset").all()
    first.get_by_label("Reason (optional)").fill("keep it")
    first.get_by_role("button", name="Reject").click()
    expect(first).to_contain_text("Rejected")
    expect(second.get_by_role("button", name="Approve")).to_be_focused()
    second.get_by_role("button", name="Approve").click()
    expect(page.locator("#log .msg.assistant .body").last).to_have_text(
        "The tool said: Deleted todo.txt")
    expect(page.locator("details.tool summary")).to_have_text(
        ["Tool: delete_file (rejected)", "Tool: delete_file (done)"])
    expect(page.locator("details.tool .result pre")).to_have_text(
        ["Rejected by the user: keep it", "Deleted todo.txt"])
    page.locator("#box").press("Enter")  # now it goes
    expect(page.locator("#log .msg.assistant .body").last).to_have_text(
        "You said 'wait, no' (message 2)")


def test_typing_during_a_turn_is_queued_and_sent_after_it(page: Page, server: Server) -> None:
    open_chat(page, server.url)
    streaming_half(page, "stream queue")
    say(page, "typed meanwhile")  # sent at once, as a steer: stored by the server, dimmed
    queued = page.locator("#queued .msg.user")
    expect(queued).to_contain_text("typed meanwhile")
    expect(queued).to_contain_text("Waiting: the assistant reads it at its next step")
    expect(page.locator("#box")).to_have_value("")
    server.open_gate("queue")  # the reply ends with no step left: the message gets a turn
    expect(page.locator("#log .msg.assistant .body")).to_have_text(
        ["Streaming the first part. And the rest.", "You said 'typed meanwhile' (message 2)"])
    expect(queued).to_have_count(0)
    assert users(page) == ["stream queue", "typed meanwhile"]


def test_a_reload_keeps_what_was_typed_or_queued(page: Page, server: Server) -> None:
    open_chat(page, server.url)
    say(page, "stream draft")
    expect(page.locator("#log .msg.streaming")).to_be_visible()
    say(page, "queued first")
    expect(page.locator("#queued .msg.user .body")).to_have_text(["queued first"])
    page.locator("#box").fill("typed second")
    page.reload()  # the draft is the tab's; the queued message is the server's
    expect(page.locator("#box")).to_have_value("typed second")
    expect(page.locator("#queued .msg.user .body")).to_have_text(["queued first"])
    server.open_gate("draft")
    expect(page.locator("#log .msg.assistant .body")).to_have_text(
        ["Streaming the first part. And the rest.", "You said 'queued first' (message 2)"])
    expect(page.locator("#queued .msg.user")).to_have_count(0)
    page.locator("#box").press("Enter")
    expect(page.locator("#log .msg.assistant .body").last).to_have_text(
        "You said 'typed second' (message 3)")


def test_the_whole_conversation_by_keyboard(page: Page, server: Server) -> None:
    page.goto(server.url)
    box = page.get_by_role("textbox", name="Message")
    expect(box).to_be_focused()  # ready to type at once
    expect(page.get_by_role("log", name="Conversation")).to_have_attribute("aria-live", "polite")
    page.keyboard.type("line one")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("line two")
    page.keyboard.press("Enter")
    expect(page.locator("#log .msg.user .body")).to_have_text(["line one\nline two"])
    expect(page.locator("#log .msg.assistant")).to_have_count(1)
    expect(box).to_be_focused()

    page.keyboard.type("fail keys")
    page.keyboard.press("Enter")
    retry = page.get_by_role("button", name="Retry")
    expect(retry).to_be_focused()  # focus moves to what the conversation waits for
    page.keyboard.press("Enter")
    expect(page.locator("#log .msg.assistant .body").last).to_have_text(
        "You said 'fail keys' (message 2)")
    expect(box).to_be_focused()

    page.keyboard.type("weather")
    page.keyboard.press("Enter")
    expect(page.locator("details.tool summary")).to_have_text("Tool: weather (done)")
    # The tool's result shows before the reply that follows it: the turn is over (and the
    # focus back in the box) only once that reply is there.
    expect(page.locator("#log .msg.assistant .body").last).to_have_text(
        "The tool said: Sunny in Paris, 21 °C")
    expect(box).to_be_focused()
    page.keyboard.press("Shift+Tab")  # back from the box: the last reply's Regenerate (§28)
    expect(page.get_by_role("button", name="Regenerate")).to_be_focused()
    page.keyboard.press("Shift+Tab")  # then its thumbs
    expect(page.get_by_role("button", name="Bad reply").last).to_be_focused()
    for _ in range(4):  # its Good reply, the thumbs of "Let me look.", the tool call's summary
        page.keyboard.press("Shift+Tab")
    expect(page.locator("details.tool summary")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("details.tool .result pre")).to_be_visible()
    for _ in range(6):  # forward again, over the Regenerate of the last reply
        page.keyboard.press("Tab")
    expect(box).to_be_focused()

    page.keyboard.type("bye")
    page.keyboard.press("Enter")
    again = page.get_by_role("button", name="Start a new conversation")
    expect(again).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#log .msg")).to_have_count(0)
    expect(box).to_be_focused()


def test_phone_width(browser: Browser, server: Server) -> None:
    context = browser.new_context(viewport={"width": 320, "height": 640}, is_mobile=True)
    pg = context.new_page()
    open_chat(pg, server.url)
    say(pg, "markdown")
    expect(pg.locator("#log .msg.assistant")).to_have_count(1)
    overflow = pg.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0
    send = pg.locator("#send").bounding_box()
    assert send is not None and send["x"] + send["width"] <= 320
    assert send["y"] + send["height"] <= 640
    context.close()


def test_a_token_is_asked_for_once(browser: Browser, tmp_path: pathlib.Path) -> None:
    guarded = Server(tmp_path, "--token", "s3cret")
    try:
        context = browser.new_context()
        pg = context.new_page()
        pg.goto(guarded.url)
        dialog = pg.get_by_role("dialog")
        expect(dialog).to_be_visible()
        sign_in_at_the_prompt(pg, "This chat needs an access token", "s3cret", refused="wrong")
        expect(dialog).to_be_hidden()
        say(pg, "hi")
        expect(pg.locator("#log .msg.assistant .body")).to_have_text(
            ["You said 'hi' (message 1)"])
        pg.reload()  # the tab keeps the token
        expect(pg.locator("#log .msg.assistant")).to_have_count(1)
        expect(dialog).to_be_hidden()
        context.close()
    finally:
        guarded.stop()


def test_the_page_is_self_contained_and_small() -> None:
    html = (ROOT / "convo" / "serve" / "page.html").read_text()
    # 27 kB until the conversation list and thumbs (§19), 44 kB with branches' Edit and
    # Regenerate (§28) and the guards' retracted replies (§27), 48.8 kB with messages sent
    # while a turn runs, shown until taken and withdrawn (§26)
    assert len(html.encode()) < 49_000
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    assert "@import" not in html
    # Model text reaches HTML only through the Markdown renderer, which escapes first.
    assert html.count("innerHTML") == 1 and "body.innerHTML = markdown(" in html
    # Defence in depth: the page's Content-Security-Policy lets its own script run and
    # nothing else (no inline handlers, no javascript: URLs, no other origin).
    script = re.search(r"<script>(.*?)</script>", html, re.S)
    assert script is not None
    digest = base64.b64encode(hashlib.sha256(script.group(1).encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in html, (
        f"the page's script changed: put 'sha256-{digest}' in its Content-Security-Policy")
    size_kb = round(len(html.encode()) / 1000)
    assert f"{size_kb} kB" in (ROOT / "docs" / "serving.md").read_text()


def _shot(browser: Browser, server: Server, width: int, height: int, scheme: str) -> bytes:
    """A conversation with a tool call, Markdown, and (desktop) a reply being streamed or
    (phone) an approval prompt."""
    context = browser.new_context(viewport={"width": width, "height": height},
                                  color_scheme=scheme)
    pg = context.new_page()
    open_chat(pg, server.url)
    for text in ("What's the weather in Paris?", "weather", "markdown"):
        say(pg, text)
        wait_idle(pg)
    pg.locator("details.tool summary").click()
    if width > 600:
        say(pg, f"stream {scheme}")
        expect(pg.locator("#log .msg.streaming")).to_be_visible()
        pg.locator("#box").fill("Typing while it answers…")
    else:
        say(pg, "delete")
        expect(pg.get_by_role("button", name="Approve")).to_be_focused()
    png = pg.screenshot()
    server.open_gate(scheme)
    context.close()
    return png


def redraw_screenshots() -> None:
    """docs/chat-page.png (desktop) and docs/chat-page-phone.png: light and dark side by side."""
    server = Server(pathlib.Path(tempfile.mkdtemp(prefix="chat-page-gates-")))
    try:
        with sync_api.sync_playwright() as p:
            b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for name, (w, h) in {"chat-page": (760, 720), "chat-page-phone": (360, 740)}.items():
                shots = [_shot(b, server, w, h, s) for s in ("light", "dark")]
                imgs = "".join(f'<img src="data:image/png;base64,{base64.b64encode(s).decode()}">'
                               for s in shots)
                pg = b.new_page(viewport={"width": 2 * w + 12, "height": h})
                pg.set_content(f'<body style="margin:0;display:flex;gap:12px;'
                               f'background:#888">{imgs}</body>')
                pg.screenshot(path=str(ROOT / "docs" / f"{name}.png"))
                pg.close()
            b.close()
    finally:
        server.stop()


if __name__ == "__main__":
    redraw_screenshots()
