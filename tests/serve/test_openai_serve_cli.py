"""`convo serve` answers as a model (API.md §25): its name (``--model-name``, else the bot
file's ``title``, else the file's stem), and a conversation started over
``/v1/chat/completions`` goes on over the JSON API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai
from serve_kit import ROOT, Served

GREETER = str(ROOT / "tests" / "serve_fixtures" / "greeting_bot.py")


def test_the_model_is_named_by_the_flag_else_the_title(tmp_path: Path) -> None:
    for options, name in ((("--model-name", "support-bot"), "support-bot"), ((), "Greeter")):
        server = Served(GREETER, tmp_path, "--store", "memory", *options)
        try:
            with openai.OpenAI(base_url=f"{server.url}/v1", api_key="-",
                               max_retries=0) as bot:
                assert [m.id for m in bot.models.list()] == [name]
        finally:
            server.stop()


def test_a_conversation_started_over_v1_goes_on_over_the_json_api(tmp_path: Path) -> None:
    bot_file = tmp_path / "helpdesk.py"
    bot_file.write_text(Path(GREETER).read_text().replace('title = "Greeter"\n', ""))
    server = Served(str(bot_file), tmp_path, "--store", f"sqlite:///{tmp_path / 'c.db'}")
    try:
        with openai.OpenAI(base_url=f"{server.url}/v1", api_key="-", max_retries=0) as bot:
            assert [m.id for m in bot.models.list()] == ["helpdesk"]
            raw = bot.chat.completions.with_raw_response.create(
                model="helpdesk", messages=[{"role": "user", "content": "hi"}])
        conversation = raw.headers["X-Convo-Conversation"]
        assert raw.parse().choices[0].message.content == "You said 'hi'"
        native = server.client.post(f"/api/conversations/{conversation}/messages",
                                    json={"content": "and now?"})
        listed = server.client.get("/api/conversations").json()["conversations"]
    finally:
        server.stop()
    assert native.status_code == 200
    assert [(m["role"], m["content"]) for m in native.json()["messages"]] == [
        ("assistant", "Hello! What can I do for you?"), ("user", "hi"),
        ("assistant", "You said 'hi'"), ("user", "and now?"),
        ("assistant", "You said 'and now?'")]
    assert [c["id"] for c in listed] == [conversation]  # the page's list shows it


def test_a_conversation_started_over_v1_shows_and_goes_on_in_the_page(
        tmp_path: Path, browser: Any) -> None:
    from playwright.sync_api import expect

    server = Served(GREETER, tmp_path, "--store", "memory")
    try:
        with openai.OpenAI(base_url=f"{server.url}/v1", api_key="-", max_retries=0) as bot:
            raw = bot.chat.completions.with_raw_response.create(
                model="Greeter", messages=[{"role": "user", "content": "hi"}])
        conversation = raw.headers["X-Convo-Conversation"]
        context = browser.new_context()
        errors: list[str] = []
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{server.url}/?c={conversation}")
        expect(page.locator("#log .msg.user .body")).to_have_text(["hi"])
        page.locator("#box").fill("from the page")
        page.locator("#box").press("Enter")
        expect(page.locator("#log .msg.user .body")).to_have_text(["hi", "from the page"])
        expect(page.locator("#log .msg.assistant .body").last).to_have_text(
            "You said 'from the page'")
        context.close()
        stored = server.client.get(f"/api/conversations/{conversation}").json()
    finally:
        server.stop()
    assert errors == []
    assert [m["content"] for m in stored["messages"]][-2:] == [
        "from the page", "You said 'from the page'"]
