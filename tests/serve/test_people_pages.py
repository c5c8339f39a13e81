"""The chat page's people features and the operators' page (API.md §19), in real Chromium
against `convo serve` on ``serve_fixtures/people_page_bot.py`` with a table of tokens: the
bot's title and first prompt, the conversation list (a sidebar, a drawer at phone width),
thumbs, and `/operator`. The two-browser refund story on Postgres is
test_staffed_refund_story.py."""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from serve_kit import ROOT, Served, say, served_with_tokens

from convo._botfile import UsageProblem, bot_page

sync_api = pytest.importorskip("playwright.sync_api")
from page_kit import sign_in_at_the_prompt  # noqa: E402
from playwright.sync_api import Browser, BrowserContext, Page, expect  # noqa: E402

BOT = str(ROOT / "tests" / "serve_fixtures" / "people_page_bot.py")
TOKENS = {"t-ann": {"user": "ann"}, "t-bob": {"user": "bob"}, "t-cy": {"user": "cy"},
          "t-dee": {"user": "dee"}, "t-eve": {"user": "eve"},
          "t-olga": {"user": "olga", "role": "operator"}}
TITLE = "Mugs & Co. <Support>"
expect.set_options(timeout=20_000)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served_with_tokens(BOT, tmp_path_factory.mktemp("people"), TOKENS) as s:
        yield s


def signed_in(browser: Browser, served: Served, token: str, path: str = "/",
              **options: object) -> tuple[BrowserContext, Page]:
    """A new browser context whose tab already holds ``token`` (as after the sign-in prompt);
    any script error in it fails the test when the context is closed by ``closed``."""
    context = browser.new_context(**({"viewport": {"width": 1000, "height": 700}} | options))
    key = "convo-operator-token" if path.startswith("/operator") else "convo-token"
    context.add_init_script(f"sessionStorage.setItem({key!r}, {token!r})")
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    context.errors = errors  # type: ignore[attr-defined]
    pg.goto(served.url + path)
    return context, pg


def closed(context: BrowserContext) -> None:
    errors = context.errors  # type: ignore[attr-defined]
    context.close()
    assert errors == []


def test_the_bots_title_and_first_prompt(browser: Browser, served: Served) -> None:
    context, pg = signed_in(browser, served, "t-ann")
    expect(pg.locator("h1")).to_have_text(TITLE)
    expect(pg).to_have_title(TITLE)
    first = pg.locator("#first")
    expect(first).to_have_text("Ask about an order, a refund or a return.")  # no greeting yet
    expect(pg.locator("#box")).to_be_focused()
    say(pg, "hello")
    expect(pg.locator("#log .msg.assistant .body")).to_have_text(["You said 'hello' (message 1)"])
    expect(first).to_be_hidden()
    closed(context)


def test_the_sign_in_prompt_keeps_the_token_in_the_tab(browser: Browser, served: Served) -> None:
    context = browser.new_context()
    pg = context.new_page()
    pg.goto(served.url)
    sign_in_at_the_prompt(pg, "This chat needs an access token", "t-bob")
    say(pg, "hi from bob")
    expect(pg.locator("#log .msg.assistant .body")).to_have_text(
        ["You said 'hi from bob' (message 1)"])
    assert pg.evaluate("sessionStorage.getItem('convo-token')") == "t-bob"
    context.close()


def test_the_pages_are_self_contained_with_their_script_hashed() -> None:
    """Each page's Content-Security-Policy names its own script's hash (and nothing else
    runs); the operators' page inserts every text as text: it has no HTML renderer."""
    for name in ("page.html", "operator.html"):
        html = (ROOT / "convo" / "serve" / name).read_text()
        assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)
        script = re.search(r"<script>(.*?)</script>", html, re.S)
        assert script is not None
        digest = base64.b64encode(hashlib.sha256(script.group(1).encode()).digest()).decode()
        assert f"script-src 'sha256-{digest}'" in html, (
            f"{name}'s script changed: put 'sha256-{digest}' in its Content-Security-Policy")
    assert "innerHTML" not in (ROOT / "convo" / "serve" / "operator.html").read_text()


def test_create_app_takes_the_title_and_first_prompt() -> None:
    from starlette.testclient import TestClient

    from convo import LinearTemplate, UserTemplate
    from convo.serve import create_app

    template = LinearTemplate([UserTemplate()])
    with TestClient(create_app(template, title='Desk "7" & <b>', first_prompt="Say hi")) as client:
        for path in ("/", "/operator"):
            html = client.get(path).text
            assert "<title>Desk \"7\" &amp; &lt;b&gt;</title>" in html
            assert '<h1 id="title">Desk "7" &amp; &lt;b&gt;</h1>' in html
        assert '<meta name="convo-first-prompt" content="Say hi">' in client.get("/").text
    with TestClient(create_app(template)) as client:
        html = client.get("/").text
        assert "<title>Chat</title>" in html
        assert '<meta name="convo-first-prompt" content="Ask me anything.">' in html


def test_a_bot_files_title_must_be_text(tmp_path: Path) -> None:
    import types

    module = types.ModuleType("bot")
    module.title = "  Help desk "  # type: ignore[attr-defined]
    assert bot_page(module, "bot.py") == {"title": "Help desk"}
    module.first_prompt = 42  # type: ignore[attr-defined]
    with pytest.raises(UsageProblem) as caught:
        bot_page(module, "bot.py")
    assert str(caught.value) == ('bot.py: first_prompt must be a non-empty string '
                                 '(first_prompt = "..."), got 42')


def api(served: Served, token: str) -> httpx.Client:
    return httpx.Client(base_url=served.url, timeout=20.0,
                        headers={"Authorization": f"Bearer {token}"})


def test_an_operator_approves_from_the_operators_page(browser: Browser, served: Served) -> None:
    with api(served, "t-ann") as ann:
        conversation = ann.post("/api/conversations", json={}).json()["id"]
        waiting = ann.post(f"/api/conversations/{conversation}/messages",
                           json={"content": "refund A1"}).json()
    assert waiting["waiting_for"]["type"] == "approval"
    context, pg = signed_in(browser, served, "t-olga", f"/operator?c={conversation}")
    expect(pg).to_have_title(f"{TITLE} · Operators")
    who, said = pg.locator("#log .msg .who"), pg.locator("#log .msg .text")
    expect(who).to_have_text(["System", "Customer (ann)", "Bot"])
    expect(said).to_have_text(["Be brief.", "refund A1"])
    expect(pg.locator("#log .call")).to_have_text('Calls refund{\n  "order": "A1"\n}')
    card = pg.locator("#panel .card")
    expect(card.locator("p")).to_have_text(
        "Waiting for the customer to approve (staff may decide):")
    expect(card.locator("legend")).to_have_text("refund")
    card.get_by_role("button", name="Approve").click()
    expect(who).to_have_text(["System", "Customer (ann)", "Bot", "Tool result", "Bot"])
    expect(said).to_have_text(["Be brief.", "refund A1", "Refunded order A1.",
                               "Done: Refunded order A1."])
    expect(card).to_have_count(0)
    closed(context)


def test_the_conversation_list_newest_first_and_older_on_demand(browser: Browser,
                                                                 served: Served) -> None:
    with api(served, "t-cy") as cy:
        ids = []
        for n in range(1, 23):
            ids.append(cy.post("/api/conversations", json={}).json()["id"])
            cy.post(f"/api/conversations/{ids[-1]}/messages", json={"content": f"note {n}"})
    context, pg = signed_in(browser, served, "t-cy")  # a new one: stored with its first message
    expect(pg.locator("#first")).to_be_visible()
    items = pg.locator("#convs a")
    expect(items).to_have_count(20)
    expect(pg.locator("#convs a[aria-current]")).to_have_count(0)
    assert [t.strip() for t in items.evaluate_all("as => as.map((a) => a.firstChild.data)")] == \
        [f"note {n}" for n in range(22, 2, -1)]
    pg.get_by_role("button", name="Show older").click()
    expect(items).to_have_count(22)
    expect(pg.get_by_role("button", name="Show older")).to_be_hidden()
    assert items.evaluate_all("as => as.slice(20).map((a) => a.firstChild.data)") == \
        ["note 2", "note 1"]
    items.nth(20).click()
    expect(pg).to_have_url(f"{served.url}/?c={ids[1]}")
    expect(pg.locator("#log .msg.user .body")).to_have_text(["note 2"])
    expect(pg.locator("#convs a[aria-current]")).to_have_text(re.compile("^note 2"))
    say(pg, "again")  # activity: the list is read again, this conversation first
    expect(items.first).to_have_text(re.compile("^note 2"))
    closed(context)


def test_thumbs_rate_a_reply_and_stay_pressed(browser: Browser, served: Served) -> None:
    context, pg = signed_in(browser, served, "t-ann")
    say(pg, "rate me")
    reply = pg.locator("#log .msg.assistant").last
    expect(reply.locator(".body")).to_have_text("You said 'rate me' (message 1)")
    good, bad = reply.get_by_role("button", name="Good reply"), reply.get_by_role(
        "button", name="Bad reply")
    expect(good).to_have_attribute("aria-pressed", "false")
    good.click()
    expect(good).to_have_attribute("aria-pressed", "true")
    conversation = pg.url.rsplit("=", 1)[1]

    def ratings() -> list[tuple[int, int, str, str]]:
        with api(served, "t-olga") as olga:
            found = olga.get("/api/feedback").json()["feedback"]
        return [(f["message_index"], f["rating"], f["message"], f["user"]) for f in found
                if f["conversation"] == conversation]

    assert ratings() == [(2, 1, "You said 'rate me' (message 1)", "ann")]
    bad.click()
    expect(bad).to_have_attribute("aria-pressed", "true")
    expect(good).to_have_attribute("aria-pressed", "false")
    assert ratings() == [(2, -1, "You said 'rate me' (message 1)", "ann")]  # replaced
    pg.reload()
    expect(pg.get_by_role("button", name="Bad reply")).to_have_attribute("aria-pressed", "true")
    closed(context)


def test_thumbs_come_back_from_the_server_and_a_thumbs_down_takes_a_comment(
        browser: Browser, served: Served) -> None:
    context, pg = signed_in(browser, served, "t-eve")
    say(pg, "keep my thumbs")
    reply = pg.locator("#log .msg.assistant").last
    expect(reply.locator(".body")).to_have_text("You said 'keep my thumbs' (message 1)")
    reply.get_by_role("button", name="Good reply").click()
    expect(reply.get_by_role("button", name="Good reply")).to_have_attribute("aria-pressed",
                                                                           "true")
    pg.reload()  # the page keeps no ratings of its own: these come from the conversation
    good = pg.get_by_role("button", name="Good reply")
    expect(good).to_have_attribute("aria-pressed", "true")
    expect(pg.get_by_role("button", name="Bad reply")).to_have_attribute("aria-pressed", "false")
    other, elsewhere = signed_in(browser, served, "t-eve", pg.url[len(served.url):])
    expect(elsewhere.get_by_role("button", name="Good reply")).to_have_attribute(
        "aria-pressed", "true")  # another device: the same thumb pressed
    closed(other)

    pg.get_by_role("button", name="Bad reply").click()
    comment = pg.get_by_role("textbox", name="What was wrong? (optional)")
    expect(comment).to_be_focused()
    expect(good).to_have_attribute("aria-pressed", "false")
    pg.keyboard.type("it only repeats me")
    pg.keyboard.press("Enter")
    expect(pg.get_by_text("Thank you: your comment was sent.")).to_be_visible()
    expect(comment).to_have_count(0)
    conversation = pg.url.rsplit("=", 1)[1]
    with api(served, "t-olga") as olga:
        found = olga.get("/api/feedback").json()["feedback"]
    assert [(f["message_index"], f["rating"], f["comment"], f["user"]) for f in found
            if f["conversation"] == conversation] == [(2, -1, "it only repeats me", "eve")]
    pg.reload()
    expect(pg.get_by_role("button", name="Bad reply")).to_have_attribute("aria-pressed", "true")
    expect(pg.get_by_role("button", name="Good reply")).to_have_attribute("aria-pressed",
                                                                          "false")
    closed(context)


def test_at_phone_width_the_list_is_a_drawer(browser: Browser, served: Served) -> None:
    with api(served, "t-dee") as dee:
        older = dee.post("/api/conversations", json={}).json()["id"]
        dee.post(f"/api/conversations/{older}/messages", json={"content": "from the drawer"})
    context, pg = signed_in(browser, served, "t-dee", viewport={"width": 360, "height": 700},
                            is_mobile=True)
    expect(pg.locator("#box")).to_be_focused()
    side, menu = pg.locator("#side"), pg.get_by_role("button", name="Conversations")
    expect(side).to_be_hidden()
    assert pg.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
    menu.click()
    expect(side).to_be_visible()
    expect(menu).to_have_attribute("aria-expanded", "true")
    pg.keyboard.press("Escape")
    expect(side).to_be_hidden()
    expect(menu).to_be_focused()
    menu.click()
    pg.locator("#convs a", has_text="from the drawer").click()
    expect(side).to_be_hidden()
    expect(pg.locator("#log .msg.user .body")).to_have_text(["from the drawer"])
    closed(context)


def test_the_operators_page_asks_for_an_operator_token(browser: Browser, served: Served) -> None:
    with api(served, "t-ann") as ann:
        ann.post("/api/conversations", json={})
    context = browser.new_context()
    pg = context.new_page()
    pg.goto(served.url + "/operator")
    sign_in_at_the_prompt(pg, "Sign in with an operator token", "t-olga", refused="t-nobody")
    expect(pg.get_by_role("dialog")).to_be_hidden()
    expect(pg.locator("#all a").first).to_be_visible()  # every user's conversations
    assert pg.evaluate("sessionStorage.getItem('convo-operator-token')") == "t-olga"
    assert pg.evaluate("sessionStorage.getItem('convo-token')") is None
    context.close()
