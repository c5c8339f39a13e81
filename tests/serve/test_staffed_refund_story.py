"""A customer and an operator, in two browser contexts at once (real Chromium), hold a
refund conversation end to end against a real `convo serve` on a throwaway Postgres, signed in
with a table of tokens: the customer asks for a refund, the bot calls the refund tool, the
operator approves from `/operator`, the customer sees the result; then a handoff, the
operator's reply, the hand-back, and the bot goes on with the whole history. The bot is
``examples/staffed_support_bot.py`` on its mock model.

Screenshots of both views go to docs/images/ (``python
tests/serve/test_staffed_refund_story.py`` redraws them; the test itself writes nothing into
the checkout).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from serve_kit import (
    CHROMIUM,
    CHROMIUM_ARGS,
    ROOT,
    Person,
    Postgres,
    Served,
    say,
    served_with_tokens,
)

sync_api = pytest.importorskip("playwright.sync_api")
from playwright.sync_api import Browser, Page, expect  # noqa: E402

pytestmark = pytest.mark.e2e
BOT = str(ROOT / "examples" / "staffed_support_bot.py")
TOKENS = {"t-ann": {"user": "ann"}, "t-olga": {"user": "olga", "role": "operator"}}
IMAGES = ROOT / "docs" / "images"
expect.set_options(timeout=20_000)  # the pages ask the server again every 1.5 s and 3 s


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, postgres: Postgres) -> Iterator[Served]:
    with served_with_tokens(BOT, tmp_path_factory.mktemp("staff"), TOKENS,
                            postgres.fresh()) as s:
        yield s


def story(browser: Browser, served: Served, shots: Path | None) -> None:
    customer = Person(browser, served.url + "/", "t-ann")
    staff = Person(browser, served.url + "/operator", "t-olga")
    me, op = customer.page, staff.page
    replies = me.locator("#log .msg.assistant .body")
    panel = me.locator("#panel .card")

    # The bot's title; it has no greeting: the first prompt, then a refund staff must approve.
    expect(me).to_have_title("Mugs & Co. support")
    expect(op).to_have_title("Mugs & Co. support · Operators")
    expect(me.locator("#first")).to_have_text("Ask me anything.")
    say(me, "Please refund order A1")
    expect(panel).to_have_text("A member of staff is checking this request.")
    expect(me.locator("details.tool summary")).to_have_text("Tool: refund (awaiting approval)")
    expect(panel.get_by_role("button")).to_have_count(0)  # nothing for the customer to decide
    expect(me.locator("#convs a").first).to_contain_text("Please refund order A1")

    waiting = op.locator("#approval a")
    expect(waiting).to_have_count(1)
    expect(waiting).to_contain_text("Please refund order A1")
    expect(waiting).to_contain_text("ann · approval (operator)")
    waiting.click()
    card = op.locator("#panel .card")
    expect(card.locator("p")).to_have_text("Waiting for staff to approve:")
    expect(card.locator("legend")).to_have_text("refund")
    expect(op.locator("#log .text")).to_have_text([
        "You are the support assistant of a small shop. Look orders up, refund them when "
        "asked (staff approve each refund), and hand the conversation to a person when the "
        "customer asks for one or you cannot help.", "Please refund order A1"])
    card.get_by_role("button", name="Approve").click()
    refunded = "Refunded 25.00 EUR for a kettle (order A1)."
    expect(op.locator("#log .text").last).to_have_text(refunded)
    expect(waiting).to_have_count(0)

    # The customer's page learns it by itself.
    expect(replies).to_have_text([refunded])
    expect(me.locator("details.tool summary")).to_have_text("Tool: refund (done)")
    expect(panel).to_have_count(0)

    # A handoff: the customer's messages wait for a person.
    say(me, "a person, please")
    expect(panel).to_have_text("You are talking with a person.")
    say(me, "My kettle leaks too.")
    expect(me.locator("#log .msg.user .body")).to_have_text(
        ["Please refund order A1", "a person, please", "My kettle leaks too."])
    expect(replies).to_have_text([refunded])  # no model answered it

    handed = op.locator("#operator a")
    expect(handed).to_have_count(1)
    expect(handed).to_contain_text("ann · handed off")
    handed.click()
    expect(op.locator("#panel .card p")).to_have_text(
        "Handed off to a person: the customer asked for a person. The customer sees your "
        "replies with your name.")
    expect(op.locator("#log .text").last).to_have_text("My kettle leaks too.")
    reply = op.get_by_label("Reply to the customer")
    reply.fill("I am sending you a new kettle today.")
    reply.press("Enter")
    expect(op.locator("#log .who").last).to_have_text("olga (staff)")

    staff_reply = me.locator("#log .msg.assistant").last
    expect(staff_reply.locator(".who")).to_have_text("olga")
    expect(staff_reply.locator(".body")).to_have_text("I am sending you a new kettle today.")
    expect(staff_reply.locator(".fb")).to_have_count(0)  # thumbs rate the bot, not staff
    if shots:
        draw(browser, me, op, shots)

    # Hand-back: the bot goes on, and saw what was said during the handoff.
    op.get_by_role("button", name="Hand back to the bot").click()
    expect(handed).to_have_count(0)
    expect(panel).to_have_text("The assistant is back: it answers your next message.")
    say(me, "thanks")
    expect(replies.last).to_have_text(
        "I'm back. olga told you: 'I am sending you a new kettle today.'")
    expect(panel).to_have_count(0)
    customer.close()
    staff.close()


def draw(browser: Browser, me: Page, op: Page, shots: Path) -> None:
    """The customer's and the operator's views during the handoff, and the customer's at
    phone width with the conversation list open."""
    me.screenshot(path=str(shots / "customer.png"))
    op.locator("#reply").fill("Anything else I can do?")
    op.evaluate("document.querySelector('main').scrollTop = 1e6")
    op.screenshot(path=str(shots / "operator.png"))
    op.locator("#reply").fill("")
    phone = Person(browser, me.url, "t-ann", viewport={"width": 360, "height": 720},
                   is_mobile=True, reduced_motion="reduce")  # the drawer at once
    expect(phone.page.locator("#log .msg.assistant .who")).to_have_text("olga")
    phone.page.get_by_role("button", name="Conversations").click()
    expect(phone.page.locator("#side")).to_be_visible()
    phone.page.screenshot(path=str(shots / "customer-phone.png"))
    phone.close()


def test_a_refund_approved_by_staff_then_a_handoff(browser: Browser, served: Served) -> None:
    story(browser, served, None)


def redraw_screenshots() -> None:  # pragma: no cover - run by hand
    """docs/images/customer.png and operator.png, from the story above on a fresh store."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="staff-shots-"))
    s = served_with_tokens(BOT, folder, TOKENS)
    try:
        with sync_api.sync_playwright() as p:
            b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            IMAGES.mkdir(exist_ok=True)
            story(b, s, IMAGES)
            b.close()
    finally:
        s.stop()


if __name__ == "__main__":
    redraw_screenshots()
