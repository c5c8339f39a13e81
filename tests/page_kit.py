"""Steps on convo's own pages shared by the browser tests of several folders (e2e/ and
serve/; a folder's own page steps stay in its kit): ``sign_in_at_the_prompt``, the sign-in
dialog that asks for a token (a wrong one refused first, if the test says so).

Import it after ``pytest.importorskip("playwright.sync_api")``: it needs Playwright."""

from __future__ import annotations

from playwright.sync_api import Page, expect


def sign_in_at_the_prompt(page: Page, prompt: str, token: str, *,
                          refused: str | None = None) -> None:
    """The token box named ``prompt`` has the focus; ``refused`` (if given) is sent first
    and refused with the page's words, and may be typed over; then ``token`` is sent (the
    caller checks what it opened)."""
    box = page.get_by_role("textbox", name=prompt)
    expect(box).to_be_focused()
    if refused is not None:
        box.fill(refused)
        box.press("Enter")
        expect(page.locator("#tokerr")).to_have_text("That token was not accepted; try again.")
    box.fill(token)
    box.press("Enter")
