"""Both pages in real Chromium at 1280 px and 360 px, light and dark, against `convo serve` on
``examples/staffed_support_bot.py`` with a table of tokens: nothing sits over the sign-in box,
the thumbs-down comment box shows whole above the message box, the operators' lists at phone
width show each entry or say how many more, the operators' page heads a conversation with its
title; a conversation is stored with its first message (or on opening, when it greets), a
link to another user's conversation says so, staff's decisions and the hand-back read as
staff's, and sizes are in binary units as the docs give them.

Each layout test writes its screenshot to tests/.artifacts/pages/ (git-ignored), to look at.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from serve_kit import ROOT, Person, Served, say, served_with_tokens

sync_api = pytest.importorskip("playwright.sync_api")
from playwright.sync_api import Browser, Locator, expect  # noqa: E402

BOT = str(ROOT / "examples" / "staffed_support_bot.py")
GREETER = str(ROOT / "tests" / "serve_fixtures" / "greeting_bot.py")
TOKENS = {f"t-{name}": {"user": name} for name in ("ann", "bob", "cy", "dee", "eve", "fay")}
TOKENS["t-olga"] = {"user": "olga", "role": "operator"}
SIZES = {"desktop": (1280, 800), "phone": (360, 740)}
LOOKS = [(size, scheme) for size in SIZES for scheme in ("light", "dark")]
SHOTS = ROOT / "tests" / ".artifacts" / "pages"
FOCUS_RING = 5  # px outside a focused field: a 3 px outline, 2 px away
expect.set_options(timeout=20_000)  # the pages ask the server again every 1.5 s and 3 s


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served_with_tokens(BOT, tmp_path_factory.mktemp("layouts"), TOKENS) as s:
        yield s


def api(served: Served, token: str) -> httpx.Client:
    return httpx.Client(base_url=served.url, timeout=20.0,
                        headers={"Authorization": f"Bearer {token}"})


def started(served: Served, token: str, said: str) -> str:
    """A conversation of ``token``'s user with one message in it: its id."""
    with api(served, token) as client:
        conversation = str(client.post("/api/conversations", json={}).json()["id"])
        client.post(f"/api/conversations/{conversation}/messages", json={"content": said})
    return conversation


def listed(served: Served, token: str) -> list[str | None]:
    with api(served, token) as client:
        return [c["title"] for c in client.get("/api/conversations").json()["conversations"]]


class Sized(Person):
    """A person's browser context at one size and colour scheme, its motion reduced."""

    def __init__(self, browser: Browser, url: str, token: str | None, size: str = "desktop",
                 scheme: str = "light") -> None:
        width, height = SIZES[size]
        super().__init__(browser, url, token, viewport={"width": width, "height": height},
                         color_scheme=scheme, is_mobile=size == "phone",
                         reduced_motion="reduce")

    def shot(self, name: str, *, full_page: bool = False) -> None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=full_page)


def box_of(locator: Locator) -> dict[str, float]:
    box = locator.bounding_box()
    assert box is not None, f"{locator} is not shown"
    return box


def overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return (a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"]
            and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"])


def inside(inner: dict[str, float], outer: dict[str, float]) -> bool:
    return (inner["x"] >= outer["x"] and inner["y"] >= outer["y"]
            and inner["x"] + inner["width"] <= outer["x"] + outer["width"]
            and inner["y"] + inner["height"] <= outer["y"] + outer["height"])


# -- the chat page ------------------------------------------------------------------------

@pytest.mark.parametrize(("size", "scheme"), LOOKS)
def test_nothing_sits_over_the_sign_in_box(browser: Browser, served: Served, size: str,
                                           scheme: str) -> None:
    """Opening a conversation's link asks for a token: the box stands alone (no "Thinking"
    line under it: nothing runs until the token is given), its parts stacked inside it."""
    conversation = started(served, "t-ann", "Where is my order A1?")
    person = Sized(browser, f"{served.url}/?c={conversation}", None, size, scheme)
    pg = person.page
    dialog = pg.get_by_role("dialog")
    token = pg.get_by_role("textbox", name="This chat needs an access token")
    expect(token).to_be_focused()
    expect(pg.locator("#thinking")).to_be_hidden()
    person.shot(f"sign-in-{size}-{scheme}")
    frame = box_of(dialog)
    width, _ = SIZES[size]
    assert frame["x"] >= 0 and frame["x"] + frame["width"] <= width
    for shown in pg.locator("#thinking, #first, #stopbar, #log .msg, #panel .card").all():
        if shown.is_visible():
            assert not overlap(box_of(shown), frame), f"{shown} is under the sign-in box"
    parts = [box_of(dialog.locator(p)) for p in ("label", "input", "button")]
    assert all(inside(p, frame) for p in parts)
    assert not any(overlap(a, b) for i, a in enumerate(parts) for b in parts[i + 1:])
    token.fill("t-ann")
    token.press("Enter")
    expect(pg.locator("#log .msg.user .body")).to_have_text(["Where is my order A1?"])
    expect(pg.locator("#thinking")).to_be_hidden()
    person.close()


@pytest.mark.parametrize(("size", "scheme"), LOOKS)
def test_the_comment_box_shows_whole_above_the_message_box(browser: Browser, served: Served,
                                                            size: str, scheme: str) -> None:
    person = Sized(browser, served.url + "/", "t-bob", size, scheme)
    pg = person.page
    for n in range(4):  # more than the window holds: the last reply is at its bottom
        say(pg, f"Where is my order C{n}? " * 2)
        expect(pg.locator("#log .fb")).to_have_count(n + 1)
    pg.get_by_role("button", name="Bad reply").last.click()
    comment = pg.get_by_role("textbox", name="What was wrong? (optional)")
    expect(comment).to_be_focused()
    note, main, footer = (box_of(pg.locator(s)) for s in ("form.fbnote", "main", "footer"))
    assert note["y"] >= main["y"]
    assert note["y"] + note["height"] + FOCUS_RING <= footer["y"], (
        f"the comment box ends at {note['y'] + note['height']} px, the message box starts at "
        f"{footer['y']} px")
    assert not overlap(note, footer)
    person.shot(f"chat-{size}-{scheme}")
    pg.keyboard.type("it did not look it up")
    pg.keyboard.press("Enter")
    expect(pg.get_by_text("Thank you: your comment was sent.")).to_be_visible()
    person.close()


def test_the_attachment_limit_is_said_in_binary_units(browser: Browser, served: Served) -> None:
    """docs/parts.md gives the limit as 10 MiB (10485760 bytes): the page says the same."""
    person = Sized(browser, served.url + "/", "t-bob")
    pg = person.page
    expect(pg.locator("#box")).to_be_focused()
    drop = """([name, size]) => {
      const t = new DataTransfer();
      t.items.add(new File([new Uint8Array(size)], name, {type: "application/pdf"}));
      document.dispatchEvent(new DragEvent("drop", {dataTransfer: t, bubbles: true,
                                                    cancelable: true}));
    }"""
    pg.evaluate(drop, ["notes.pdf", 1536])
    expect(pg.locator("#atts .note")).to_have_text("[document: notes.pdf, 1.5 KiB]")
    pg.evaluate(drop, ["huge.pdf", 11 * 1024 * 1024])
    expect(pg.locator("#panel .card.error")).to_have_text(
        "huge.pdf is 11 MiB: over the limit of 10 MiB per file.")
    pg.evaluate(drop, ["edge.pdf", 10 * 1024 * 1024 + 1])  # the same when rounded: bytes
    expect(pg.locator("#panel .card.error")).to_have_text(
        "edge.pdf is 10485761 B: over the limit of 10485760 B per file.")
    person.close()


def test_opening_the_chat_page_stores_nothing_until_the_first_message(
        browser: Browser, served: Served) -> None:
    person = Sized(browser, served.url + "/", "t-cy")
    pg = person.page
    expect(pg.locator("#box")).to_be_focused()
    expect(pg.locator("#first")).to_have_text("Ask me anything.")
    expect(pg.locator("#convs")).to_be_empty()
    assert (pg.url, listed(served, "t-cy")) == (served.url + "/", [])
    say(pg, "Where is my order A1?")
    expect(pg.locator("#log .msg.assistant .body")).to_have_text(
        ["Order A1: a kettle, 25.00 EUR, delivered."])
    expect(pg).to_have_url(re.compile(r"/\?c=[\w-]{16,}$"))
    expect(pg.locator("#convs a[aria-current]")).to_contain_text("Where is my order A1?")
    assert listed(served, "t-cy") == ["Where is my order A1?"]
    first = pg.url
    pg.get_by_role("button", name="New conversation").click()
    expect(pg).to_have_url(served.url + "/")
    expect(pg.locator("#log .msg")).to_have_count(0)
    expect(pg.locator("#first")).to_be_visible()
    expect(pg.locator("#box")).to_be_focused()
    assert listed(served, "t-cy") == ["Where is my order A1?"]  # still only the one
    pg.go_back()
    expect(pg).to_have_url(first)
    expect(pg.locator("#log .msg.user .body")).to_have_text(["Where is my order A1?"])
    person.close()


def test_another_users_link_says_so_and_makes_nothing(browser: Browser, served: Served) -> None:
    bobs = started(served, "t-bob", "my own business")
    person = Sized(browser, f"{served.url}/?c={bobs}", "t-dee")
    pg = person.page
    alert = pg.locator("#panel .card.error")
    expect(alert.locator("p")).to_have_text(
        "This conversation is not one of yours, or it was deleted: nothing of it is shown "
        "here. Check the link, or start a new conversation.")
    start = alert.get_by_role("button", name="Start a new conversation")
    expect(start).to_be_focused()
    expect(pg.locator("#send")).to_be_disabled()
    expect(pg.locator("#log .msg")).to_have_count(0)
    assert (pg.url, listed(served, "t-dee")) == (f"{served.url}/?c={bobs}", [])
    say(pg, "hello?")  # nowhere to send it: it stays in the box
    expect(pg.locator("#box")).to_have_value("hello?")
    start.click()
    expect(pg).to_have_url(served.url + "/")
    expect(alert).to_have_count(0)
    pg.locator("#box").press("Enter")
    expect(pg.locator("#log .msg.user .body")).to_have_text(["hello?"])
    expect(pg).to_have_url(re.compile(r"/\?c=[\w-]{16,}$"))
    assert listed(served, "t-dee") == ["hello?"]
    person.close()


def test_a_conversation_that_greets_is_stored_on_opening(browser: Browser,
                                                          tmp_path: Path) -> None:
    greeter = Served(GREETER, tmp_path, "--store", "memory")
    try:
        person = Sized(browser, greeter.url + "/", None)
        pg = person.page
        expect(pg.locator("#log .msg.assistant .body")).to_have_text(
            ["Hello! What can I do for you?"])
        expect(pg).to_have_url(re.compile(r"/\?c=[\w-]{16,}$"))
        expect(pg.locator("#convs a")).to_have_count(1)
        say(pg, "hi")
        expect(pg.locator("#log .msg.assistant .body")).to_have_text(
            ["Hello! What can I do for you?", "You said 'hi'"])
        person.close()
    finally:
        greeter.stop()


def test_staffs_rejection_and_the_hand_back_read_as_staffs(browser: Browser,
                                                           served: Served) -> None:
    person = Sized(browser, served.url + "/", "t-eve")
    me = person.page
    panel = me.locator("#panel .card")
    say(me, "Please refund order B2")
    expect(panel).to_have_text("A member of staff is checking this request.")
    conversation = me.url.rsplit("=", 1)[1]
    with api(served, "t-olga") as olga:
        call = olga.get(f"/api/conversations/{conversation}").json()["waiting_for"]["calls"][0]
        olga.post(f"/api/conversations/{conversation}/approvals", json={"decisions": [
            {"call_id": call["id"], "approve": False, "reason": "it was a gift"}]})
    tool = me.locator("details.tool")
    expect(tool.locator("summary")).to_have_text("Tool: refund (rejected)")
    tool.locator("summary").click()
    expect(tool.locator(".result pre")).to_have_text("Rejected by staff: it was a gift")
    expect(me.locator("#log .msg.assistant .body").last).to_have_text(
        "Sorry, staff did not approve that refund (Rejected by staff: it was a gift).")

    say(me, "a person, please")
    expect(panel).to_have_text("You are talking with a person.")
    with api(served, "t-olga") as olga:
        olga.post(f"/api/conversations/{conversation}/operator_messages",
                  json={"content": "Olga here: gifts are refunded to the giver."})
        olga.post(f"/api/conversations/{conversation}/handback", json={})
    back = "The assistant is back: it answers your next message."
    expect(panel).to_have_text(back)  # the page learns it by itself
    me.reload()
    expect(panel).to_have_text(back)
    say(me, "thanks")
    expect(me.locator("#log .msg.assistant .body").last).to_have_text(
        "I'm back. olga told you: 'Olga here: gifts are refunded to the giver.'")
    expect(panel).to_have_count(0)
    person.close()


# -- the operators' page --------------------------------------------------------------------

@pytest.fixture(scope="module")
def crowd(served: Served) -> None:
    """Enough conversations for every list of the operators' page to pass its fold."""
    for n in range(7):
        started(served, "t-fay", f"Please refund order A{n}")
        started(served, "t-fay", f"a person, please ({n})")


CLIPPED = """(ul) => [...ul.querySelectorAll(":scope > li > a")].map((a) => {
  const li = a.parentElement, box = li.getBoundingClientRect();
  if (!li.getClientRects().length) return "hidden";
  for (let up = li.parentElement; up && up !== document.body; up = up.parentElement) {
    const style = getComputedStyle(up), edge = up.getBoundingClientRect();
    if (style.overflowY !== "visible" && (box.top < edge.top || box.bottom > edge.bottom))
      return "clipped by " + up.tagName.toLowerCase();
  }
  return "shown";
})"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_at_phone_width_each_list_shows_its_entries_or_how_many_more(
        browser: Browser, served: Served, crowd: None, scheme: str) -> None:
    """No list scrolls inside a box of its own; past its first five entries a list says how
    many more it has, and shows them on demand."""
    person = Sized(browser, served.url + "/operator", "t-olga", "phone", scheme)
    op = person.page
    with api(served, "t-olga") as olga:
        counts = {name: len(olga.get(f"/api/conversations?limit=50{query}").json()[
            "conversations"]) for name, query in (("approval", "&waiting_for=approval"),
                                                 ("operator", "&waiting_for=operator"),
                                                 ("all", ""))}
    assert min(counts.values()) > 5
    for name, count in counts.items():
        ul = op.locator(f"ul#{name}")
        expect(ul.locator("li > a")).to_have_count(count)
        seen = ul.evaluate(CLIPPED)
        assert seen == ["shown"] * 5 + ["hidden"] * (count - 5), f"{name}: {seen}"
        more = op.locator(f"ul#{name} + button.fold")
        expect(more).to_have_text(f"Show {count - 5} more")
    person.shot(f"operator-lists-phone-{scheme}", full_page=True)
    for name, count in counts.items():
        op.locator(f"ul#{name} + button.fold").click()
        expect(op.locator(f"ul#{name} + button.fold")).to_be_hidden()
        assert op.locator(f"ul#{name}").evaluate(CLIPPED) == ["shown"] * count
    person.close()


@pytest.mark.parametrize(("size", "scheme"), LOOKS)
def test_the_operators_page_heads_a_conversation_with_its_title(
        browser: Browser, served: Served, size: str, scheme: str) -> None:
    conversation = started(served, "t-ann", f"Please refund order B2 ({size}, {scheme})")
    person = Sized(browser, f"{served.url}/operator?c={conversation}", "t-olga", size, scheme)
    op = person.page
    head = op.locator("#head strong")
    expect(head).to_have_text(f"Please refund order B2 ({size}, {scheme})")
    expect(op.locator("#head .note")).to_contain_text("ann")
    card = op.locator("#panel .card")
    expect(card.locator("p")).to_have_text("Waiting for staff to approve:")
    card.get_by_label("Reason (optional)").fill("ask the shop first")
    person.shot(f"operator-{size}-{scheme}")
    card.get_by_role("button", name="Reject").click()
    expect(op.locator("#log .text").nth(-2)).to_have_text("Rejected by staff: ask the shop first")
    expect(head).to_have_text(f"Please refund order B2 ({size}, {scheme})")  # still
    person.close()


def test_the_shots_folder_is_ignored_by_git() -> None:
    ignored = (ROOT / ".gitignore").read_text().splitlines()
    assert "tests/.artifacts/" in ignored
