"""The chat page's branches (API.md §28) in real Chromium against `convo serve`: "Edit" on a
user message shows the tool calls that stay done before the user sends the edited text, and
the page then shows the branch (its URL, a "Branched from …" link, the branch under its parent
in the list); "Regenerate" makes the last reply again, first asking whether to (listing them)
when calls made after it stay done."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from serve_kit import ROOT, Served, page_of, say

sync_api = pytest.importorskip("playwright.sync_api")
from playwright.sync_api import Browser, Page, expect  # noqa: E402

BOT = str(ROOT / "tests" / "cli_fixtures" / "branch_bot.py")
expect.set_options(timeout=20_000)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder: Path = tmp_path_factory.mktemp("branches")
    s = Served(BOT, folder, "--store", f"sqlite:///{folder / 'convo.db'}")
    yield s
    s.stop()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    yield from page_of(browser, width=1000, height=700)


def test_edit_shows_what_stays_done_then_sends_the_edit_on_a_branch(
        page: Page, served: Served) -> None:
    page.goto(served.url)
    replies = page.locator("#log .msg.assistant .body")
    say(page, "hello")
    expect(replies).to_have_text(["You said 'hello' (call 1)"])
    say(page, "add tea")
    expect(replies).to_have_text(["You said 'hello' (call 1)", "Done: added tea (call 3)"])
    original = page.url
    cid = original.split("?c=")[1]
    expect(page.get_by_role("link", name=re.compile("^Branched from"))).to_have_count(0)

    page.locator("#log .msg.user").nth(1).get_by_role("button", name="Edit").click()
    editor = page.get_by_role("textbox", name="Edit your message")
    expect(editor).to_have_value("add tea")
    expect(page.locator("form.edit .undone li")).to_have_text(['add_to_cart {"item":"tea"}'])
    editor.fill("add jam")
    page.locator("form.edit").get_by_role("button", name="Send").click()

    expect(page).not_to_have_url(original)
    expect(replies).to_have_text(["You said 'hello' (call 1)", "Done: added jam (call 5)"])
    expect(page.locator("#log .msg.user .body")).to_have_text(["hello", "add jam"])
    back = page.get_by_role("link", name=re.compile("^Branched from"))
    expect(back).to_have_attribute("href", f"?c={cid}")
    branch = page.url.split("?c=")[1]
    state = served.client.get(f"/api/conversations/{branch}").json()["state"]
    assert state == {"cart": ["jam"]}  # tea was added after the branch point: not here
    assert served.client.get(f"/api/conversations/{cid}").json()["state"] == {"cart": ["tea"]}
    nested = page.locator(f'#convs li:has(> a[data-id="{cid}"]) ul a[data-id="{branch}"]')
    expect(nested).to_have_count(1)  # the branch is listed under its parent

    page.get_by_role("button", name="Regenerate").click()
    expect(replies).to_have_text(["You said 'hello' (call 1)", "Done: added jam (call 6)"])
    expect(page.get_by_role("link", name=re.compile("^Branched from"))).to_have_attribute(
        "href", f"?c={branch}")

    back = page.get_by_role("link", name=re.compile("^Branched from"))
    back.click()
    expect(page).to_have_url(re.compile(re.escape(f"?c={branch}") + "$"))
    expect(replies).to_have_text(["You said 'hello' (call 1)", "Done: added jam (call 5)"])


def test_regenerate_confirms_first_when_calls_stay_done(page: Page, served: Served) -> None:
    page.goto(served.url)
    replies = page.locator("#log .msg.assistant .body")
    say(page, "add cup")
    expect(replies).to_have_count(1)
    first = replies.nth(0).inner_text()
    # The reply before the tool call is empty (a call only): regenerate the user's turn's last
    # reply; its tool ran before it, so nothing is listed and it goes at once.
    page.get_by_role("button", name="Regenerate").click()
    expect(replies).to_have_count(1)
    expect(replies.nth(0)).not_to_have_text(first)
    expect(page.get_by_role("link", name=re.compile("^Branched from"))).to_have_count(1)


def test_regenerate_lists_the_calls_that_stay_done_and_goes_only_when_confirmed(
        page: Page, served: Served) -> None:
    page.goto(served.url)
    replies = page.locator("#log .msg.assistant .body")
    say(page, "buy pen")
    buying = re.compile(r"^Buying pen \(call \d+\)\.")
    expect(replies.first).to_have_text(buying)
    first, original = replies.first.inner_text(), page.url
    cid = original.split("?c=")[1]
    regenerate = page.locator("#log").get_by_role("button", name="Regenerate")
    asked = page.get_by_role("alert").filter(has_text="Regenerate this reply?")

    regenerate.click()  # the reply's call ran after it: the page asks first, saying so
    expect(asked).to_be_visible()
    expect(asked.locator(".undone li")).to_have_text(['add_to_cart {"item":"pen"}'])
    asked.get_by_role("button", name="Cancel").click()
    expect(asked).to_have_count(0)
    expect(page).to_have_url(original)  # nothing made

    regenerate.click()
    asked.get_by_role("button", name="Regenerate").click()
    expect(page).not_to_have_url(original)
    expect(replies.first).to_have_text(buying)
    expect(replies.first).not_to_have_text(first)  # made again by another model call
    branch = page.url.split("?c=")[1]
    # Before the reply the cart was empty; the call it made again put the pen in once.
    assert served.client.get(f"/api/conversations/{branch}").json()["state"] == {
        "cart": ["pen"]}
    assert served.client.get(f"/api/conversations/{cid}").json()["state"] == {"cart": ["pen"]}
    expect(page.get_by_role("link", name=re.compile("^Branched from"))).to_have_attribute(
        "href", f"?c={cid}")


def test_the_calls_made_inside_a_subroutine_are_listed_before_the_edit_is_sent(
        page: Page, served: Served) -> None:
    page.goto(served.url)
    replies = page.locator("#log .msg.assistant .body")
    say(page, "gift tea")  # wrap (a subroutine) adds the tea with a call of its own
    expect(replies).to_have_text([re.compile(r"^Done: Done: added tea \(call \d+\)")])
    original = page.url
    cid = original.split("?c=")[1]
    count = len(served.client.get("/api/conversations").json()["conversations"])

    page.locator("#log .msg.user").nth(0).get_by_role("button", name="Edit").click()
    editor = page.get_by_role("textbox", name="Edit your message")
    expect(editor).to_have_value("gift tea")
    # Exactly what the branch lists: the subroutine's call where it started, then wrap's.
    expect(page.locator("form.edit .undone li")).to_have_text(
        ['add_to_cart {"item":"tea"}', 'wrap {"input":"add tea"}'])
    expect(page).to_have_url(original)  # asking made nothing
    assert len(served.client.get("/api/conversations").json()["conversations"]) == count
    editor.fill("gift jam")
    page.locator("form.edit").get_by_role("button", name="Send").click()

    expect(page).not_to_have_url(original)
    expect(replies).to_have_text([re.compile(r"^Done: Done: added jam \(call \d+\)")])
    branch = page.url.split("?c=")[1]
    assert served.client.get(f"/api/conversations/{branch}").json()["state"] == {
        "cart": ["jam"]}
    assert served.client.get(f"/api/conversations/{cid}").json()["state"] == {"cart": ["tea"]}
    listed = served.client.get("/api/conversations").json()["conversations"]
    assert len(listed) == count + 1  # one branch made, by the confirm
